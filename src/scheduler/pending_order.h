// PendingOrder: hands out the pending jobs of a snapshot in a QueueOrder's
// order, one at a time.
//
// Eager mode sorts everything up front (O(n log n)), for cycles that visit
// every job. Lazy mode builds a heap (O(n)) and pops on demand (O(log n)
// each), so a cycle that stops early after k jobs costs O(n + k log n): with
// 10,000 jobs pending and the cluster full, a cycle need not sort them all.
// Both modes give the same sequence: key, then submit time, then job id.
#pragma once

#include <cstdint>
#include <vector>

#include "core/snapshot.h"
#include "scheduler/order/queue_order.h"

namespace muster::scheduler {

class PendingOrder {
 public:
  PendingOrder(const core::ClusterSnapshot& snap, const QueueOrder& order, const PriorityWeights& weights, bool lazy);

  // The next job's index into snap.pending; false when all were handed out.
  bool Next(int32_t& index);

 private:
  struct Keyed {
    int64_t key;
    int64_t submit_ms;
    core::JobId id;
    int32_t index;
  };
  // "a after b" in the order: the heap's comparison (a max-heap of the reverse).
  static bool After(const Keyed& a, const Keyed& b);

  std::vector<Keyed> items_;
  size_t next_ = 0;  // eager mode
  bool lazy_;
};

}  // namespace muster::scheduler
