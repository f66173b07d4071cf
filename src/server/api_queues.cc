#include "server/api_queues.h"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <set>

#include "common/message_text.h"
#include "common/rfc3339.h"
#include "server/http_api_util.h"

namespace muster::server {

using nlohmann::json;

namespace {

// The queues the file and `api` make, by name: parent of each (file first).
std::map<std::string, std::string> ParentsOf(const std::vector<core::QueueConfig>& file,
                                             const std::map<std::string, ApiQueue>& api) {
  std::map<std::string, std::string> out;
  for (const core::QueueConfig& q : file) out[q.name] = q.parent;
  for (const auto& [name, q] : api) out.emplace(name, q.queue.quota.parent);
  return out;
}

QueuesInForce MergeQueues(const std::vector<core::QueueConfig>& file, const std::map<std::string, double>& file_shares,
                          const std::map<std::string, ApiQueue>& api) {
  QueuesInForce out;
  out.quotas = file;
  out.shares = file_shares;
  for (const core::QueueConfig& q : file) out.source[q.name] = "file";
  std::vector<const ApiQueue*> waiting;
  for (const auto& [name, q] : api) {
    if (out.source.count(name)) {
      out.shadowed.push_back(name);
    } else {
      waiting.push_back(&q);
    }
  }
  // Parents first: each pass adds those whose parent is in force.
  for (bool added = true; added && !waiting.empty();) {
    added = false;
    for (auto it = waiting.begin(); it != waiting.end();) {
      const config::QueueEntry& e = (*it)->queue;
      if (!e.quota.parent.empty() && !out.source.count(e.quota.parent)) {
        ++it;
        continue;
      }
      out.quotas.push_back(e.quota);
      if (e.share) out.shares[e.quota.name] = static_cast<double>(*e.share);
      out.source[e.quota.name] = "api";
      it = waiting.erase(it);
      added = true;
    }
  }
  for (const ApiQueue* q : waiting) {
    out.left_out.push_back(q->queue.quota.name + " (its parent " + QuoteForMessage(q->queue.quota.parent) +
                           " is not a queue in force)");
  }
  return out;
}

}  // namespace

StatusOr<config::QueueEntry> ApiQueueFromJson(const json& body, const std::string& path_name) {
  if (!body.is_object())
    return InvalidArgument("must be a JSON object {name, parent, guarantee, limit, share}", "body");
  json named = body;
  if (!path_name.empty()) {
    if (named.contains("name") && named["name"] != path_name) {
      return InvalidArgument("must be the queue the path names, " + QuoteForMessage(path_name), "name");
    }
    named["name"] = path_name;
  }
  if (!named.contains("name") || !named["name"].is_string() || !ValidName(named["name"].get<std::string>(), 128)) {
    return InvalidArgument("must be a name of 1 to 128 characters of [A-Za-z0-9._-]", "name");
  }
  if (named.contains("parent") &&
      (!named["parent"].is_string() || !ValidName(named["parent"].get<std::string>(), 128))) {
    return InvalidArgument("must be a queue's name, 1 to 128 characters of [A-Za-z0-9._-]", "parent");
  }
  for (const char* key : {"guarantee", "limit"}) {
    if (!named.contains(key)) continue;
    const json& v = named[key];
    bool ok = v.is_number_integer();
    if (v.is_object()) {
      ok = true;
      for (const auto& [type, n] : v.items())
        ok = ok && n.is_number_integer() && ValidName(type == "*" ? "x" : type, 64);
    }
    if (!ok) return InvalidArgument("must be a GPU count, or an object of GPU type (or \"*\") to count", key);
  }
  if (named.contains("share") && !named["share"].is_number_integer()) {
    return InvalidArgument("must be an integer from 1 to 1000000", "share");
  }
  YAML::Node node;
  try {
    node = YAML::Load(named.dump());
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("cannot be read: ") + e.what(), "body");
  }
  return config::ReadQueue(node, "");
}

json QueueEntryJson(const config::QueueEntry& q) {
  json out = {{"name", q.quota.name}};
  if (!q.quota.parent.empty()) out["parent"] = q.quota.parent;
  if (!q.quota.guarantee.empty()) out["guarantee"] = q.quota.guarantee;
  if (!q.quota.limit.empty()) out["limit"] = q.quota.limit;
  if (q.share) out["share"] = *q.share;
  return out;
}

Status ApiQueues::Load(const std::string& text) {
  queues_.clear();
  if (text.empty()) return Status::Ok();
  const json doc = json::parse(text, nullptr, false);
  if (!doc.is_array()) return DataLoss("the API's queues (meta apiQueues) are not a JSON list");
  for (const json& item : doc) {
    if (!item.is_object()) return DataLoss("an API queue (meta apiQueues) is not an object");
    auto e = ApiQueueFromJson(item.value("queue", json()), "");
    if (!e.ok()) return DataLoss("an API queue (meta apiQueues) is damaged: " + e.status().ToString());
    ApiQueue q{std::move(*e), item.value("changedBy", ""), Time::Zero()};
    if (item.contains("changedAt") && item["changedAt"].is_string()) {
      if (auto t = ParseRfc3339Utc(item["changedAt"].get<std::string>())) q.changed_at = *t;
    }
    const std::string name = q.queue.quota.name;
    queues_[name] = std::move(q);
  }
  return Status::Ok();
}

std::string ApiQueues::Dump() const {
  json out = json::array();
  for (const auto& [name, q] : queues_) {
    out.push_back({{"queue", QueueEntryJson(q.queue)},
                   {"changedBy", q.changed_by},
                   {"changedAt", FormatRfc3339Utc(q.changed_at)}});
  }
  return out.dump();
}

const ApiQueue* ApiQueues::Find(const std::string& name) const {
  auto it = queues_.find(name);
  return it == queues_.end() ? nullptr : &it->second;
}

Status ApiQueues::CheckPut(const config::QueueEntry& q, const std::vector<core::QueueConfig>& file) const {
  std::map<std::string, ApiQueue> next = queues_;
  next[q.quota.name] = ApiQueue{q, "", Time::Zero()};
  const std::map<std::string, std::string> parent_of = ParentsOf(file, next);
  std::string p = q.quota.parent;
  for (size_t depth = 0; !p.empty(); ++depth) {
    auto it = parent_of.find(p);
    if (it == parent_of.end()) return InvalidArgument(QuoteForMessage(p) + " is not a queue", "parent");
    if (p == q.quota.name || depth > parent_of.size()) {
      return InvalidArgument("queue " + QuoteForMessage(q.quota.name) + " would be nested under itself", "parent");
    }
    p = it->second;
  }
  return Status::Ok();
}

void ApiQueues::Put(ApiQueue q) {
  const std::string name = q.queue.quota.name;
  queues_[name] = std::move(q);
}

Status ApiQueues::CheckRemove(const std::string& name, const std::vector<core::QueueConfig>& file) const {
  for (const auto& [child, parent] : ParentsOf(file, queues_)) {
    if (parent == name && child != name) {
      return FailedPrecondition("queue " + QuoteForMessage(child) + " is nested under " + QuoteForMessage(name) +
                                "; delete it or change its parent first");
    }
  }
  return Status::Ok();
}

bool ApiQueues::Remove(const std::string& name) { return queues_.erase(name) > 0; }

QueuesInForce ApiQueues::Merge(const std::vector<core::QueueConfig>& file,
                               const std::map<std::string, double>& file_shares) const {
  return MergeQueues(file, file_shares, queues_);
}

}  // namespace muster::server
