// The node list shared by the simulator's cluster file and the server's
// configuration: `nodeGroups` (many alike nodes with generated names and
// topology) and `nodes` (explicit nodes).
//
//   nodeGroups:
//     - count: 80          # required
//       gpus: 8            # required, per node
//       gpuType: V100      # default "gpu"
//       cpus: 64           # default 0: not modelled
//       memory: 512Gi      # default 0: not modelled
//       nodesPerLeaf: 16   # default: the whole group under one leaf
//       leavesPerSpine: 4  # default: all its leaves under one spine
//       prefix: v100-      # names are prefix + index; default "<gpuType>-",
//                          # "<gpuType>-g<group>-" for groups after the first
//       spot: true         # default false: capacity the cloud may reclaim
//       pool: reserved-east  # the pool its price is by (server `pools:`); "spot" is spot: true
//       features: [a100, gpu80]  # labels jobs may require (sbatch -C)
//   nodes:
//     - {name: a1, gpus: 8, gpuType: H100, cpus: 64, memory: 512Gi, leaf: l1, spine: s1, spot: false}
//
// Spot nodes have the node feature "spot", every other node "on-demand",
// which a job that must not run on spot capacity requires (core/node.h).
// A named pool is a feature too, the node's first.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "core/node.h"

namespace muster::config {

// The most nodes a node list may describe, all groups and nodes together
// (a bound, so that a typo such as `count: 80000000` is an error, not an
// allocation that fails).
inline constexpr int64_t kMaxNodes = 1'000'000;
inline constexpr int64_t kMaxGpusPerNode = 1024;

struct NodeList {
  std::vector<core::NodeSpec> nodes;
  std::string summary;  // "80 nodes x 8 GPU (V100), 16 nodes per leaf"
};

// Reads `nodeGroups` and `nodes` of `map` (other keys are the caller's).
// `path` prefixes error fields ("cluster" -> "cluster.nodeGroups[0].gpus").
Status ReadNodeList(const YAML::Node& map, const std::string& path, NodeList& out);

struct NodeGroup {
  int64_t count = 0;
  int64_t gpus = 0;
  std::string gpu_type = "gpu";
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  int64_t nodes_per_leaf = 0;
  int64_t leaves_per_spine = 0;
  std::string prefix;
  bool spot = false;
  std::vector<std::string> features;
};
// Expands a group into nodes (names, leaves, spines) and describes it.
void AddNodeGroup(const NodeGroup& g, int group_index, NodeList& out);

}  // namespace muster::config
