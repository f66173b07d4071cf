#include "scheduler/priority.h"

#include <algorithm>

namespace muster::scheduler {

Status PriorityWeights::Validate() const {
  if (age_points_per_hour < 0) return InvalidArgument("must be >= 0", "priority.agePointsPerHour");
  if (age_cap < 0) return InvalidArgument("must be >= 0", "priority.ageCap");
  if (size_points_per_gpu < 0) return InvalidArgument("must be >= 0", "priority.sizePointsPerGpu");
  if (size_cap < 0) return InvalidArgument("must be >= 0", "priority.sizeCap");
  return Status::Ok();
}

PriorityBreakdown ComputePriority(const core::PendingJob& job, const core::ClusterSnapshot& snap,
                                  const PriorityWeights& w) {
  PriorityBreakdown b;
  if (job.priority_class >= 0 && job.priority_class < static_cast<int32_t>(snap.classes.size())) {
    b.class_points = snap.classes[job.priority_class].weight;
  }
  // Eligible since its submit, its begin time, the release of a hold and the
  // end of its last dependency; while held, or while a dependency has not
  // ended, it is not eligible at all
  // (as Slurm counts age): a job queued behind a long one does not come out
  // of the wait ahead of jobs that could run all along.
  Time eligible = std::max({job.submit_time, job.begin_time, job.released_at});
  bool waiting = job.held;  // held: not eligible either
  for (const core::Dependency& d : job.dependencies) {
    const std::optional<Time> end = snap.EndOf(d.job);
    if (!end) {
      waiting = true;
      break;
    }
    eligible = std::max(eligible, *end);
  }
  const int64_t waited_ms = waiting ? 0 : std::max<int64_t>(0, (snap.now - eligible).millis());
  // Multiply before dividing (points per hour, millisecond input), capped
  // first so the product cannot overflow for any realistic wait.
  const int64_t capped_ms = std::min<int64_t>(waited_ms, int64_t{1} << 40);
  b.age_points = std::min(w.age_cap, capped_ms * w.age_points_per_hour / 3'600'000);
  if (job.queue >= 0 && job.queue < static_cast<int32_t>(snap.queue_fairshare.size())) {
    b.fairshare_points = snap.queue_fairshare[job.queue];
  }
  b.size_points = std::min(w.size_cap, job.total_gpus() * w.size_points_per_gpu);
  return b;
}

}  // namespace muster::scheduler
