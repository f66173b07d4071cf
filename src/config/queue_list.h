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

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/cluster_state.h"

namespace muster::config {

// Reads `node` (the `queues` list) at `path`, appending each queue's quota to
// `quotas` and its share (where given) to `shares`. Errors name the key.
Status ReadQueueList(const YAML::Node& node, const std::string& path, std::vector<core::QueueConfig>& quotas,
                     std::map<std::string, double>& shares);

}  // namespace muster::config
