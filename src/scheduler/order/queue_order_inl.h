// Template definitions for queue_order.h.
#pragma once

#include <algorithm>
#include <tuple>

namespace muster::scheduler {

template <typename KeyFn>
void SortPendingBy(const core::ClusterSnapshot& snap, std::vector<int32_t>& order, KeyFn key) {
  struct Keyed {
    int64_t key;
    int64_t submit_ms;
    core::JobId id;
    int32_t index;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(snap.pending.size());
  for (size_t i = 0; i < snap.pending.size(); ++i) {
    const core::PendingJob& j = snap.pending[i];
    keyed.push_back({key(j), j.submit_time.millis(), j.id, static_cast<int32_t>(i)});
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.key, a.submit_ms, a.id) < std::tie(b.key, b.submit_ms, b.id);
  });
  order.clear();
  order.reserve(keyed.size());
  for (const Keyed& k : keyed) order.push_back(k.index);
}

}  // namespace muster::scheduler
