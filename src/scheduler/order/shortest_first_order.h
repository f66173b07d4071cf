// ShortestFirstOrder: shortest known duration first (the SJF baseline, which
// is given each job's true duration as an oracle would). Jobs with unknown
// duration go last, in submit order.
#pragma once

#include <limits>

#include "scheduler/order/queue_order.h"

namespace muster::scheduler {

class ShortestFirstOrder final : public QueueOrder {
 public:
  std::string_view name() const override { return "shortest-first"; }
  int64_t Key(const core::PendingJob& j, const core::ClusterSnapshot&, const PriorityWeights&) const override {
    return j.known_duration.is_infinite() ? std::numeric_limits<int64_t>::max() : j.known_duration.millis();
  }
};

}  // namespace muster::scheduler
