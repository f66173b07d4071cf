// Scheduler: one scheduling cycle over an immutable snapshot.
//
// Cycle(snapshot) considers the pending jobs in the policy's order and
// returns Decisions: jobs to start now with their whole-gang placement,
// reservations (planned starts) for blocked jobs, a reason with numbers for
// every job left pending, and jobs to fail (dependencies that can never be
// met). It performs no I/O, reads no clock (time is snapshot.now) and is
// deterministic: the same snapshot gives the same decisions.
//
// Phases of a cycle (muster policy):
//  1. Index free capacity by GPU type, leaf and spine (FreeIndex).
//  2. Order the pending jobs (QueueOrder plugin). Jobs of interactive
//     classes come before all others, oldest first, whatever the policy:
//     each takes what is free before any reservation exists, so backfill
//     never delays it, and when blocked it preempts best-effort work
//     (preemptible classes below it) without waiting for the victims'
//     minimum run time (core::PriorityClass::interactive).
//  3. For each job: skip held, not-yet-begun and dependency-waiting jobs;
//     place the whole gang now if it fits without delaying any reservation
//     (placement.h); otherwise, if it is among the top `max_reservations`
//     blocked jobs or has waited past `starvation_threshold` (at most
//     `max_starvation_reservations` such extra jobs), reserve its
//     earliest start in the BackfillPlan. Nodes holding a reservation only
//     take jobs that end (by time limit) before it starts, or that fit in
//     what the reservation leaves spare.
//     A job that would take its queue (or one above it) over a limit
//     waits with reason Quota (queue_quotas.h).
//     Before reserving, a job whose class may preempt, or whose queue may
//     reclaim its guarantee, tries preemption (preemption.h): if stopping
//     lower-class or borrowing jobs frees a placement, the victims are
//     returned in Decisions::preemptions and the placement is
//     held for it. Under the las policy any job may also stop jobs that
//     have run more than it has (a higher service band:
//     order/attained_service_order.h), and "waited past the starvation
//     threshold" counts every stretch the job was pending. A job holding such capacity from an earlier cycle
//     (PendingJob::nominated) starts there first thing in the cycle once
//     it is free, and until then nothing else may use it.
//  4. A shape (GPUs, replicas, type, scope) that failed once is not tried
//     again in the cycle unless the new job ends sooner: capacity only shrinks
//     within a cycle.
//
// The Scheduler object keeps caches between cycles (the capacity index, used
// to tell "not now" from "never"), so it is owned by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "common/time.h"
#include "core/decisions.h"
#include "core/snapshot.h"
#include "scheduler/feature_views.h"
#include "scheduler/policy_registry.h"
#include "scheduler/preemption.h"
#include "scheduler/priority.h"

namespace muster::scheduler {

struct SchedulerOptions {
  std::string policy = "muster";
  PriorityWeights weights;
  // Blocked jobs (in priority order) that get a reservation each cycle.
  int32_t max_reservations = 8;
  // A job eligible for longer than this gets a reservation whatever its rank,
  // up to max_starvation_reservations such jobs per cycle (oldest class
  // first in priority order). In an overloaded cluster every job may be past
  // the threshold; the cap keeps the cycle bounded.
  Duration starvation_threshold = Duration::Hours(8);
  int32_t max_starvation_reservations = 8;
  // Plan backfill with run times predicted from each user's last two jobs
  // (core/run_time_predictor.h) instead of time limits: reservations are
  // made, and jobs backfilled before them, by when jobs are expected to
  // end. Limits still end jobs; a job that outlives its prediction is
  // planned to run to its limit; before the reservation of a job past the
  // starvation threshold, backfill still goes by limits, so a run that
  // outlives its prediction never delays a starving job. Off by default:
  // docs/simulation.md, "Backfill with predicted run times".
  bool predict_run_times = false;
  // With spot nodes in the cluster: a job allowed on them that checkpoints
  // at least this often (JobSpec::checkpoint_interval) is placed on spot
  // nodes first, and every other job allowed there on on-demand nodes
  // first, so that a reclaim costs the least work; either takes the other
  // pool when its own has no room. Zero: no preference.
  Duration spot_checkpoint_interval = Duration::Hours(1);
  // Compute a PendingReason for every job left pending (off in fast sims;
  // Unschedulable is reported either way).
  bool explain = true;
  // Preempting lower classes for blocked jobs of classes that may preempt
  // (muster policy only; preemption.h).
  PreemptionOptions preemption;

  Status Validate() const;
};

class Scheduler {
 public:
  // Validates options; errors name the option.
  static StatusOr<std::unique_ptr<Scheduler>> Create(SchedulerOptions options);

  core::Decisions Cycle(const core::ClusterSnapshot& snap);

  // The priority breakdown of one pending job (for `muster why`).
  PriorityBreakdown Priority(const core::PendingJob& job, const core::ClusterSnapshot& snap) const {
    return ComputePriority(job, snap, options_.weights);
  }
  const SchedulerOptions& options() const { return options_; }

 private:
  Scheduler(SchedulerOptions options, Policy policy) : options_(std::move(options)), policy_(std::move(policy)) {}

  // Rebuilds capacity_ when the node set changed.
  void RefreshCapacity(const core::ClusterSnapshot& snap);

  SchedulerOptions options_;
  Policy policy_;
  FeatureViews capacity_;
  uint64_t capacity_version_ = UINT64_MAX;
};

}  // namespace muster::scheduler
