// Preemption: which running jobs to stop so that a blocked job can start.
//
// A pending job of a class that may preempt, blocked for capacity, may stop
// running jobs that are all of:
//   - of a preemptible class with a lower weight than its own,
//   - running for at least `min_run_time`,
//   - not already stopping, not chosen for another job this cycle, and not
//     immune (evicted once already for a job that then did not start).
// A victim set is valid when, with the victims' resources returned, the
// whole gang has a placement (placement.h) in what is free now. Among valid
// sets the one chosen loses the least work, then has the fewest victims:
// a victim's lost work is its GPUs x the time since its newest checkpoint
// (RunningJob::NewestCheckpoint).
//
// Algorithm (exact where it is cheap, greedy beyond):
//  1. One node: for every node that could hold the whole gang, the cheapest
//     subset of the victims on it (all subsets up to 12 candidates there,
//     cheapest-first beyond) that frees enough.
//  2. Any placement: add candidates cheapest first until the gang fits,
//     then drop, most expensive first, every victim the placement does not
//     need.
//  3. The better of the two by (lost work, victims).
// A job is never preempted for a job that could not then start: the
// returned placement is valid once the victims are gone, and the scheduler
// holds it for the preemptor (ClusterState::Nominate) until it starts.
//
// Example: 2 nodes of 8 GPUs; node a runs two 4-GPU jobs with 10 and 20
// GPU-minutes since their checkpoints, node b one 8-GPU job with 24. An
// 8-GPU preemptor takes node b (24 < 30); with 40 on node b it takes both
// jobs on node a.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/decisions.h"
#include "core/snapshot.h"
#include "scheduler/free_index.h"
#include "scheduler/placement.h"

namespace muster::scheduler {

struct PreemptionOptions {
  bool enabled = true;
  Duration min_run_time = Duration::Minutes(5);
  int32_t max_per_cycle = 4;  // preemptors per cycle

  Status Validate() const;
};

// GPUs x seconds since the job's newest checkpoint.
int64_t LostGpuSeconds(const core::RunningJob& r, Time now);

// Whether a job of class `preemptor` may stop a running job `victim`
// under the class rules (weight, preemptible, may preempt) and options.
bool MayPreempt(const core::ClusterSnapshot& snap, int32_t preemptor_class, const core::RunningJob& victim,
                const PreemptionOptions& options);

// The victims for `job` (of `shape`) given what is free now (`free_now`,
// copied). `usable(n)`: whether capacity returned on node n may go to this
// job (false for nodes promised to others). `taken`: victims already chosen
// this cycle. nullopt when no valid set exists.
std::optional<core::Preemption> ChooseVictims(const core::PendingJob& job, const Shape& shape,
                                              const core::ClusterSnapshot& snap, const FreeIndex& free_now,
                                              const std::function<bool(NodeIndex)>& usable,
                                              const std::unordered_set<core::JobId>& taken,
                                              const PreemptionOptions& options);

}  // namespace muster::scheduler
