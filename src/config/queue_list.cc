#include "config/queue_list.h"

#include "common/message_text.h"
#include "config/yaml_fields.h"

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

}  // namespace

Status ReadQueueList(const YAML::Node& node, const std::string& path, std::vector<core::QueueConfig>& quotas,
                     std::map<std::string, double>& shares) {
  if (!node.IsSequence()) return InvalidArgument("must be a list of {name, guarantee, limit, share}", path);
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const YAML::Node q = node[i];
    if (!q.IsMap()) return InvalidArgument("must be a mapping {name, guarantee, limit, share}", at);
    RETURN_IF_ERROR(CheckKeys(q, {"name", "parent", "guarantee", "limit", "share"}, at));
    core::QueueConfig qc;
    if (!q["name"]) return InvalidArgument("is required", at + ".name");
    ASSIGN_OR_RETURN(qc.name, Str(q["name"], at + ".name"));
    if (q["parent"]) {
      ASSIGN_OR_RETURN(qc.parent, Str(q["parent"], at + ".parent"));
    }
    for (const core::QueueConfig& c : quotas) {
      if (c.name == qc.name) return InvalidArgument("queue " + QuoteForMessage(qc.name) + " is listed twice", at + ".name");
    }
    RETURN_IF_ERROR(ReadCounts(q["guarantee"], at + ".guarantee", qc.guarantee));
    RETURN_IF_ERROR(ReadCounts(q["limit"], at + ".limit", qc.limit));
    for (const auto& [type, g] : qc.guarantee) {
      auto l = qc.limit.find(type);
      if (l != qc.limit.end() && g > l->second) {
        return InvalidArgument("guarantee " + std::to_string(g) + " is above the limit " + std::to_string(l->second) +
                                   (type == "*" ? "" : " for " + type),
                               at + ".guarantee");
      }
    }
    if (q["share"]) {
      ASSIGN_OR_RETURN(int64_t share, Int(q["share"], at + ".share", 1, 1'000'000));
      shares[qc.name] = static_cast<double>(share);
    }
    quotas.push_back(std::move(qc));
  }
  // Parents: listed queues, and no queue its own ancestor.
  std::map<std::string, std::string> parent_of;
  for (const core::QueueConfig& q : quotas) parent_of[q.name] = q.parent;
  for (size_t i = 0; i < quotas.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "].parent";
    std::string p = quotas[i].parent;
    for (size_t depth = 0; !p.empty(); ++depth) {
      auto it = parent_of.find(p);
      if (it == parent_of.end()) return InvalidArgument(QuoteForMessage(p) + " is not a queue listed here", at);
      if (p == quotas[i].name || depth > quotas.size()) {
        return InvalidArgument("queue " + QuoteForMessage(quotas[i].name) + " would be nested under itself", at);
      }
      p = it->second;
    }
  }
  return Status::Ok();
}

}  // namespace muster::config
