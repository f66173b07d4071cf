// Priority: the effective priority of a pending job, as an explainable sum.
//
//   total = class + age + fairshare + size
//
//  1. class: the weight of the job's priority class (default low 0,
//     normal 10000, high 20000).
//  2. age: age_points_per_hour for every hour waited since the job became
//     eligible (the latest of its submit, its begin time, the release of a
//     hold and the end of its last dependency; none while it is held or a
//     dependency has not ended), capped at age_cap. The cap is larger than one class step by default, so a job
//     that waits long enough overtakes fresh jobs of the next class up:
//     no class can starve the one below it forever.
//  3. fairshare: the queue's fair-share points, accounted outside the
//     scheduler from decayed usage (fairshare.h) and passed in the snapshot
//     (0 when the owner does not account usage).
//  4. size: size_points_per_gpu for each GPU of the gang, capped at size_cap.
//     Off by default (as Slurm's PriorityWeightJobSize): on contended traces
//     any size bonus moved big gangs ahead of older small jobs and raised
//     mean wait sharply (docs/simulation.md). Big gangs are protected from
//     starvation by reservations, not by size points.
//
// Example (defaults): a normal job that waited 3 h has 10000 + 1500 = 11500;
// a fresh high job has 20000. After 20 h the normal job's 10000 + 10000
// ties it, and from then on ranks first (ties go to the earlier submit).
//
// All arithmetic is integral; ties are broken by submit time, then job id.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "common/time.h"
#include "core/snapshot.h"

namespace muster::scheduler {

struct PriorityWeights {
  int64_t age_points_per_hour = 500;
  int64_t age_cap = 20'000;
  int64_t size_points_per_gpu = 0;
  int64_t size_cap = 1'000;

  Status Validate() const;
};

struct PriorityBreakdown {
  int64_t class_points = 0;
  int64_t age_points = 0;
  int64_t fairshare_points = 0;
  int64_t size_points = 0;
  int64_t total() const { return class_points + age_points + fairshare_points + size_points; }
};

PriorityBreakdown ComputePriority(const core::PendingJob& job, const core::ClusterSnapshot& snap,
                                  const PriorityWeights& w);

}  // namespace muster::scheduler
