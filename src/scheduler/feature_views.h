// FeatureViews: a FreeIndex of every schedulable node, and beside it one per
// set of node features that some job requires, over only the nodes that have
// them all (a container job's view holds the nodes that run containers).
//
// Placement, the backfill plan and preemption then work on a job's view
// exactly as on the whole index, so a job is never placed, promised or given
// victims on a node it cannot run on. Views are built on first use, from
// what the whole index holds at that moment, and every later change goes to
// the whole index and to each view that holds the node. A job that requires
// nothing, and a set that every schedulable node has, use the whole index:
// the common cluster pays for nothing.
//
// Invariant: a node indexed in a view is indexed in all() with the same
// availability.
//
// Thread-safety: none; owned by one cycle (or, for capacity, the scheduler).
#pragma once

#include <map>
#include <optional>
#include <span>

#include "core/node.h"
#include "scheduler/free_index.h"

namespace muster::scheduler {

class FeatureViews {
 public:
  // As FreeIndex::Build; drops every view.
  void Build(std::span<const core::Node> nodes, int32_t num_types, int32_t num_leaves,
             std::span<const int32_t> leaf_spine, bool use_capacity);

  // Sets what node `n` may still give, in every index holding it.
  void SetAvail(NodeIndex n, const Resources& avail);
  void Take(NodeIndex n, const Resources& r) { SetAvail(n, all_.avail(n) - r); }
  // Stops indexing node `n` in every index (nothing there is to be had).
  void Drop(NodeIndex n);

  const FreeIndex& all() const { return all_; }
  // The index over the nodes having `required` (all() for 0). `nodes` are
  // the nodes Build was given (their features).
  const FreeIndex& For(core::FeatureMask required, std::span<const core::Node> nodes);

  int32_t num_views() const { return static_cast<int32_t>(views_.size()); }

 private:
  FreeIndex all_;
  // By required set; nullopt when every indexed node has the set (all_ is
  // its view). A map: references to views stay valid as views are added.
  std::map<core::FeatureMask, std::optional<FreeIndex>> views_;
};

}  // namespace muster::scheduler
