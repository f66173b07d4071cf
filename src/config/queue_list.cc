#include "config/queue_list.h"

#include "common/message_text.h"
#include "config/yaml_fields.h"

#include <map>

namespace muster::config {
namespace {

// A GPU count for every type together, or counts by GPU type.
Status ReadCounts(const YAML::Node& v, const std::string& path, std::map<std::string, int64_t>& out) {
  if (!v) return Status::Ok();
  if (v.IsScalar()) {
    ASSIGN_OR_RETURN(out["*"], Int(v, path, 0, 100'000'000));
    return Status::Ok();
  }
  if (!v.IsMap()) return InvalidArgument("must be a GPU count or a mapping of GPU type to count", path);
  for (const auto& kv : v) {
    if (!kv.first.IsScalar()) return InvalidArgument("keys must be GPU type names", path);
    const std::string type = kv.first.Scalar();
    ASSIGN_OR_RETURN(out[type], Int(kv.second, ChildPath(path, type), 0, 100'000'000));
  }
  return Status::Ok();
}

// `key` below `at`, or `key` alone at the top.
std::string Under(const std::string& at, std::string_view key) {
  return at.empty() ? std::string(key) : ChildPath(at, key);
}

}  // namespace

StatusOr<QueueEntry> ReadQueue(const YAML::Node& q, const std::string& at) {
  if (!q.IsMap()) return InvalidArgument("must be a mapping {name, parent, guarantee, limit, share}", at);
  RETURN_IF_ERROR(CheckKeys(q, {"name", "parent", "guarantee", "limit", "share"}, at));
  QueueEntry e;
  core::QueueConfig& qc = e.quota;
  if (!q["name"]) return InvalidArgument("is required", Under(at, "name"));
  ASSIGN_OR_RETURN(qc.name, Str(q["name"], Under(at, "name")));
  if (q["parent"]) {
    ASSIGN_OR_RETURN(qc.parent, Str(q["parent"], Under(at, "parent")));
  }
  RETURN_IF_ERROR(ReadCounts(q["guarantee"], Under(at, "guarantee"), qc.guarantee));
  RETURN_IF_ERROR(ReadCounts(q["limit"], Under(at, "limit"), qc.limit));
  for (const auto& [type, g] : qc.guarantee) {
    auto l = qc.limit.find(type);
    if (l != qc.limit.end() && g > l->second) {
      return InvalidArgument("guarantee " + std::to_string(g) + " is above the limit " + std::to_string(l->second) +
                                 (type == "*" ? "" : " for " + type),
                             Under(at, "guarantee"));
    }
  }
  if (q["share"]) {
    ASSIGN_OR_RETURN(int64_t share, Int(q["share"], Under(at, "share"), 1, 1'000'000));
    e.share = share;
  }
  return e;
}

Status CheckQueueParents(const std::vector<core::QueueConfig>& quotas,
                         const std::function<std::string(size_t)>& path_of) {
  std::map<std::string, std::string> parent_of;
  for (const core::QueueConfig& q : quotas) parent_of[q.name] = q.parent;
  for (size_t i = 0; i < quotas.size(); ++i) {
    std::string p = quotas[i].parent;
    for (size_t depth = 0; !p.empty(); ++depth) {
      auto it = parent_of.find(p);
      if (it == parent_of.end()) return InvalidArgument(QuoteForMessage(p) + " is not a queue listed here", path_of(i));
      if (p == quotas[i].name || depth > quotas.size()) {
        return InvalidArgument("queue " + QuoteForMessage(quotas[i].name) + " would be nested under itself",
                               path_of(i));
      }
      p = it->second;
    }
  }
  return Status::Ok();
}

Status ReadQueueList(const YAML::Node& node, const std::string& path, std::vector<core::QueueConfig>& quotas,
                     std::map<std::string, double>& shares) {
  if (!node.IsSequence()) return InvalidArgument("must be a list of {name, guarantee, limit, share}", path);
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(QueueEntry e, ReadQueue(node[i], at));
    for (const core::QueueConfig& c : quotas) {
      if (c.name == e.quota.name) {
        return InvalidArgument("queue " + QuoteForMessage(e.quota.name) + " is listed twice", at + ".name");
      }
    }
    if (e.share) shares[e.quota.name] = static_cast<double>(*e.share);
    quotas.push_back(std::move(e.quota));
  }
  return CheckQueueParents(quotas, [&](size_t i) { return path + "[" + std::to_string(i) + "].parent"; });
}

}  // namespace muster::config
