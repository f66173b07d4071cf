#include "scheduler/pending_order.h"

#include <algorithm>
#include <tuple>

namespace muster::scheduler {

bool PendingOrder::After(const Keyed& a, const Keyed& b) {
  return std::tie(a.key, a.submit_ms, a.id) > std::tie(b.key, b.submit_ms, b.id);
}

PendingOrder::PendingOrder(const core::ClusterSnapshot& snap, const QueueOrder& order, const PriorityWeights& weights,
                           bool lazy)
    : lazy_(lazy) {
  items_.reserve(snap.pending.size());
  for (size_t i = 0; i < snap.pending.size(); ++i) {
    const core::PendingJob& j = snap.pending[i];
    items_.push_back({order.Key(j, snap, weights), j.submit_time.millis(), j.id, static_cast<int32_t>(i)});
  }
  if (lazy_) {
    std::make_heap(items_.begin(), items_.end(), After);
  } else {
    std::sort(items_.begin(), items_.end(), [](const Keyed& a, const Keyed& b) { return After(b, a); });
  }
}

bool PendingOrder::Next(int32_t& index) {
  if (!lazy_) {
    if (next_ == items_.size()) return false;
    index = items_[next_++].index;
    return true;
  }
  if (items_.empty()) return false;
  std::pop_heap(items_.begin(), items_.end(), After);
  index = items_.back().index;
  items_.pop_back();
  return true;
}

}  // namespace muster::scheduler
