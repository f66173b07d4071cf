// Queues made and changed through the API (POST /v1/queues, PUT and
// DELETE /v1/queues/NAME, admins only), beside the configuration file's.
//
// A queue as the API takes it, the same fields as a `queues` entry of the
// file (config/queue_list.h):
//   {"name": "vision",                # 1..128 of [A-Za-z0-9._-]
//    "parent": "research",            # nested under this queue (file or API)
//    "guarantee": {"H100": 8},        # or a count for every type together
//    "limit": 16,
//    "share": 2}                      # fair-share share (default 1)
//
// The file's queues come first: a name the file defines is the file's, the
// API may not create, change or delete it (FailedPrecondition naming the
// file), and should a reload bring the file a queue the API made, the
// file's definition is in force and the API's is kept, unused, until the
// file drops it. An API queue whose parent is no longer a queue in force
// is left out, and logged, until it is again.
//
// All of them are one meta document in the store ("apiQueues"), written
// with each change, so they survive restarts and a standby taking over.
//
// Thread-safety: none; the control loop owns it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "common/time.h"
#include "config/queue_list.h"
#include "core/cluster_state.h"

namespace muster::server {

struct ApiQueue {
  config::QueueEntry queue;
  std::string changed_by;  // who last created or changed it
  Time changed_at;
};

// The queue a request body describes; InvalidArgument naming the field.
// `path_name`: the name in the path (PUT), which a body's name must equal;
// empty for POST, whose body names it.
StatusOr<config::QueueEntry> ApiQueueFromJson(const nlohmann::json& body, const std::string& path_name);
nlohmann::json QueueEntryJson(const config::QueueEntry& q);

// The queues in force: the file's, then the API's the file does not name.
struct QueuesInForce {
  std::vector<core::QueueConfig> quotas;
  std::map<std::string, double> shares;
  std::map<std::string, std::string> source;  // queue -> "file" or "api"
  std::vector<std::string> shadowed;          // API queues the file names too
  std::vector<std::string> left_out;          // API queues whose parent is not in force: "NAME (why)"
};

class ApiQueues {
 public:
  static constexpr const char* kMetaKey = "apiQueues";

  // Loads the store's document ("" or absent: none). DataLoss when damaged.
  Status Load(const std::string& text);
  std::string Dump() const;

  const std::map<std::string, ApiQueue>& all() const { return queues_; }
  const ApiQueue* Find(const std::string& name) const;

  // Whether `q` may be put, beside the file's queues `file`: its parent is
  // a queue in force and no queue ends up nested under itself
  // (InvalidArgument, "parent").
  Status CheckPut(const config::QueueEntry& q, const std::vector<core::QueueConfig>& file) const;
  void Put(ApiQueue q);
  // Whether it may go: no queue in force is nested under it
  // (FailedPrecondition naming the child).
  Status CheckRemove(const std::string& name, const std::vector<core::QueueConfig>& file) const;
  bool Remove(const std::string& name);

  QueuesInForce Merge(const std::vector<core::QueueConfig>& file,
                      const std::map<std::string, double>& file_shares) const;

 private:
  std::map<std::string, ApiQueue> queues_;
};

}  // namespace muster::server
