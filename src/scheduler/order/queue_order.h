// QueueOrder: the extension point that decides in which order pending jobs
// are considered in a cycle. Implementations live beside this file, one per
// file, and are registered in scheduler/policy_registry.cc.
//
// Contract: Order() fills `order` with every index of snap.pending exactly
// once. It is deterministic: equal keys are broken by submit time, then job
// id. It reads the snapshot only.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "scheduler/priority.h"

namespace muster::scheduler {

class QueueOrder {
 public:
  virtual ~QueueOrder() = default;
  virtual std::string_view name() const = 0;
  virtual void Order(const core::ClusterSnapshot& snap, const PriorityWeights& weights,
                     std::vector<int32_t>& order) const = 0;
};

// Sorts `order` (indexes into snap.pending) by key(job) ascending, then
// submit time, then id. Shared by the implementations.
template <typename KeyFn>
void SortPendingBy(const core::ClusterSnapshot& snap, std::vector<int32_t>& order, KeyFn key);

}  // namespace muster::scheduler

#include "scheduler/order/queue_order_inl.h"
