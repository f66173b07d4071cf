// SubmitOrder: first come, first served (submit time, then id). Used by the
// fifo and fifo-skip baselines.
#pragma once

#include "scheduler/order/queue_order.h"

namespace muster::scheduler {

class SubmitOrder final : public QueueOrder {
 public:
  std::string_view name() const override { return "submit"; }
  void Order(const core::ClusterSnapshot& snap, const PriorityWeights&,
             std::vector<int32_t>& order) const override {
    SortPendingBy(snap, order, [](const core::PendingJob&) { return int64_t{0}; });
  }
};

}  // namespace muster::scheduler
