// PriorityOrder: highest effective priority first (see priority.h), then
// submit time, then id. Muster's default order.
#pragma once

#include "scheduler/order/queue_order.h"

namespace muster::scheduler {

class PriorityOrder final : public QueueOrder {
 public:
  std::string_view name() const override { return "priority"; }
  int64_t Key(const core::PendingJob& j, const core::ClusterSnapshot& snap,
              const PriorityWeights& weights) const override {
    return -ComputePriority(j, snap, weights).total();
  }
};

}  // namespace muster::scheduler
