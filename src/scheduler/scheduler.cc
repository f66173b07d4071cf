#include "scheduler/scheduler.h"

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

namespace muster::scheduler {
namespace {

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

Shape ShapeOf(const PendingJob& j) {
  return Shape{j.replicas, j.per_replica, j.gpu_type, j.topology, j.required_features, j.one_per_node || j.exclusive, j.exclusive};
}

// The working state of one cycle. See scheduler.h for the phases.
class CycleRun {
 public:
  CycleRun(const SchedulerOptions& options, const Policy& policy, FeatureViews& capacity,
           const ClusterSnapshot& snap)
      : options_(options), policy_(policy), capacity_(capacity), snap_(snap), quotas_(snap) {}

  Decisions Run() {
    const size_t n = snap_.nodes.size();
    live_.Build(snap_.nodes, snap_.num_gpu_types, snap_.num_leaves, snap_.leaf_spine, false);
    actual_.resize(n);
    for (size_t i = 0; i < n; ++i) actual_[i] = snap_.nodes[i].free;
    spare_.assign(n, core::Resources{});
    res_time_.assign(n, Time::Max());
    res_guarded_.assign(n, false);
    res_job_.assign(n, 0);
    res_queue_.assign(n, kNoQueue);
    HoldNominations();
    has_elastic_ = snap_.running_elastic > 0;

    // Without explanations the cycle may stop early, so order lazily.
    PendingOrder order(snap_, *policy_.order, options_.weights, /*lazy=*/!options_.explain);
    if (options_.explain) out_.reasons.reserve(snap_.pending.size());
    if (!options_.explain) CountCanStillAct();
    ConsiderReservations();
    ConsiderInteractiveFirst();
    int32_t idx;
    while (order.Next(idx)) {
      if (!first_.empty() && first_[idx]) continue;
      if (!options_.explain && NothingLeftToDo()) break;
      const PendingJob& j = snap_.pending[idx];
      Consider(j);
      if (!options_.explain) Considered(j);
    }
    // Jobs that yielded free GPUs to a queue further below its fair share
    // take what that queue's jobs did not.
    std::unordered_set<JobId> late;
    for (int32_t i : yielded_) {
      const PendingJob& j = snap_.pending[i];
      const Ends end = EndsOf(j);
      PendingReason r;
      PendingJob sized;
      auto p = j.elastic() ? PlaceElastic(j, end, sized) : TryPlace(ShapeOf(j), end);
      if (!p || QuotaBlocks(j.elastic() ? sized : j, TypeOf(*p), r)) continue;
      late.insert(j.id);
      Start(j, std::move(*p), end);
    }
    if (!late.empty()) std::erase_if(out_.reasons, [&](const PendingReason& x) { return late.count(x.job) > 0; });
    GrowElastic();
    out_.stats.reservations = static_cast<int32_t>(out_.reservations.size());
    if (plan_) out_.stats.release_events_walked = plan_->releases_walked();
    return std::move(out_);
  }

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
  void ConsiderInteractiveFirst() {
    if (std::none_of(snap_.classes.begin(), snap_.classes.end(), [](const auto& c) { return c.interactive; })) return;
    std::vector<int32_t> jobs;
    for (size_t i = 0; i < snap_.pending.size(); ++i) {
      if (Interactive(snap_.pending[i])) jobs.push_back(static_cast<int32_t>(i));
    }
    if (jobs.empty()) return;
    std::sort(jobs.begin(), jobs.end(), [&](int32_t a, int32_t b) {
      const PendingJob &x = snap_.pending[a], &y = snap_.pending[b];
      return std::tie(x.submit_time, x.id) < std::tie(y.submit_time, y.id);
    });
    if (first_.empty()) first_.assign(snap_.pending.size(), false);
    for (int32_t i : jobs) {
      if (first_[i]) continue;  // a reservation's
      first_[i] = true;
      Consider(snap_.pending[i]);
      if (!options_.explain) Considered(snap_.pending[i]);
    }
  }

  // Admin reservations (core::AdminReservation). Their jobs go first, each on
  // its reservation's nodes alone and within its window, oldest first;
  // then those nodes are held from the window's start (now, for one under
  // way) for every other job: only a job that ends by its limit before
  // then may use one, and no preemption frees one.
  void ConsiderReservations() {
    std::vector<int32_t> members;
    for (size_t i = 0; i < snap_.pending.size(); ++i) {
      if (snap_.pending[i].reservation != core::kNoReservation) members.push_back(static_cast<int32_t>(i));
    }
    if (!members.empty()) {
      std::sort(members.begin(), members.end(), [&](int32_t a, int32_t b) {
        const PendingJob &x = snap_.pending[a], &y = snap_.pending[b];
        return std::tie(x.submit_time, x.id) < std::tie(y.submit_time, y.id);
      });
      first_.assign(snap_.pending.size(), false);
      for (int32_t i : members) {
        first_[i] = true;
        ConsiderMember(snap_.pending[i]);
        if (!options_.explain) Considered(snap_.pending[i]);
      }
    }
    for (const core::ReservationWindow& w : snap_.reservations) {
      if (w.end <= snap_.now) continue;
      for (NodeIndex n : w.nodes) HoldForReservation(n, std::max(w.start, snap_.now));
    }
  }

  void ConsiderMember(const PendingJob& j) {
    ++out_.stats.jobs_considered;
    PendingReason r;
    r.job = j.id;
    if (j.reservation == core::kReservationGone) return Explain(r, ReasonCode::kReservation);
    if (Waits(j, r)) return;
    const core::ReservationWindow& w = snap_.reservations[j.reservation];
    r.reservation = w.name;
    if (w.start > snap_.now) {
      r.begin_time = w.start;
      return Explain(r, ReasonCode::kReservation);
    }
    if (j.time_limit.is_infinite() || snap_.now + j.time_limit > w.end) {
      r.reservation_end = w.end;
      return Explain(r, ReasonCode::kReservation);
    }
    if (QuotaBlocks(j, j.gpu_type, r)) {
      return Explain(r, r.queue_limit < j.total_gpus() ? ReasonCode::kUnschedulable : ReasonCode::kQuota);
    }
    const Shape shape = ShapeOf(j);
    FreeIndex on_its_nodes = Live(shape);
    for (size_t n = 0; n < on_its_nodes.num_nodes(); ++n) {
      const auto node = static_cast<NodeIndex>(n);
      if (on_its_nodes.indexed(node) && std::find(w.nodes.begin(), w.nodes.end(), node) == w.nodes.end()) {
        on_its_nodes.Drop(node);
      }
    }
    if (auto placed = FindPlacement(on_its_nodes, shape)) {
      if (j.gpu_type == core::kAnyGpuType && QuotaBlocks(j, TypeOf(*placed), r)) return Explain(r, ReasonCode::kQuota);
      return Start(j, std::move(*placed), EndsOf(j));
    }
    FillNumbers(r, j, /*ever=*/false);
    Explain(r, ReasonCode::kResources);
  }

  // Holds node `n` for an admin reservation from `from` on. The backfill
  // plan promises it to no job (it cannot tell a promise that ends before
  // the window from one that runs into it).
  void HoldForReservation(NodeIndex n, Time from) {
    if (!live_.all().indexed(n)) return;  // not schedulable: nothing to hold
    admin_held_.push_back(n);
    max_reserved_actual_ = -1;
    if (res_time_[n].is_max()) {
      reserved_nodes_.push_back(n);
      res_job_[n] = 0;
    }
    res_time_[n] = std::min(res_time_[n], from);
    spare_[n] = core::Resources{};
    res_guarded_[n] = true;
    res_queue_[n] = kNoQueue;
    live_.SetAvail(n, View(n));
  }

  // Whether `j` waits for something other than room (a hold, its begin
  // time, its array's limit, a dependency, capacity preempted for it):
  // then `r` is explained (or the job failed) already.
  bool Waits(const PendingJob& j, PendingReason& r) {
    if (auto it = nominated_.find(j.id); it != nominated_.end()) {
      if (it->second == 0) return true;  // started on its held capacity
      r.other_job = it->second;
      FillNeed(r, j);
      Explain(r, ReasonCode::kPreempting);
      return true;
    }
    if (j.held) {
      Explain(r, ReasonCode::kHeld);
      return true;
    }
    if (j.begin_time > snap_.now) {
      r.begin_time = j.begin_time;
      Explain(r, ReasonCode::kBeginTime);
      return true;
    }
    if (j.run_group_limit > 0 && GroupRunning(j.run_group) >= j.run_group_limit) {
      r.queue_limit = j.run_group_limit;
      Explain(r, ReasonCode::kArrayTaskLimit);
      return true;
    }
    if (!j.dependencies.empty()) {
      const DependencyVerdict v = EvaluateDependencies(j, snap_);
      if (v.kind == DependencyVerdict::kNever) {
        out_.failures.push_back({j.id, core::JobState::kFailed, "DependencyNeverSatisfied: " + v.why});
        return true;
      }
      if (v.kind == DependencyVerdict::kWaiting) {
        r.other_job = v.job;
        Explain(r, ReasonCode::kDependency);
        return true;
      }
    }
    return false;
  }

  void Consider(const PendingJob& j) {
    ++out_.stats.jobs_considered;
    PendingReason r;
    r.job = j.id;
    r.jobs_ahead = blocked_;
    if (Waits(j, r)) return;
    // An elastic job needs its minimum: that is what it waits, reserves
    // and preempts for; it starts with as many more as fit.
    PendingJob at_min;
    if (j.elastic()) {
      at_min = j;
      at_min.replicas = j.min_replicas;
    }
    const PendingJob& need = j.elastic() ? at_min : j;
    if (QuotaBlocks(need, j.gpu_type, r)) {
      // Larger than the limit itself: it can never run (Kueue calls such a
      // workload inadmissible; Slurm refuses it).
      return Explain(r, r.queue_limit < need.total_gpus() ? ReasonCode::kUnschedulable : ReasonCode::kQuota);
    }
    const Shape shape = ShapeOf(need);
    if (strict_blocked_) {
      if (FeasibleEver(shape)) return Explain(r, ReasonCode::kPriority);
      FillNumbers(r, need, /*ever=*/true);
      return Explain(r, ReasonCode::kUnschedulable);
    }

    const Ends end = EndsOf(j);
    PendingJob sized;
    std::optional<Placement> placed = j.elastic() ? PlaceElastic(j, end, sized) : TryPlace(shape, end);
    if (placed) {
      const PendingJob& got = j.elastic() ? sized : j;
      // A job of any GPU type is held to its queue's limit for the type it got.
      if (j.gpu_type == core::kAnyGpuType && QuotaBlocks(got, TypeOf(*placed), r)) return Explain(r, ReasonCode::kQuota);
      // Past its guarantee, a job leaves free GPUs to a smaller or equal job
      // of a queue further below its fair share, which would otherwise
      // reclaim them at once (queue_quotas.h).
      if (options_.preemption.enabled && policy_.blocking == BlockingMode::kBackfill && !Interactive(j) &&
          quotas_.YieldsToFairShare(got, TypeOf(*placed), r)) {
        FillNeed(r, need);
        yielded_.push_back(static_cast<int32_t>(&j - snap_.pending.data()));
        return Explain(r, ReasonCode::kFairShare);
      }
      return Start(j, std::move(*placed), end);
    }

    if (!FeasibleEver(shape)) {
      FillNumbers(r, need, /*ever=*/true);
      return Explain(r, ReasonCode::kUnschedulable);
    }
    if (TryPreempt(need, shape, r)) return;
    ++blocked_;
    NoteBlocked(j);
    const JobId reserved_for = ReservedFor(shape);
    if (reserved_for != 0) r.other_job = reserved_for;
    FillNumbers(r, need, /*ever=*/false);
    switch (policy_.blocking) {
      case BlockingMode::kStrict:
        strict_blocked_ = true;
        break;
      case BlockingMode::kSkip:
        break;
      case BlockingMode::kBackfill:
        const bool ranked = static_cast<int32_t>(out_.reservations.size()) < options_.max_reservations;
        const bool starving = !ranked && starving_reserved_ < options_.max_starvation_reservations &&
                              Starving(j);
        if (ranked || starving) {
          if (starving) ++starving_reserved_;
          if (!plan_) {
            plan_.emplace(live_, snap_, std::move(started_), Predicting());
            for (NodeIndex n : admin_held_) plan_->Withhold(n);
          }
          if (auto slot = plan_->Reserve(shape, Planned(j))) {
            r.planned_start = slot->start;
            ApplyReservation(j.id, j.queue, *slot, Starving(j));
          }
        }
        break;
    }
    Explain(r, reserved_for != 0 ? ReasonCode::kReservedFor : ReasonCode::kResources);
  }

  // Without explanations, a cycle may stop once no GPU is free, no job
  // without GPUs waits, and no further reservation is due: no job left can
  // start or be promised anything. (With explanations every job is visited
  // to give it a reason.)
  void CountCanStillAct() {
    for (const PendingJob& j : snap_.pending) {
      if (j.per_replica.gpus == 0) ++gpu_less_left_;
      if (Starving(j)) ++starving_left_;
      if (CouldPreempt(j)) ++preemptors_left_;
    }
  }
  void Considered(const PendingJob& j) {
    if (j.per_replica.gpus == 0) --gpu_less_left_;
    if (Starving(j)) --starving_left_;
    if (CouldPreempt(j)) --preemptors_left_;
  }
  bool NothingLeftToDo() {
    // Strict FIFO: behind a blocked head nothing starts.
    if (strict_blocked_) return true;
    if (gpu_less_left_ > 0 || MaxReservedActualGpus() > 0) return false;
    if (preemptors_left_ > 0 && preemptors_ < options_.preemption.max_per_cycle) return false;
    for (int32_t t = 0; t < live_.all().num_types(); ++t) {
      if (live_.all().type(t).free_gpus > 0) return false;
    }
    if (policy_.blocking != BlockingMode::kBackfill) return true;
    return static_cast<int32_t>(out_.reservations.size()) >= options_.max_reservations &&
           (starving_left_ == 0 || starving_reserved_ >= options_.max_starvation_reservations);
  }

  void Explain(PendingReason& r, ReasonCode code) {
    // Unschedulable is always reported: the owner may end such jobs.
    if (!options_.explain && code != ReasonCode::kUnschedulable) return;
    r.code = code;
    out_.reasons.push_back(r);
  }

  // Jobs that preempted others in earlier cycles: each starts on its held
  // capacity once its victims are gone, and until then the capacity stays
  // held (nothing else may use it). A nomination on a node that is no
  // longer schedulable is ignored: the job is placed like any other.
  void HoldNominations() {
    for (const PendingJob& j : snap_.pending) {
      if (j.nominated.empty() || j.held || j.begin_time > snap_.now) continue;
      bool valid = true, fits = true;
      for (const Allocation& a : j.nominated) {
        if (a.node < 0 || static_cast<size_t>(a.node) >= actual_.size() || !live_.all().indexed(a.node)) {
          valid = false;
          break;
        }
        if (!a.resources.FitsIn(View(a.node))) fits = false;
      }
      PendingReason unused;
      if (!valid || QuotaBlocks(j, TypeOf(j.nominated), unused)) continue;
      if (fits) {
        nominated_[j.id] = 0;
        Start(j, j.nominated, EndsOf(j));
        continue;
      }
      JobId waits_for = 0;
      for (JobId v : j.victims) {
        auto run = snap_.running->find(v);
        // An elastic job that gave back replicas for it runs on: it is
        // waited for only while those are stopping.
        if (run != snap_.running->end() && (!run->second.elastic() || run->second.stopping || run->second.shrinking)) {
          waits_for = v;
          break;
        }
      }
      if (waits_for == 0) continue;  // victims gone, still no room: placed like any job
      nominated_[j.id] = waits_for;
      Hold(j.id, j.nominated);
    }
  }

  // Holds `p` for `job` from now on: other jobs get only what is left.
  void Hold(JobId job, const Placement& p) {
    max_reserved_actual_ = -1;
    for (const Allocation& a : p) {
      const NodeIndex n = a.node;
      core::Resources left = View(n) - a.resources;
      left.gpus = std::max<int64_t>(left.gpus, 0);
      left.cpu_milli = std::max<int64_t>(left.cpu_milli, 0);
      left.memory_bytes = std::max<int64_t>(left.memory_bytes, 0);
      if (res_time_[n].is_max()) {
        reserved_nodes_.push_back(n);
        res_job_[n] = job;
      }
      spare_[n] = left;
      res_time_[n] = snap_.now;
      live_.SetAvail(n, View(n));
    }
  }

  // Whether `j` might preempt anyone this cycle, by what does not change
  // within it (for counting what is left to do).
  bool CouldPreempt(const PendingJob& j) const {
    if (policy_.blocking != BlockingMode::kBackfill || !j.nominated.empty()) return false;
    return AnyVictimClass(snap_, j.priority_class, options_.preemption) || ByService() ||
           (options_.preemption.enabled && quotas_.HasGuarantee(j.queue, j.gpu_type));
  }
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
  bool MayTryPreempting(const PendingJob& j) {
    if (policy_.blocking != BlockingMode::kBackfill || !j.nominated.empty()) return false;
    return AnyVictimClass(snap_, j.priority_class, options_.preemption) || ByService() || MayReclaim(j) ||
           MayReclaimForShare(j);
  }

  int32_t TypeOf(const Placement& p) const { return p.empty() ? core::kAnyGpuType : snap_.nodes[p.front().node].gpu_type; }

  // Whether starting `j` on GPUs of type t (kAnyGpuType: not known yet)
  // would take its queue or one above it over a limit; fills the reason if so.
  bool QuotaBlocks(const PendingJob& j, int32_t t, PendingReason& r) {
    if (!quotas_.Blocks(j, t, r)) return false;
    FillNeed(r, j);
    return true;
  }
  bool MayReclaim(const PendingJob& j) const { return options_.preemption.enabled && quotas_.MayReclaim(j); }
  bool MayReclaimForShare(const PendingJob& j) const {
    return options_.preemption.enabled && quotas_.MayReclaimForShare(j, options_.preemption.reclaim_past_guarantee);
  }

  // Preempts for `j` if a victim set frees a placement (preemption.h);
  // the placement is then held for it.
  bool TryPreempt(const PendingJob& j, const Shape& shape, PendingReason& r) {
    if (preemptors_ >= options_.preemption.max_per_cycle) return false;
    if (TryShrink(j, shape, r)) return true;
    if (!MayTryPreempting(j)) return false;
    const bool by_class = AnyVictimClass(snap_, j.priority_class, options_.preemption);
    // A reclaim within the job's queue's guarantee, or toward its fair share
    // (queue_quotas.h).
    const bool for_guarantee = MayReclaim(j);
    const bool for_share = MayReclaimForShare(j);
    const bool reclaim = for_guarantee || for_share;
    const int64_t weight = by_class ? snap_.classes[j.priority_class].weight : INT64_MIN;
    // By service: a job of a band below the victim's, of a class no lower.
    const bool by_service = ByService();
    const int32_t band = !by_service || ServiceOverdue(j) ? -1 : policy_.service_bands->BandOf(j.attained_gpu_seconds);
    const int64_t own_weight = snap_.classes[j.priority_class].weight;
    const FailedKey key{shape, weight, reclaim ? j.queue : -1, band, by_service ? own_weight : INT64_MIN};
    if (preempt_failed_.count(key)) return false;
    // The candidates for this kind of preemption, built once a cycle when
    // first needed.
    using Kind = VictimPool::Kind;
    const bool interactive = Interactive(j);
    const Kind kind = interactive                                        ? Kind::kInteractive
                      : reclaim && options_.preemption.reclaim_any_class ? Kind::kReclaimAny
                      : reclaim || by_service                            ? Kind::kReclaim
                                                                         : Kind::kByClass;
    std::optional<VictimPool>& pool = pools_[static_cast<int>(kind)];
    if (!pool) pool.emplace(snap_, options_.preemption, kind);
    // By class: a preemptible job of a lower weight, of the same queue or of
    // one that borrows (never one within its guarantee: what a queue is
    // guaranteed is not taken by another queue's priority, so a reclaim is
    // never undone by a preemption and nothing thrashes). By reclaim: a job
    // of another queue that borrows, or whose share exceeds the job's
    // queue's. A reclaim stops no job larger than the reclaiming one (a
    // gang is not stopped to give a few GPUs), except that a queue short of
    // its guarantee by a victim's whole size may stop it when nothing
    // smaller frees room: it is owed all of it.
    const int64_t gpus = j.total_gpus();
    int64_t largest = gpus;
    auto by_reclaim = [&](const VictimPool::Candidate& c) {
      if (c.job->queue == j.queue) return false;
      const int64_t held = GpusOf(*c.job);
      if (held > largest) return false;
      if (!quotas_.SharesWith(j.queue, c.job->queue)) return for_guarantee && quotas_.ReclaimableFrom(j, c.job->queue);
      return for_share && quotas_.ShareReclaimableFrom(j, c.job->queue) &&
             quotas_.KeepsOrder(j, c.job->queue, held, options_.preemption.reclaim_past_guarantee);
    };
    // Another queue's job only where that queue borrows and keeps its
    // guarantee without it.
    auto may_take = [&](const VictimPool::Candidate& c) {
      return c.job->queue == j.queue || (quotas_.Borrowing(c.job->queue, j.gpu_type, j.queue) &&
                                         quotas_.KeepsGuarantee(c.job->queue, GpusOf(*c.job)));
    };
    auto for_service = [&](const VictimPool::Candidate& c) {
      return by_service && c.preemptible && c.weight <= own_weight && c.job->queued <= options_.starvation_threshold &&
             policy_.service_bands->BandOf(c.job->AttainedGpuSeconds(snap_.now)) > band && may_take(c);
    };
    auto eligible = [&](const VictimPool::Candidate& c) {
      return (by_class && c.preemptible && c.weight < weight && may_take(c)) || for_service(c) ||
             (reclaim && by_reclaim(c));
    };
    // Capacity promised to another job is not taken, unless only jobs of
    // queues this reclaim may take from hold promises there: what such a
    // queue holds is not safe from it, nor what it is promised.
    auto usable = [&](NodeIndex n) {
      if (res_time_[n].is_max()) return true;
      if (!reclaim || res_time_[n] <= snap_.now || res_queue_[n] == kNoQueue || res_queue_[n] == j.queue) return false;
      return quotas_.SharesWith(j.queue, res_queue_[n]) ? for_share && quotas_.ShareReclaimableFrom(j, res_queue_[n])
                                                        : for_guarantee && quotas_.ReclaimableFrom(j, res_queue_[n]);
    };
    auto p = ChooseVictims(j, shape, *pool, Live(shape), usable, taken_, eligible);
    if (!p && quotas_.Deficit(j.queue, j.gpu_type) > gpus) {
      largest = quotas_.Deficit(j.queue, j.gpu_type);
      p = ChooseVictims(j, shape, *pool, Live(shape), usable, taken_, eligible);
    }
    if (p && j.gpu_type == core::kAnyGpuType) {
      PendingReason unused;
      if (QuotaBlocks(j, TypeOf(p->allocations), unused)) p.reset();  // over its limit on that type
    }
    // What a reclaim toward a fair share takes must keep each queue it takes
    // from above the job's queue, and what a higher class takes from other
    // queues must leave them their guarantees (else the reclaim that gives
    // it back is undone again, and so on).
    std::vector<std::pair<int32_t, int64_t>> taken, by_class_taken;
    if (p) {
      for (JobId v : p->victims) {
        const core::RunningJob& victim = snap_.running->at(v);
        taken.emplace_back(victim.queue, GpusOf(victim));
        if (victim.queue != j.queue && !(reclaim && by_reclaim({&victim}))) by_class_taken.push_back(taken.back());
      }
      if (for_share && !quotas_.ShareKeepsOrder(j, taken, options_.preemption.reclaim_past_guarantee)) p.reset();
      if (p && !quotas_.KeepGuarantees(by_class_taken)) p.reset();
    }
    if (!p) {
      // Capacity only shrinks, usage only grows and victims are only taken
      // within a cycle.
      preempt_failed_.insert(key);
      return false;
    }
    for (JobId v : p->victims) {
      const core::RunningJob& victim = snap_.running->at(v);
      const int64_t w = snap_.classes[victim.priority_class].weight;
      if (by_class && w < weight) continue;
      if (for_service({&victim, 0, w, snap_.classes[victim.priority_class].preemptible})) {
        p->for_service = true;
      } else {
        p->reclaim = true;
      }
    }
    p->interactive = interactive;
    p->grace = snap_.classes[j.priority_class].preempt_grace;
    for (const auto& [q, held] : taken) quotas_.Commit(q, -held);
    quotas_.Commit(j.queue, gpus);
    ++preemptors_;
    ++out_.stats.preemptions;
    taken_.insert(p->victims.begin(), p->victims.end());
    Hold(j.id, p->allocations);
    r.other_job = p->victims.front();
    FillNeed(r, j);
    Explain(r, ReasonCode::kPreempting);
    out_.preemptions.push_back(std::move(*p));
    return true;
  }

  static int64_t GpusOf(const core::RunningJob& r) {
    int64_t gpus = 0;
    for (const Allocation& a : r.allocations) gpus += a.resources.gpus;
    return gpus;
  }

  // Replicas that elastic jobs hold above their minimum are given back
  // before any job is stopped whole (ChooseShrinks); the placement is then
  // held for `j` until they have stopped.
  bool TryShrink(const PendingJob& j, const Shape& shape, PendingReason& r) {
    if (!has_elastic_ || policy_.blocking != BlockingMode::kBackfill || !j.nominated.empty()) return false;
    const int64_t own_weight = snap_.classes[j.priority_class].weight;
    const bool for_guarantee = MayReclaim(j);
    const FailedKey key{shape, own_weight, j.queue, /*band=*/-2, for_guarantee ? 1 : 0};
    if (preempt_failed_.count(key)) return false;
    std::optional<core::Preemption> p = ChooseShrinks(j, shape, own_weight, for_guarantee);
    if (!p) {
      preempt_failed_.insert(key);  // what elastic jobs may give only shrinks within a cycle
      return false;
    }
    for (const core::Shrink& sh : p->shrinks) {
      const core::RunningJob& e = snap_.running->at(sh.job);
      quotas_.Commit(e.queue, -(e.replicas() - sh.keep) * e.per_replica.gpus);
      taken_.insert(sh.job);
      p->victims.push_back(sh.job);
    }
    out_.stats.shrinks += static_cast<int32_t>(p->shrinks.size());
    p->interactive = Interactive(j);
    p->grace = snap_.classes[j.priority_class].preempt_grace;
    quotas_.Commit(j.queue, j.total_gpus());
    ++preemptors_;
    Hold(j.id, p->allocations);
    r.other_job = p->shrinks.front().job;
    FillNeed(r, j);
    Explain(r, ReasonCode::kPreempting);
    out_.preemptions.push_back(std::move(*p));
    return true;
  }

  // The replicas that running elastic jobs hold above their minimum which,
  // given back newest first, make room for `j` (of `shape`): those of jobs
  // of a class no higher than its own (in its queue or one that borrows),
  // or of a queue its guarantee may reclaim from. Lowest class first, then
  // the most recently started. nullopt when they cannot make room.
  std::optional<core::Preemption> ChooseShrinks(const PendingJob& j, const Shape& shape, int64_t own_weight,
                                                bool for_guarantee) {
    if (!has_elastic_) return std::nullopt;
    std::vector<const core::RunningJob*> cands;
    for (const auto& [id, e] : *snap_.running) {
      if (!e.elastic() || e.stopping || e.shrinking || e.replicas() <= e.min_replicas || taken_.count(id)) continue;
      const int64_t w = snap_.classes[e.priority_class].weight;
      const bool by_class = w <= own_weight && (e.queue == j.queue || quotas_.Borrowing(e.queue, j.gpu_type, j.queue));
      if (by_class || (for_guarantee && e.queue != j.queue && quotas_.ReclaimableFrom(j, e.queue))) cands.push_back(&e);
    }
    if (cands.empty()) return std::nullopt;
    std::sort(cands.begin(), cands.end(), [&](const core::RunningJob* a, const core::RunningJob* b) {
      const int64_t wa = snap_.classes[a->priority_class].weight, wb = snap_.classes[b->priority_class].weight;
      return std::tie(wa, b->start, b->id) < std::tie(wb, a->start, a->id);
    });
    FreeIndex trial = Live(shape);
    core::Preemption out;
    out.job = j.id;
    for (const core::RunningJob* e : cands) {
      int32_t keep = e->replicas();
      // Its replicas newest first: from its last allocation back.
      for (size_t i = e->allocations.size(); i-- > 0 && keep > e->min_replicas;) {
        const NodeIndex n = e->allocations[i].node;
        for (int32_t k = 0; k < e->allocations[i].replicas && keep > e->min_replicas; ++k) {
          --keep;
          // Capacity promised to another job stays promised.
          if (!res_time_[n].is_max() || !Usable(n, shape)) continue;
          trial.SetAvail(n, trial.avail(n) + e->per_replica);
          if (auto placement = FindPlacement(trial, shape)) {
            out.shrinks.push_back({e->id, keep});
            out.allocations = std::move(*placement);
            return out;
          }
        }
      }
      out.shrinks.push_back({e->id, keep});
    }
    return std::nullopt;
  }

  // A job left waiting for capacity: growth leaves what it may need.
  void NoteBlocked(const PendingJob& j) {
    const int64_t w = snap_.classes[j.priority_class].weight;
    auto [it, fresh] = blocked_weight_.try_emplace(j.gpu_type, w);
    if (!fresh) it->second = std::max(it->second, w);
  }

  // Elastic jobs below their maximum take replicas in what is left free,
  // higher class first, then the earliest started: as many as fit now
  // without delaying a reservation or passing a queue's limit, ending with
  // the job. None grows while a job of its class or a higher one waits for
  // capacity of its GPU type (that job would take the replicas back).
  void GrowElastic() {
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
      const int32_t type = e->per_replica.gpus > 0 ? snap_.nodes[e->allocations.front().node].gpu_type : core::kAnyGpuType;
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
  std::optional<Placement> PlaceMost(PendingJob& sized, int32_t lo, int32_t hi, Ends end) {
    std::optional<Placement> best;
    int32_t got = 0;
    while (lo <= hi) {
      const int32_t mid = lo + (hi - lo) / 2;
      sized.replicas = mid;
      PendingReason unused;
      auto p = TryPlace(ShapeOf(sized), end);
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

  // Under las, by the time it waited in all (a long job it stopped has an
  // old submit time but may have waited little).
  bool Starving(const PendingJob& j) const {
    if (policy_.service_bands) return j.QueuedFor(snap_.now) > options_.starvation_threshold;
    const Time eligible = std::max(j.submit_time, j.begin_time);
    return snap_.now - eligible > options_.starvation_threshold;
  }

  std::optional<Placement> TryPlace(const Shape& shape, Ends end) {
    // Capacity only shrinks within a cycle: a shape that failed on the live
    // index fails again.
    std::optional<Placement> p;
    if (!live_failed_.count(shape)) {
      p = FindPlacement(Live(shape), shape);
      if (!p) live_failed_.insert(shape);
    }
    if (!p && !reserved_nodes_.empty()) p = PlaceBeforeReservation(shape, end);
    return p;
  }

  // A job that ends before a reservation starts may use the whole of a
  // reserved node: all replicas on the fullest such node that fits.
  std::optional<Placement> PlaceBeforeReservation(const Shape& s, Ends end) {
    if (s.per_replica.gpus * s.replicas > MaxReservedActualGpus()) return std::nullopt;
    NodeIndex best = -1;
    for (NodeIndex n : reserved_nodes_) {
      if (end.On(res_guarded_[n]) > res_time_[n] || !Usable(n, s)) continue;
      if (s.per_replica.gpus > 0 && s.gpu_type != core::kAnyGpuType && live_.all().type_of(n) != s.gpu_type) {
        continue;
      }
      if (actual_[n].CopiesOf(s.per_replica, s.replicas) < s.replicas) continue;
      if (best < 0 || actual_[n].gpus < actual_[best].gpus) best = n;
    }
    if (best < 0) return std::nullopt;
    return Placement{{best, s.replicas, s.per_replica * s.replicas}};
  }

  // The most GPUs free now on one reserved node (cached until a change).
  int64_t MaxReservedActualGpus() {
    if (max_reserved_actual_ < 0) {
      max_reserved_actual_ = 0;
      for (NodeIndex n : reserved_nodes_) {
        max_reserved_actual_ = std::max(max_reserved_actual_, actual_[n].gpus);
      }
    }
    return max_reserved_actual_;
  }

  // The job whose reservation keeps `s` from fitting on one node now, or 0.
  JobId ReservedFor(const Shape& s) {
    if (s.per_replica.gpus * s.replicas > MaxReservedActualGpus()) return 0;
    for (NodeIndex n : reserved_nodes_) {
      if (!Usable(n, s)) continue;
      if (s.per_replica.gpus > 0 && s.gpu_type != core::kAnyGpuType && live_.all().type_of(n) != s.gpu_type) {
        continue;
      }
      if (actual_[n].CopiesOf(s.per_replica, s.replicas) >= s.replicas) return res_job_[n];
    }
    return 0;
  }

  bool FeasibleEver(const Shape& s) {
    auto [it, inserted] = feasible_.try_emplace(s, false);
    if (inserted) it->second = FindPlacement(capacity_.For(s.features, snap_.nodes), s).has_value();
    return it->second;
  }

  // Takes `p` for a job of `queue` that holds it until `end`.
  void Take(int32_t queue, const Placement& p, Ends end) {
    max_reserved_actual_ = -1;
    for (const Allocation& a : p) {
      quotas_.Add(queue, snap_.nodes[a.node].gpu_type, a.resources.gpus);
      actual_[a.node] -= a.resources;
      if (end.On(res_guarded_[a.node]) > res_time_[a.node]) spare_[a.node] -= a.resources;
      live_.SetAvail(a.node, View(a.node));
    }
    if (plan_) {
      plan_->OnStartedNow(p, end.planned);
    } else {
      started_.push_back({end.planned, p});
    }
  }

  // Jobs of array `group` running, those started this cycle included.
  int32_t& GroupRunning(JobId group) {
    if (!group_running_) {
      group_running_.emplace();
      if (snap_.running != nullptr) {
        for (const auto& [id, e] : *snap_.running) {
          if (e.run_group != 0) ++(*group_running_)[e.run_group];
        }
      }
    }
    return (*group_running_)[group];
  }

  void Start(const PendingJob& j, Placement p, Ends end) {
    if (j.run_group_limit > 0) ++GroupRunning(j.run_group);
    Take(j.queue, p, end);
    ++out_.stats.placements;
    if (!out_.reservations.empty()) ++out_.stats.backfilled;
    out_.bindings.push_back({j.id, std::move(p)});
  }

  // `guarded`: a reservation for a job past the starvation threshold, which
  // backfill may not delay even when a run outlives its prediction.
  void ApplyReservation(JobId job, int32_t queue, const BackfillPlan::Slot& slot, bool guarded) {
    max_reserved_actual_ = -1;
    for (const Allocation& a : slot.allocations) {
      const NodeIndex n = a.node;
      if (res_time_[n].is_max()) {
        reserved_nodes_.push_back(n);
        res_job_[n] = job;
        res_queue_[n] = queue;
        spare_[n] = plan_->avail(n);
        res_time_[n] = slot.start;
        res_guarded_[n] = guarded;
      } else {
        res_guarded_[n] = res_guarded_[n] || guarded;
        if (res_queue_[n] != queue) res_queue_[n] = kNoQueue;
        res_time_[n] = std::min(res_time_[n], slot.start);
        spare_[n] = core::Resources::Min(spare_[n], plan_->avail(n));
      }
      live_.SetAvail(n, View(n));
    }
    out_.reservations.push_back({job, slot.start, slot.allocations});
  }

  core::Resources View(NodeIndex n) const {
    return res_time_[n].is_max() ? actual_[n] : core::Resources::Min(actual_[n], spare_[n]);
  }

  void FillNeed(PendingReason& r, const PendingJob& j) const {
    r.replicas = j.replicas;
    r.per_replica_gpus = j.per_replica.gpus;
    r.gpu_type = j.gpu_type;
    r.scope = j.topology;
    r.features = j.required_features;
  }

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
  void FillNumbers(PendingReason& r, const PendingJob& j, bool ever) {
    if (!options_.explain && !ever) return;
    FillNeed(r, j);
    const FreeIndex& ix = ever ? capacity_.For(j.required_features, snap_.nodes)
                               : live_.For(j.required_features, snap_.nodes);
    if (ever) {
      auto [it, inserted] = node_limits_.try_emplace({j.gpu_type, j.per_replica.gpus, j.required_features});
      NodeLimits& most = it->second;
      if (inserted) {
        for (const core::Node& n : snap_.nodes) {
          if (!n.schedulable || !core::HasFeatures(n.features, j.required_features)) continue;
          most.with_features = true;
          if (n.spec.capacity.gpus < j.per_replica.gpus) continue;
          if (j.gpu_type != core::kAnyGpuType && n.gpu_type != j.gpu_type) continue;
          most.any = true;
          most.cpu_milli = std::max(most.cpu_milli, n.spec.capacity.cpu_milli);
          most.memory_bytes = std::max(most.memory_bytes, n.spec.capacity.memory_bytes);
        }
      }
      r.no_node_with_features = j.required_features != 0 && !most.with_features;
      if (most.any) {  // else no node holds a replica's GPUs: the GPUs explain it
        r.per_replica_cpu_milli = j.per_replica.cpu_milli;
        r.per_replica_memory_bytes = j.per_replica.memory_bytes;
        r.largest_node_cpu_milli = most.cpu_milli;
        r.largest_node_memory_bytes = most.memory_bytes;
      }
    }
    for (int32_t t = 0; t < ix.num_types(); ++t) {
      if (j.gpu_type != core::kAnyGpuType && t != j.gpu_type) continue;
      r.free_gpus += ix.type(t).free_gpus;
      r.largest_node_free = std::max(r.largest_node_free, ix.LargestNodeFree(t));
      r.largest_leaf_free = std::max(r.largest_leaf_free, LargestLeafFree(ix, t));
    }
  }

  // O(leaves), so cached per index and version.
  int64_t LargestLeafFree(const FreeIndex& ix, int32_t t) {
    auto& cache = leaf_cache_[&ix];
    if (cache.size() != static_cast<size_t>(ix.num_types())) cache.assign(ix.num_types(), {UINT64_MAX, 0});
    if (cache[t].first != ix.version()) cache[t] = {ix.version(), ix.LargestLeafFree(t)};
    return cache[t].second;
  }

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

  FeatureViews live_;                   // what a job may use now
  std::vector<core::Resources> actual_; // free now, ignoring reservations
  std::vector<core::Resources> spare_;  // reserved nodes: left for jobs outlasting the reservation
  std::vector<Time> res_time_;          // earliest reservation start per node
  std::vector<JobId> res_job_;          // the job holding that reservation
  std::vector<bool> res_guarded_;       // reserved for a starving job (ApplyReservation)
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
    int64_t weight;  // the class weight it may preempt below (INT64_MIN: none)
    int32_t queue;   // the queue that may reclaim (-1: none)
    int32_t band;    // its service band, preempting by service (-1: not)
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
  QueueQuotas quotas_;  // usage against quotas, with this cycle's starts
  std::optional<VictimPool> pools_[4];  // by VictimPool::Kind, each built once a cycle when needed
  int32_t preemptors_ = 0;
  int64_t preemptors_left_ = 0;
  Decisions out_;
};

}  // namespace

Status SchedulerOptions::Validate() const {
  if (auto p = MakePolicy(policy); !p.ok()) return p.status().WithFieldPrefix("scheduler");
  RETURN_IF_ERROR(weights.Validate());
  RETURN_IF_ERROR(preemption.Validate());
  if (max_reservations < 0) {
    return InvalidArgument("must be >= 0, got " + std::to_string(max_reservations),
                           "scheduler.maxReservations");
  }
  if (max_starvation_reservations < 0) {
    return InvalidArgument("must be >= 0, got " + std::to_string(max_starvation_reservations),
                           "scheduler.maxStarvationReservations");
  }
  if (starvation_threshold < Duration::Zero()) {
    return InvalidArgument("must be >= 0", "scheduler.starvationThreshold");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerOptions options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(Policy policy, MakePolicy(options.policy));
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(options), std::move(policy)));
}

void Scheduler::RefreshCapacity(const ClusterSnapshot& snap) {
  if (snap.nodes_version == capacity_version_ && capacity_.all().num_types() == snap.num_gpu_types &&
      capacity_.all().num_nodes() == snap.nodes.size()) {
    return;
  }
  capacity_.Build(snap.nodes, snap.num_gpu_types, snap.num_leaves, snap.leaf_spine, true);
  capacity_version_ = snap.nodes_version;
}

core::Decisions Scheduler::Cycle(const ClusterSnapshot& snap) {
  RefreshCapacity(snap);
  return CycleRun(options_, policy_, capacity_, snap).Run();
}

}  // namespace muster::scheduler
