// CycleRun: elastic jobs taking replicas in what is left free.
#include "scheduler/cycle_run.h"

namespace muster::scheduler::internal {

void CycleRun::GrowElastic() {
  if (!has_elastic_) return;
  std::vector<const core::RunningJob*> jobs;
  for (const auto& [id, e] : *snap_.running) {
    if (e.elastic() && !e.stopping && !e.shrinking && e.replicas() < e.max_replicas && !taken_.count(id)) {
      jobs.push_back(&e);
    }
  }
  std::sort(jobs.begin(), jobs.end(), [&](const core::RunningJob* a, const core::RunningJob* b) {
    const int64_t wa = snap_.classes[a->priority_class].weight, wb = snap_.classes[b->priority_class].weight;
    return std::tie(wb, a->start, a->id) < std::tie(wa, b->start, b->id);
  });
  for (const core::RunningJob* e : jobs) {
    const int32_t type =
        e->per_replica.gpus > 0 ? snap_.nodes[e->allocations.front().node].gpu_type : core::kAnyGpuType;
    const int64_t w = snap_.classes[e->priority_class].weight;
    bool waits = false;
    for (const auto& [t, bw] : blocked_weight_) {
      waits = waits || (bw >= w && (t == core::kAnyGpuType || type == core::kAnyGpuType || t == type));
    }
    if (waits) continue;
    PendingJob more;
    more.id = e->id;
    more.priority_class = e->priority_class;
    more.queue = e->queue;
    more.per_replica = e->per_replica;
    more.gpu_type = type;
    more.required_features = e->required_features;
    const Ends end{PlannedEnd(*e), e->expected_end};
    std::optional<Placement> best = PlaceMost(more, 1, e->max_replicas - e->replicas(), end);
    if (!best) continue;
    Take(e->queue, *best, end);
    ++out_.stats.growths;
    out_.growths.push_back({e->id, std::move(*best)});
  }
}

std::optional<Placement> CycleRun::PlaceMost(PendingJob& sized, int32_t lo, int32_t hi, Ends end) {
  std::optional<Placement> best;
  int32_t got = 0;
  while (lo <= hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    sized.replicas = mid;
    PendingReason unused;
    auto p = TryPlace(ShapeOf(sized), end, PoolFirst(sized));
    if (p && !quotas_.Blocks(sized, TypeOf(*p), unused)) {
      best = std::move(p);
      got = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  sized.replicas = got;
  return best;
}

}  // namespace muster::scheduler::internal
