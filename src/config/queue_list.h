// The queue list shared by the server's configuration and the simulator's
// cluster file: each queue's quota and fair-share share.
//
//   queues:
//     - name: research                       # required, unique
//       parent: ml-org                       # nested under this queue (listed here too)
//       guarantee: {H100: 16}                # GPUs it may reclaim from borrowers;
//                                            # a count is for every type together ("*")
//       limit: {H100: 32, "*": 48}           # the most it may hold
//       share: 3                             # fair-share share (default 1)
//
// A guarantee above the limit of the same key is an error, and so is a
// parent that is not listed or a queue nested under itself.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/cluster_state.h"

namespace muster::config {

// One queue of the list: its quota, and its share when given.
struct QueueEntry {
  core::QueueConfig quota;
  std::optional<int64_t> share;
};

// Reads one queue's mapping at `at` ("" for a queue on its own, as the API
// takes it: errors then name "limit.H100"). Its parent is not checked.
StatusOr<QueueEntry> ReadQueue(const YAML::Node& node, const std::string& at);

// Every parent is one of `quotas` and no queue is nested under itself;
// errors name `path_of(i)`, the parent field of the i-th queue.
Status CheckQueueParents(const std::vector<core::QueueConfig>& quotas,
                         const std::function<std::string(size_t)>& path_of);

// Reads `node` (the `queues` list) at `path`, appending each queue's quota to
// `quotas` and its share (where given) to `shares`. Errors name the key.
Status ReadQueueList(const YAML::Node& node, const std::string& path, std::vector<core::QueueConfig>& quotas,
                     std::map<std::string, double>& shares);

}  // namespace muster::config
