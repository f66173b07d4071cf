// BackfillPlan: the cluster's future as time limits predict it, used to give
// blocked jobs a reservation (a planned start and nodes) and to keep backfill
// from delaying any reservation.
//
// Algorithm:
//  1. Start from what is free now (a copy of the cycle's index) with the
//     cursor at `now`. Release events are the running jobs' expected ends
//     (start + time limit), the ends of jobs started earlier in this cycle
//     and the ends of reservations made so far. With predictions, a running
//     job is expected to end at its predicted end instead (its user's
//     recent run times, core/run_time_predictor.h), or at its limit once it
//     has run past the prediction; the scheduler then gives reserved and
//     started jobs their predicted run times too.
//  2. Reserve(job): try to place the job at the cursor; if it does not fit,
//     apply the next release time's events, move the cursor there, and try
//     again when a grown node could make a difference (MayFitAfterGrowth).
//     The placement found is taken out of the plan from its start until its
//     end (its end is pushed as a release).
//  3. The cursor never moves back, so reservations are made in priority
//     order at non-decreasing times: a lower job is never promised a start
//     before a higher one. Planned starts are upper bounds, since jobs usually
//     end before their limits.
//  4. A job started now (backfill) that still runs at the cursor is taken out
//     of the plan too, so later reservations see it.
//
// Example: 8 GPUs, a job holding all 8 until t=100, a 4-GPU job then blocked:
// Reserve() walks to t=100 and promises it 4 GPUs at t=100 until t=100+limit.
//
// Invariant: plan availability never goes negative; the total reserved on a
// node at any planned time is within its capacity.
#pragma once

#include <optional>
#include <queue>
#include <vector>

#include "common/time.h"
#include "core/snapshot.h"
#include "scheduler/feature_views.h"
#include "scheduler/placement.h"

namespace muster::scheduler {

struct PlannedRelease {
  Time at;
  std::vector<core::Allocation> allocations;
};

class BackfillPlan {
 public:
  // `now_free` is copied. `started` are jobs bound earlier in this cycle.
  // `predicted`: running jobs end at their predicted ends (needs
  // snap.running_by_predicted_end).
  BackfillPlan(const FeatureViews& now_free, const core::ClusterSnapshot& snap, std::vector<PlannedRelease> started,
               bool predicted = false);

  struct Slot {
    Time start;
    std::vector<core::Allocation> allocations;
  };
  // The earliest slot at or after the cursor where `shape` fits, held for
  // `limit` (Infinite: held for good), on nodes with shape.features.
  // nullopt when it never fits.
  std::optional<Slot> Reserve(const Shape& shape, Duration limit);

  // Node `n` is never to be had in the plan (an admin reservation holds
  // it): no job is promised it, whatever is released there.
  void Withhold(NodeIndex n) { plan_.Drop(n); }

  // A job started now, holding `allocations` until `end`.
  void OnStartedNow(const std::vector<core::Allocation>& allocations, Time end);

  // What node `n` has left in the plan at the cursor.
  const core::Resources& avail(NodeIndex n) const { return plan_.all().avail(n); }
  Time cursor() const { return cursor_; }
  int64_t releases_walked() const { return walked_; }

 private:
  struct Pending {
    Time at;
    int64_t seq;
    std::vector<core::Allocation> allocations;
    bool operator>(const Pending& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  // Applies every release at the earliest pending time; false if none left.
  bool AdvanceOnce(std::vector<NodeIndex>& grown);
  void Push(Time at, std::vector<core::Allocation> allocations);

  const core::ClusterSnapshot& snap_;
  FeatureViews plan_;
  Time cursor_;
  const core::EndOrder& running_;  // running jobs by the end the plan expects
  core::EndOrder::const_iterator next_running_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> extra_;
  int64_t seq_ = 0;
  int64_t walked_ = 0;
};

}  // namespace muster::scheduler
