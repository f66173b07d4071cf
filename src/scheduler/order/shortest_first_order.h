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
  void Order(const core::ClusterSnapshot& snap, const PriorityWeights&,
             std::vector<int32_t>& order) const override {
    SortPendingBy(snap, order, [](const core::PendingJob& j) {
      return j.known_duration.is_infinite() ? std::numeric_limits<int64_t>::max()
                                            : j.known_duration.millis();
    });
  }
};

}  // namespace muster::scheduler
