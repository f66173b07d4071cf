// Placement: where a whole gang fits, by topology first and packing second.
//
// Algorithm (for a gang of R replicas of r GPUs each, one GPU type):
//  1. One node: the fullest node that can hold all R replicas (best fit:
//     the smallest free block >= R*r). A job that fits one node never spans.
//  2. One leaf switch: among leaves that can hold R replicas, the one that
//     needs the fewest nodes, then the fullest leaf (least free GPUs), then the
//     lowest id. Inside it, take the nodes with the most free GPUs first and
//     finish with the fullest node that covers the remainder.
//  3. One spine: the spine whose leaves cover R with the fewest leaves, then
//     the fullest; leaves filled largest first as in step 2.
//  4. Anywhere: leaves across the cluster, largest first.
// The job's TopologyScope stops the search after step 1 (node), 2 (leaf) or
// 3 (spine). Without a GPU type every type is tried in id order, and a gang
// always stays on one type. Jobs without GPUs go to the nodes with the fewest
// free GPUs that have the CPUs and memory, so GPUs stay free for GPU jobs.
//
// Example: 4 nodes x 8 GPUs under leaf A with 8, 8, 3, 0 free, and leaf B
// with 8, 8, 8, 8 free. A 16-GPU job (2 x 8) goes to leaf A (2 nodes, and A
// is fuller); a 3-GPU job goes to A's third node (best fit).
//
// Invariants: a returned placement puts exactly R replicas, each within one
// node's availability as recorded in the index; nothing is returned partial.
#pragma once

#include <optional>
#include <vector>

#include "core/job.h"
#include "core/snapshot.h"
#include "scheduler/free_index.h"

namespace muster::scheduler {

struct Shape {
  int32_t replicas = 1;
  Resources per_replica;
  int32_t gpu_type = core::kAnyGpuType;
  core::TopologyScope scope = core::TopologyScope::kAny;
  // Node features every node must have. FindPlacement does not read it:
  // the caller passes an index over such nodes (feature_views.h).
  core::FeatureMask features = 0;
  // Each replica on a node of its own (JobSpec::one_per_node).
  bool one_per_node = false;
  // Each replica on an idle node, holding all of it (JobSpec::exclusive);
  // its allocation is the node's capacity. Set with one_per_node.
  bool exclusive = false;

  bool operator==(const Shape&) const = default;
};

// Where every replica of `shape` fits in `index`, or nullopt. Read-only.
std::optional<std::vector<core::Allocation>> FindPlacement(const FreeIndex& index, const Shape& shape);

// A cheap test after node `grown` gained capacity: could `shape` fit now
// where it did not before? False means it still cannot fit; true means
// FindPlacement is worth calling.
bool MayFitAfterGrowth(const FreeIndex& index, const Shape& shape, NodeIndex grown);

}  // namespace muster::scheduler
