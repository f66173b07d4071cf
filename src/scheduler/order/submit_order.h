// SubmitOrder: first come, first served (submit time, then id). Used by the
// fifo and fifo-skip baselines.
#pragma once

#include "scheduler/order/queue_order.h"

namespace muster::scheduler {

class SubmitOrder final : public QueueOrder {
 public:
  std::string_view name() const override { return "submit"; }
  int64_t Key(const core::PendingJob&, const core::ClusterSnapshot&, const PriorityWeights&) const override {
    return 0;  // the tie-break (submit time, id) is the order
  }
};

}  // namespace muster::scheduler
