// CycleRun: the working state of one scheduling cycle (scheduler.h says
// what a cycle does, in its phases). Internal to the scheduler: only
// scheduler.cc makes one, once per Scheduler::Cycle, and drops it after.
// Its parts are defined by concern: cycle_run.cc (ordering, placement,
// backfill reservations, explanations), cycle_run_preemption.cc,
// cycle_run_reservations.cc (admin reservations) and cycle_run_elastic.cc.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scheduler/backfill_plan.h"
#include "scheduler/dependencies.h"
#include "scheduler/pending_order.h"
#include "scheduler/placement.h"
#include "scheduler/preemption.h"
#include "scheduler/queue_quotas.h"
#include "scheduler/scheduler.h"

namespace muster::scheduler::internal {

using core::Allocation;
using core::ClusterSnapshot;
using core::Decisions;
using core::JobId;
using core::PendingJob;
using core::PendingReason;
using core::ReasonCode;
using Placement = std::vector<Allocation>;

struct ShapeHash {
  size_t operator()(const Shape& s) const {
    uint64_t h = static_cast<uint64_t>(s.replicas);
    auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL; };
    mix(static_cast<uint64_t>(s.per_replica.gpus));
    mix(static_cast<uint64_t>(s.per_replica.cpu_milli));
    mix(static_cast<uint64_t>(s.per_replica.memory_bytes));
    mix(static_cast<uint64_t>(s.gpu_type) + 7);
    mix(static_cast<uint64_t>(s.scope));
    mix(s.features);
    mix((s.one_per_node ? 1u : 0u) | (s.exclusive ? 2u : 0u));
    return static_cast<size_t>(h);
  }
};

inline Shape ShapeOf(const PendingJob& j) {
  return Shape{j.replicas, j.per_replica, j.gpu_type, j.topology, j.required_features, j.one_per_node || j.exclusive,
               j.exclusive};
}

// The working state of one cycle. See scheduler.h for the phases.
class CycleRun {
 public:
  CycleRun(const SchedulerOptions& options, const Policy& policy, FeatureViews& capacity, const ClusterSnapshot& snap)
      : options_(options), policy_(policy), capacity_(capacity), snap_(snap), quotas_(snap) {}

  Decisions Run();

 private:
  // How long the plan expects `j` to run once started, and when it expects
  // a running job to end: by predictions from its user's recent run times
  // when they are on (SchedulerOptions::predict_run_times), else by limits.
  bool Predicting() const { return options_.predict_run_times && snap_.running_by_predicted_end != nullptr; }
  Duration Planned(const PendingJob& j) const { return Predicting() ? snap_.PredictedRun(j) : j.time_limit; }
  // When a job started now ends: as planned, and at the latest (its limit).
  // Backfill before a starving job's reservation goes by the latest.
  struct Ends {
    Time planned;
    Time limit;
    Time On(bool guarded) const { return guarded ? limit : planned; }
  };
  Ends EndsOf(const PendingJob& j) const { return {snap_.now + Planned(j), snap_.now + j.time_limit}; }
  Time PlannedEnd(const core::RunningJob& e) const {
    return Predicting() && e.predicted_end > snap_.now ? e.predicted_end : e.expected_end;
  }

  bool Interactive(const PendingJob& j) const {
    return j.priority_class >= 0 && static_cast<size_t>(j.priority_class) < snap_.classes.size() &&
           snap_.classes[j.priority_class].interactive;
  }

  // Jobs of interactive classes go first, oldest first, whatever the
  // policy's order: they take what is free before any job is promised
  // capacity, so no reservation (backfill) delays them.
  void ConsiderInteractiveFirst();

  // Admin reservations (core::AdminReservation). Their jobs go first, each on
  // its reservation's nodes alone and within its window, oldest first;
  // then those nodes are held from the window's start (now, for one under
  // way) for every other job: only a job that ends by its limit before
  // then may use one, and no preemption frees one.
  void ConsiderReservations();

  void ConsiderMember(const PendingJob& j);

  // Holds node `n` for an admin reservation from `from` on. The backfill
  // plan promises it to no job (it cannot tell a promise that ends before
  // the window from one that runs into it).
  void HoldForReservation(NodeIndex n, Time from);

  // Whether `j` waits for something other than room (a hold, its begin
  // time, its array's limit, a dependency, capacity preempted for it):
  // then `r` is explained (or the job failed) already.
  bool Waits(const PendingJob& j, PendingReason& r);

  void Consider(const PendingJob& j);

  // Without explanations, a cycle may stop once no GPU is free, no job
  // without GPUs waits, and no further reservation is due: no job left can
  // start or be promised anything. (With explanations every job is visited
  // to give it a reason.)
  void CountCanStillAct();
  void Considered(const PendingJob& j);
  bool NothingLeftToDo();

  void Explain(PendingReason& r, ReasonCode code);

  // Jobs that preempted others in earlier cycles: each starts on its held
  // capacity once its victims are gone, and until then the capacity stays
  // held (nothing else may use it). A nomination on a node that is no
  // longer schedulable is ignored: the job is placed like any other.
  void HoldNominations();

  // Holds `p` for `job` from now on: other jobs get only what is left.
  void Hold(JobId job, const Placement& p);

  // Whether `j` might preempt anyone this cycle, by what does not change
  // within it (for counting what is left to do).
  bool CouldPreempt(const PendingJob& j) const;
  // Whether jobs may preempt jobs that have run longer (the las policy).
  bool ByService() const { return options_.preemption.enabled && policy_.service_bands.has_value(); }
  // Under las, a job still waiting half the starvation threshold after
  // passing it (its starvation reservation has not started it: the jobs
  // before it run to long limits) may stop jobs of any band, as if it had
  // had no service: this bounds the longest wait. A run that itself
  // followed a starving wait is still never stopped.
  bool ServiceOverdue(const PendingJob& j) const {
    return j.QueuedFor(snap_.now) > Duration::Millis(options_.starvation_threshold.millis() / 2 * 3);
  }

  // Whether `j` could preempt anyone this cycle (a cheap filter).
  bool MayTryPreempting(const PendingJob& j);

  int32_t TypeOf(const Placement& p) const {
    return p.empty() ? core::kAnyGpuType : snap_.nodes[p.front().node].gpu_type;
  }

  // Whether starting `j` on GPUs of type t (kAnyGpuType: not known yet)
  // would take its queue or one above it over a limit; fills the reason if so.
  bool QuotaBlocks(const PendingJob& j, int32_t t, PendingReason& r);
  bool MayReclaim(const PendingJob& j) const { return options_.preemption.enabled && quotas_.MayReclaim(j); }
  bool MayReclaimForShare(const PendingJob& j) const {
    return options_.preemption.enabled && quotas_.MayReclaimForShare(j, options_.preemption.reclaim_past_guarantee);
  }

  // Preempts for `j` if a victim set frees a placement (preemption.h);
  // the placement is then held for it.
  bool TryPreempt(const PendingJob& j, const Shape& shape, PendingReason& r);

  static int64_t GpusOf(const core::RunningJob& r);

  // Replicas that elastic jobs hold above their minimum are given back
  // before any job is stopped whole (ChooseShrinks); the placement is then
  // held for `j` until they have stopped.
  bool TryShrink(const PendingJob& j, const Shape& shape, PendingReason& r);

  // The replicas that running elastic jobs hold above their minimum which,
  // given back newest first, make room for `j` (of `shape`): those of jobs
  // of a class no higher than its own (in its queue or one that borrows),
  // or of a queue its guarantee may reclaim from. Lowest class first, then
  // the most recently started. nullopt when they cannot make room.
  std::optional<core::Preemption> ChooseShrinks(const PendingJob& j, const Shape& shape, int64_t own_weight,
                                                bool for_guarantee);

  // A job left waiting for capacity: growth leaves what it may need.
  void NoteBlocked(const PendingJob& j);

  // Elastic jobs below their maximum take replicas in what is left free,
  // higher class first, then the earliest started: as many as fit now
  // without delaying a reservation or passing a queue's limit, ending with
  // the job. None grows while a job of its class or a higher one waits for
  // capacity of its GPU type (that job would take the replicas back).
  void GrowElastic();

  // The placement of the most replicas of elastic `j` (its minimum to its
  // maximum) that fit now within its queue's limits; `sized` is `j` with
  // that many.
  std::optional<Placement> PlaceElastic(const PendingJob& j, Ends end, PendingJob& sized) {
    sized = j;
    return PlaceMost(sized, j.min_replicas, j.replicas, end);
  }

  // The placement of the most replicas of `sized`, from `lo` to `hi`, that
  // fit now (to run until `end`) within its queue's limits, found by
  // bisection (fewer replicas fit wherever more do); sets sized.replicas to
  // that many (0: none fits).
  std::optional<Placement> PlaceMost(PendingJob& sized, int32_t lo, int32_t hi, Ends end);

  // Under las, by the time it waited in all (a long job it stopped has an
  // old submit time but may have waited little).
  bool Starving(const PendingJob& j) const;

  // `prefer`: node features tried first (PoolFirst), then any node.
  std::optional<Placement> TryPlace(const Shape& shape, Ends end, core::FeatureMask prefer = 0);
  // The pool `j` is placed in first: spot when it may run there and
  // checkpoints often, else on-demand (SchedulerOptions::
  // spot_checkpoint_interval); 0 without spot nodes or a preference.
  core::FeatureMask PoolFirst(const PendingJob& j) const;

  // A job that ends before a reservation starts may use the whole of a
  // reserved node: all replicas on the fullest such node that fits.
  std::optional<Placement> PlaceBeforeReservation(const Shape& s, Ends end);

  // The most GPUs free now on one reserved node (cached until a change).
  int64_t MaxReservedActualGpus();

  // The job whose reservation keeps `s` from fitting on one node now, or 0.
  JobId ReservedFor(const Shape& s);

  bool FeasibleEver(const Shape& s);

  // Takes `p` for a job of `queue` that holds it until `end`.
  void Take(int32_t queue, const Placement& p, Ends end);

  // Jobs of array `group` running, those started this cycle included.
  int32_t& GroupRunning(JobId group);

  void Start(const PendingJob& j, Placement p, Ends end);

  // `guarded`: a reservation for a job past the starvation threshold, which
  // backfill may not delay even when a run outlives its prediction.
  void ApplyReservation(JobId job, int32_t queue, const BackfillPlan::Slot& slot, bool guarded);

  core::Resources View(NodeIndex n) const {
    return res_time_[n].is_max() ? actual_[n] : core::Resources::Min(actual_[n], spare_[n]);
  }

  void FillNeed(PendingReason& r, const PendingJob& j) const;

  // The index of what `s` may use now: over the nodes with its features.
  const FreeIndex& Live(const Shape& s) { return live_.For(s.features, snap_.nodes); }
  // Whether node `n` is schedulable and has the features `s` requires.
  bool Usable(NodeIndex n, const Shape& s) const {
    return live_.all().indexed(n) && core::HasFeatures(snap_.nodes[n].features, s.features);
  }

  // What is needed, and what there is, for the explanation: now (free
  // capacity), or `ever` (the whole capacity, for a job that can never
  // run; then also the most CPU and memory of a node that could hold a
  // replica's GPUs), on the nodes with the job's features.
  void FillNumbers(PendingReason& r, const PendingJob& j, bool ever);

  // O(leaves), so cached per index and version.
  int64_t LargestLeafFree(const FreeIndex& ix, int32_t t);

  const SchedulerOptions& options_;
  const Policy& policy_;
  FeatureViews& capacity_;  // views are added as jobs need them
  const ClusterSnapshot& snap_;

  // Per (GPU type, GPUs a replica, features): the most CPU and memory of a
  // schedulable node with the features and that many GPUs, for
  // explanations; capacity does not change within a cycle.
  struct NodeLimits {
    bool with_features = false;  // a schedulable node has the features
    bool any = false;
    int64_t cpu_milli = 0;
    int64_t memory_bytes = 0;
  };
  std::map<std::tuple<int32_t, int64_t, core::FeatureMask>, NodeLimits> node_limits_;

  FeatureViews live_;                    // what a job may use now
  std::vector<core::Resources> actual_;  // free now, ignoring reservations
  std::vector<core::Resources> spare_;   // reserved nodes: left for jobs outlasting the reservation
  std::vector<Time> res_time_;           // earliest reservation start per node
  std::vector<JobId> res_job_;           // the job holding that reservation
  std::vector<bool> res_guarded_;        // reserved for a starving job (ApplyReservation)
  // The queue of every job with a reservation there (kNoQueue: several, or
  // a preemptor's hold).
  static constexpr int32_t kNoQueue = -1;
  std::vector<int32_t> res_queue_;
  std::vector<NodeIndex> reserved_nodes_;
  std::vector<NodeIndex> admin_held_;  // held for admin reservations (HoldForReservation)
  std::optional<BackfillPlan> plan_;
  std::vector<PlannedRelease> started_;  // starts before the plan existed
  std::unordered_set<Shape, ShapeHash> live_failed_;
  int64_t max_reserved_actual_ = -1;  // -1: recompute
  std::unordered_map<Shape, bool, ShapeHash> feasible_;
  // Per index, per GPU type: (index version, largest leaf free).
  std::unordered_map<const FreeIndex*, std::vector<std::pair<uint64_t, int64_t>>> leaf_cache_;
  int32_t blocked_ = 0;
  int64_t gpu_less_left_ = 0;
  int64_t starving_left_ = 0;
  int32_t starving_reserved_ = 0;
  bool strict_blocked_ = false;
  // Preemption: jobs holding nominated capacity (0: started now, else the
  // victim it waits for), victims chosen this
  // cycle, (shape, class weight) pairs that found no victims.
  std::unordered_map<JobId, JobId> nominated_;
  // By index into snap_.pending: considered before the policy's order (an
  // interactive job); empty when there is none.
  std::vector<bool> first_;
  // Elastic jobs run (set at the start of the cycle), and the highest class
  // weight of a job left waiting for capacity, per GPU type it asked for.
  bool has_elastic_ = false;
  std::map<int32_t, int64_t> blocked_weight_;
  std::unordered_set<JobId> taken_;
  std::optional<std::unordered_map<JobId, int32_t>> group_running_;  // GroupRunning(), counted once a cycle
  std::vector<int32_t> yielded_;  // indexes into snap_.pending of jobs that yielded (YieldsToFairShare)
  struct FailedKey {
    Shape shape;
    int64_t weight;      // the class weight it may preempt below (INT64_MIN: none)
    int32_t queue;       // the queue that may reclaim (-1: none)
    int32_t band;        // its service band, preempting by service (-1: not)
    int64_t own_weight;  // its class weight, preempting by service (INT64_MIN: not)
    bool operator==(const FailedKey&) const = default;
  };
  struct FailedKeyHash {
    size_t operator()(const FailedKey& k) const {
      size_t h = ShapeHash{}(k.shape) * 31 + std::hash<int64_t>{}(k.weight);
      h = (h * 31 + std::hash<int32_t>{}(k.queue)) * 31 + std::hash<int32_t>{}(k.band);
      return h * 31 + std::hash<int64_t>{}(k.own_weight);
    }
  };
  std::unordered_set<FailedKey, FailedKeyHash> preempt_failed_;
  QueueQuotas quotas_;                  // usage against quotas, with this cycle's starts
  std::optional<VictimPool> pools_[4];  // by VictimPool::Kind, each built once a cycle when needed
  int32_t preemptors_ = 0;
  int64_t preemptors_left_ = 0;
  Decisions out_;
};

}  // namespace muster::scheduler::internal
