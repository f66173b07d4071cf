// The simulated cluster: from a YAML file or from `--nodes COUNTxGPUS`.
//
// YAML (every key optional except count and gpus in a group):
//   nodeGroups:
//     - count: 80          # nodes in the group
//       gpus: 8            # GPUs per node
//       gpuType: V100      # default "gpu"
//       cpus: 64           # default 0: CPUs not modelled
//       memory: 512Gi      # default 0: memory not modelled
//       nodesPerLeaf: 16   # default: all nodes of the group under one leaf
//       leavesPerSpine: 4  # default: all leaves under one spine
//       prefix: v100-      # node names are prefix + index; default "<gpuType>-",
//                          # "<gpuType>-g<group>-" for groups after the first
//   nodes:                 # explicit nodes, for small hand-made clusters
//     - {name: a1, gpus: 8, gpuType: H100, leaf: l1, spine: s1}
// Unknown keys are errors naming the key and suggesting the closest one.
//
// SinglePool() turns any cluster into one node per GPU type holding all its
// GPUs: the "single pool" model of published simulators, where a job needs
// only enough free GPUs in total.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/cluster_state.h"
#include "core/node.h"

namespace muster::sim {

struct ClusterDescription {
  std::vector<core::NodeSpec> nodes;
  std::string summary;  // "80 nodes x 8 GPU (gpu), 16 nodes per leaf"
  // Fair-share shares by queue (tenant) name, from `queues: [{name, share,
  // guarantee, limit}]` (config/queue_list.h);
  // a tenant not listed has share 1.
  std::map<std::string, double> shares;
  // Quotas by queue, from the same list (guarantee, limit).
  std::vector<core::QueueConfig> quotas;

  int64_t total_gpus() const;
  int64_t max_gpus_per_node() const;
};

struct NodeFlags {
  std::string nodes;             // "80x8"
  int64_t nodes_per_leaf = 0;    // 0: one leaf for all
  int64_t leaves_per_spine = 0;  // 0: one spine for all
  std::string gpu_type = "gpu";
};

StatusOr<ClusterDescription> ClusterFromFlags(const NodeFlags& flags);
StatusOr<ClusterDescription> ParseClusterYaml(const std::string& text, const std::string& source);
StatusOr<ClusterDescription> LoadClusterFile(const std::string& path);
ClusterDescription SinglePool(const ClusterDescription& cluster);

}  // namespace muster::sim
