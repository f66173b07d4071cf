// FreeIndex: free capacity of every schedulable node, bucketed by free GPU
// count per GPU type, with the same buckets per leaf switch and per spine.
//
// It answers the placement questions of one cycle without rescanning the
// cluster: "the fullest node with at least g free GPUs of type T" is the first
// non-empty bucket from g upward; "how many replicas of r GPUs fit under leaf
// L" is a sum over that leaf's bucket sizes. Updates are O(1): a node moves
// between buckets by swap-remove.
//
// The scheduler keeps one FreeIndex of what jobs may use now (free capacity
// minus what reservations hold back), builds one over total capacity to tell
// "not now" from "never", and copies one for the backfill plan.
//
// Example: nodes a(8 free), b(3 free), c(3 free) of type H100 under leaf L1.
//   Bucket(H100, 3) = {b, c}; Bucket(H100, 8) = {a}; LeafSlots(H100, L1, r=2)
//   = 4 + 1 + 1 = 6 replicas of 2 GPUs.
//
// Invariants: each indexed node is in exactly one global bucket and one leaf
// bucket, the one of min(avail.gpus, max_f); per-level free sums equal the
// sums of their nodes.
//
// Thread-safety: none; owned by one cycle.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/node.h"
#include "core/resources.h"

namespace muster::scheduler {

using core::NodeIndex;
using core::Resources;

class FreeIndex {
 public:
  struct LeafEntry {
    int32_t leaf = 0;                          // global leaf id
    int32_t spine = 0;                         // local spine index within the type
    std::vector<std::vector<NodeIndex>> by_f;  // nodes by free GPUs
    int64_t free_gpus = 0;
  };
  struct SpineEntry {
    int32_t spine = 0;            // global spine id
    std::vector<int32_t> hist;    // node count by free GPUs
    std::vector<int32_t> leaves;  // local leaf indexes
    int64_t free_gpus = 0;
  };
  struct TypeEntry {
    int32_t max_f = 0;  // largest GPU capacity of a node of this type
    std::vector<std::vector<NodeIndex>> by_f;
    std::vector<LeafEntry> leaves;
    std::vector<SpineEntry> spines;
    std::vector<int32_t> leaf_local;  // global leaf id -> local index or -1
    int64_t free_gpus = 0;
    int64_t nodes = 0;
  };

  // Indexes the schedulable nodes; each gets `use_capacity ? capacity : free`.
  void Build(std::span<const core::Node> nodes, int32_t num_types, int32_t num_leaves,
             std::span<const int32_t> leaf_spine, bool use_capacity);

  // Sets what node `n` may still give. Precondition: n is indexed.
  void SetAvail(NodeIndex n, const Resources& avail);
  void Take(NodeIndex n, const Resources& r) { SetAvail(n, nodes_[n].avail - r); }
  // Stops indexing node `n`: a view over some nodes is a copy with the
  // others dropped (feature_views.h). Precondition: n is indexed.
  void Drop(NodeIndex n);

  size_t num_nodes() const { return nodes_.size(); }
  bool indexed(NodeIndex n) const { return nodes_[n].type >= 0; }
  const Resources& avail(NodeIndex n) const { return nodes_[n].avail; }
  const Resources& capacity(NodeIndex n) const { return nodes_[n].capacity; }
  // Nothing of node `n` is in use or held back.
  bool idle(NodeIndex n) const { return nodes_[n].avail == nodes_[n].capacity; }
  int32_t type_of(NodeIndex n) const { return nodes_[n].type; }
  int32_t local_leaf_of(NodeIndex n) const { return nodes_[n].lleaf; }
  int32_t num_types() const { return static_cast<int32_t>(types_.size()); }
  const TypeEntry& type(int32_t t) const { return types_[t]; }
  // Bumped by every change; lets callers cache derived answers.
  uint64_t version() const { return version_; }

  // The largest free GPU block on one node of type t (0 if none).
  int64_t LargestNodeFree(int32_t t) const;
  // Largest free GPU sum under one leaf of type t. O(leaves).
  int64_t LargestLeafFree(int32_t t) const;
  // Replicas of `r` GPUs (r > 0) that fit by GPU count at each level.
  int64_t GlobalSlots(int32_t t, int64_t r) const;
  int64_t LeafSlots(int32_t t, int32_t lleaf, int64_t r) const;
  int64_t SpineSlots(int32_t t, int32_t lspine, int64_t r) const;

  // Recomputes every bucket and sum from the nodes and compares (tests).
  bool CheckConsistent() const;

 private:
  struct NodeEntry {
    int32_t type = -1;  // -1: not indexed
    int32_t lleaf = 0;
    int32_t key = 0;
    int32_t pos_global = 0;
    int32_t pos_leaf = 0;
    Resources avail;
    Resources capacity;
  };
  void Insert(NodeIndex n);
  void Remove(NodeIndex n);

  std::vector<NodeEntry> nodes_;
  std::vector<TypeEntry> types_;
  uint64_t version_ = 0;
};

}  // namespace muster::scheduler
