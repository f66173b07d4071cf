#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "common/clock.h"
#include "common/random.h"
#include "core/cluster_state.h"
#include "lifecycle/job_lifecycle.h"

namespace muster::sim {
namespace {

using core::JobId;

scheduler::FairShareOptions WithShares(const SimOptions& opts, const ClusterDescription& cluster) {
  scheduler::FairShareOptions f = opts.fairshare;
  if (!opts.equal_shares) f.shares = cluster.shares;
  return f;
}

class Run {
 public:
  Run(const std::vector<TraceJob>& trace, const ClusterDescription& cluster, const SimOptions& opts)
      : trace_(trace), cluster_(cluster), opts_(opts), rng_(opts.seed), fairshare_(WithShares(opts, cluster)) {}

  StatusOr<SimResult> Go() {
    // Priority classes from the trace's priority values (and the share
    // of jobs moved to p1).
    Random pick(opts_.seed ^ 0x5eedc1a55ULL);
    std::set<int64_t> prios;
    for (const TraceJob& t : trace_) {
      const bool high = opts_.high_priority_fraction > 0 && pick.UniformDouble() < opts_.high_priority_fraction;
      priority_.push_back(high ? std::max<int64_t>(t.priority, 1) : t.priority);
      prios.insert(priority_.back());
    }
    core::ClusterConfig config;
    config.priority_classes.clear();
    for (int64_t p : prios) {
      // Every class preemptible (the highest only by a queue reclaiming its
      // guarantee: nothing is above it); every class but the lowest may preempt.
      config.priority_classes.push_back(
          {"p" + std::to_string(p), p * 10'000, opts_.preemption, opts_.preemption && p > *prios.begin()});
    }
    if (config.priority_classes.empty()) config.priority_classes.push_back({"p0", 0});
    config.default_priority_class = config.priority_classes.front().name;
    config.queues = cluster_.quotas;
    state_ = std::make_unique<core::ClusterState>(config);
    // Every node has a simulated agent: the lifecycle follows each attempt
    // until its replicas have ended, as the server's does.
    lifecycle_ = std::make_unique<lifecycle::JobLifecycle>(*state_, clock_, lifecycle::LifecycleOptions(),
                                                           [](core::NodeIndex) { return true; });
    for (const core::NodeSpec& n : cluster_.nodes) {
      auto added = state_->AddNode(n);
      if (!added.ok()) return added.status().WithFieldPrefix("cluster.nodes");
    }
    RETURN_IF_ERROR(PrepareFailures());
    RETURN_IF_ERROR(PrepareReclaims());
    ASSIGN_OR_RETURN(scheduler_, scheduler::Scheduler::Create(opts_.scheduler));

    result_.cluster_summary = cluster_.summary;
    result_.policy = opts_.scheduler.policy;
    result_.time_limit_factor = opts_.time_limit_factor;
    result_.time_limit = opts_.time_limit;
    result_.backfill_by = opts_.scheduler.predict_run_times ? "prediction" : "limit";
    result_.fairshare_weight = opts_.fairshare.weight;
    if (!opts_.equal_shares) result_.shares = cluster_.shares;
    result_.seed = opts_.seed;
    result_.total_gpus = cluster_.total_gpus();
    result_.preemption = opts_.preemption;
    result_.checkpoint_interval_s = opts_.checkpoint_interval.millis() / 1000;
    RETURN_IF_ERROR(Prepare());
    // Which jobs may run on spot nodes, from a source of their own.
    Random spot_rng(opts_.seed ^ 0x5907'5907ULL);
    may_use_spot_.resize(arrivals_.size());
    for (size_t k = 0; k < arrivals_.size(); ++k) may_use_spot_[k] = spot_rng.UniformDouble() < opts_.spot_fraction;
    // Which jobs checkpoint, from another.
    Random checkpoint_rng(opts_.seed ^ 0xC4EC'C4ECULL);
    checkpoints_.resize(arrivals_.size());
    for (size_t k = 0; k < arrivals_.size(); ++k) {
      checkpoints_[k] = checkpoint_rng.UniformDouble() < opts_.checkpointing_fraction;
    }
    RETURN_IF_ERROR(Loop());
    return std::move(result_);
  }

 private:
  struct Arrival {
    int64_t submit_s;
    size_t trace_index;
  };
  // Job ends by time: (end, id, run number); an end of an older run is void.
  using Completion = std::tuple<int64_t, JobId, int32_t>;
  using Completions = std::priority_queue<Completion, std::vector<Completion>, std::greater<>>;

  Status Prepare() {
    const int64_t node_gpus = cluster_.max_gpus_per_node();
    std::vector<Arrival> order;
    for (size_t i = 0; i < trace_.size(); ++i) order.push_back({trace_[i].submit_s, i});
    std::stable_sort(order.begin(), order.end(),
                     [](const Arrival& a, const Arrival& b) { return a.submit_s < b.submit_s; });
    result_.jobs.reserve(order.size());
    for (const Arrival& a : order) {
      const TraceJob& t = trace_[a.trace_index];
      JobResult r;
      r.trace_id = t.id;
      r.submit_s = t.submit_s;
      r.tenant = t.tenant;
      r.priority_class = "p" + std::to_string(priority_[a.trace_index]);
      r.censored = t.censored;
      r.gpus = t.num_gpus;
      if (t.duration_s < 0) {
        r.outcome = Outcome::kSkippedNoDuration;
        r.note = "the trace gives no duration";
      } else if (t.num_gpus == 0) {
        r.outcome = Outcome::kSkippedNoGpus;
        r.note = "requests no GPU";
      } else {
        r.id = static_cast<JobId>(arrivals_.size() + 1);
        const auto [replicas, per] = GangShape(t.num_gpus, node_gpus);
        r.replicas = replicas;
        arrivals_.push_back({t.submit_s, a.trace_index});
        job_result_.push_back(result_.jobs.size());
        per_replica_.push_back(per);
        runs_.emplace_back();
      }
      result_.jobs.push_back(std::move(r));
    }
    if (!arrivals_.empty()) result_.first_submit_s = arrivals_.front().submit_s;
    return Status::Ok();
  }

  // Node failures by time, and every node watched by the liveness rules
  // (only with failures: without, no agent is ever silent).
  Status PrepareFailures() {
    if (opts_.node_failures.empty()) return Status::Ok();
    liveness_ = std::make_unique<lifecycle::NodeLiveness>(
        *state_, clock_, opts_.liveness, [this](core::NodeIndex node) { return lifecycle_->LongestGraceOn(node); });
    const auto count = static_cast<core::NodeIndex>(state_->nodes().size());
    silent_.assign(static_cast<size_t>(count), false);
    for (core::NodeIndex n = 0; n < count; ++n) liveness_->Watch(n, /*synced=*/true);
    for (const SimOptions::NodeFailure& f : opts_.node_failures) {
      core::NodeIndex found = count;
      for (core::NodeIndex n = 0; n < count; ++n) {
        if (state_->nodes()[n].spec.name == f.node) found = n;
      }
      if (found == count) {
        return InvalidArgument("no node named \"" + f.node + "\" in the cluster", "--node-failure");
      }
      failures_.emplace_back(f.at_s, found);
    }
    std::stable_sort(failures_.begin(), failures_.end());
    return Status::Ok();
  }

  // Reclaim notices by time: the listed ones, and the bursts' (nodes drawn
  // from their own seeded source, so that other draws stay as they were).
  Status PrepareReclaims() {
    std::map<std::string, core::NodeIndex> by_name;
    for (core::NodeIndex n = 0; n < static_cast<core::NodeIndex>(state_->nodes().size()); ++n) {
      by_name[state_->nodes()[n].spec.name] = n;
      const auto& f = state_->nodes()[n].spec.features;
      has_spot_ = has_spot_ || std::find(f.begin(), f.end(), "spot") != f.end();
    }
    for (const SimOptions::Reclaim& r : opts_.reclaims) {
      auto it = by_name.find(r.node);
      if (it == by_name.end()) return InvalidArgument("no node named \"" + r.node + "\" in the cluster", "--reclaims");
      notices_.emplace_back(r.at_s, it->second);
    }
    std::vector<core::NodeIndex> spot;
    for (core::NodeIndex n = 0; n < static_cast<core::NodeIndex>(state_->nodes().size()); ++n) {
      const auto& f = state_->nodes()[n].spec.features;
      if (!has_spot_ || std::find(f.begin(), f.end(), "spot") != f.end()) spot.push_back(n);
    }
    Random burst_rng(opts_.seed ^ 0xb0b5'7000ULL);
    for (const SimOptions::ReclaimBurst& b : opts_.reclaim_bursts) {
      std::vector<core::NodeIndex> pick = spot;
      const auto count = static_cast<size_t>(std::llround(b.fraction * static_cast<double>(pick.size())));
      for (size_t i = 0; i < count && i < pick.size(); ++i) {
        std::swap(pick[i], pick[static_cast<size_t>(
                               burst_rng.Uniform(static_cast<int64_t>(i), static_cast<int64_t>(pick.size()) - 1))]);
        notices_.emplace_back(b.at_s + burst_rng.Uniform(0, 59), pick[i]);
      }
    }
    std::stable_sort(notices_.begin(), notices_.end());
    return Status::Ok();
  }

  // A reclaim notice for `node` at t: drained now, gone at the deadline;
  // each job on it checkpoints (writes in turn on the shared storage
  // bandwidth) and stops when its write is done, or at the deadline.
  Status Notice(core::NodeIndex node, int64_t t) {
    ++result_.reclaims;
    RETURN_IF_ERROR(state_->SetSchedulable(node, false));
    const int64_t deadline = t + opts_.reclaim_notice.millis() / 1000;
    // Back after the downtime (never without one); a later notice for a
    // node that is down pushes its return back.
    int64_t& back = back_at_[node];
    if (opts_.reclaim_downtime <= Duration::Zero()) {
      back = INT64_MAX;
    } else if (back != INT64_MAX) {
      back = std::max(back, deadline + opts_.reclaim_downtime.millis() / 1000);
      returns_.emplace(back, node);
    }
    const std::set<JobId> jobs = lifecycle_->AttemptsOn(node);
    for (JobId job : jobs) {
      if (reclaiming_.count({job, runs_[job - 1].number})) continue;  // already given notice on another node
      reclaiming_.insert({job, runs_[job - 1].number});
      const JobResult& r = result_.jobs[job_result_[job - 1]];
      int64_t done = t;
      if (opts_.checkpoint_gbps > 0 && checkpoints_[job - 1]) {
        const double seconds = opts_.checkpoint_gb_per_gpu * static_cast<double>(r.gpus) / opts_.checkpoint_gbps;
        done = std::max(t, storage_free_s_) + static_cast<int64_t>(std::ceil(seconds));
        storage_free_s_ = std::min(done, deadline);
      }
      const bool saved = checkpoints_[job - 1] && done <= deadline;
      reclaim_stops_.insert({saved ? done : deadline, job, runs_[job - 1].number, saved ? t : -1});
    }
    return Status::Ok();
  }

  // A job given notice stops: with its checkpoint (`saved_at` the notice
  // time, whose progress it wrote), or cut off at the deadline.
  Status ReclaimStop(JobId job, int32_t run, int64_t saved_at, int64_t t) {
    reclaiming_.erase({job, run});
    if (runs_[job - 1].number != run || state_->Find(job)->state != core::JobState::kRunning) return Status::Ok();
    JobResult& r = result_.jobs[job_result_[job - 1]];
    ++r.reclaims;
    ++result_.reclaim_stops;
    if (saved_at >= 0) ++result_.reclaim_checkpointed;
    runs_[job - 1].saved_at_s = saved_at;
    const int64_t lost_before = r.lost_gpu_seconds;
    const std::vector<core::Allocation> allocs = state_->Find(job)->allocations;
    Tell(job, "Reclaimed", "");
    lifecycle::Effects fx;
    lifecycle_->Stop(job, std::nullopt, /*requeue=*/true, "NodeReclaimed", lifecycle::StopPace::kAtOnce, fx);
    RETURN_IF_ERROR(Settle(fx, t));
    if (state_->Find(job)->state != core::JobState::kPending) {
      return Violation("reclaimed job " + std::to_string(job) + " is not pending again", t);
    }
    result_.reclaim_lost_gpu_seconds += r.lost_gpu_seconds - lost_before;
    return CheckNodes(allocs, t);
  }

  Status Violation(const std::string& what, int64_t t) const {
    return Internal("invariant violated at event " + std::to_string(result_.events) + " (t=" + std::to_string(t) +
                    "s, seed " + std::to_string(opts_.seed) + "): " + what);
  }

  // Checks the nodes one event touched: capacity within bounds and every
  // GPU device held by exactly the job that lists it.
  Status CheckNodes(const std::vector<core::Allocation>& allocs, int64_t t) const {
    for (const core::Allocation& a : allocs) {
      if (Status s = state_->CheckNode(a.node); !s.ok()) return Violation(s.message(), t);
    }
    return Status::Ok();
  }

  Status Event(int64_t t) {
    ++result_.events;
    if (opts_.audit_every > 0 && result_.events % opts_.audit_every == 0) {
      ++result_.audits;
      if (Status s = state_->CheckInvariants(); !s.ok()) return Violation(s.message(), t);
    }
    return Status::Ok();
  }

  Status Loop() {
    Completions completions;
    size_t next = 0;
    while (next < arrivals_.size() || !completions.empty() || next_failure_ < failures_.size() || !checks_.empty() ||
           next_notice_ < notices_.size() || !reclaim_stops_.empty() || !returns_.empty()) {
      int64_t t = INT64_MAX;
      if (next < arrivals_.size()) t = arrivals_[next].submit_s;
      if (!completions.empty()) t = std::min(t, std::get<0>(completions.top()));
      if (next_failure_ < failures_.size()) t = std::min(t, failures_[next_failure_].first);
      if (!checks_.empty()) t = std::min(t, *checks_.begin());
      if (next_notice_ < notices_.size()) t = std::min(t, notices_[next_notice_].first);
      if (!reclaim_stops_.empty()) t = std::min(t, std::get<0>(*reclaim_stops_.begin()));
      if (!returns_.empty()) t = std::min(t, returns_.begin()->first);
      const Time now = Time::FromSeconds(t);
      clock_.Set(now);
      // Charge fair-share usage for the time since the last event with what
      // ran during it, before this instant's completions leave the running
      // set (charging at the next cycle instead would miss every job that
      // ends exactly between two cycles).
      if (fairshare_.enabled()) fairshare_.Advance(now, state_->GpusByQueue());

      while (!completions.empty() && std::get<0>(completions.top()) == t) {
        const auto [end, id, run] = completions.top();
        completions.pop();
        if (run != runs_[id - 1].number) continue;  // that run was preempted
        JobResult& r = result_.jobs[job_result_[id - 1]];
        const JobRun& jr = runs_[id - 1];
        // A restart cost paid by a run that finished is work lost to preemption
        // (a preempted run's is counted when it is stopped; a resize's when
        // the job was resized).
        if (jr.segment_s == jr.start_s) {
          r.lost_gpu_seconds += jr.overhead_s * r.gpus;
          result_.lost_gpu_seconds += jr.overhead_s * r.gpus;
        }
        elastic_running_.erase(id);
        NoteSize(id, t, jr.replicas, r.replicas);
        const core::JobRecord* rec = state_->Find(id);
        const std::vector<core::Allocation> allocs = rec->allocations;
        // Every replica reports its end: exit 0, or stopped at the time limit.
        lifecycle::ReplicaExit exit;
        if (r.outcome == Outcome::kTimeout) exit.cause = lifecycle::ExitCause::kTimeLimit;
        RETURN_IF_ERROR(EndReplicas(id, exit, t));
        if (state_->Find(id)->state !=
            (r.outcome == Outcome::kTimeout ? core::JobState::kTimeout : core::JobState::kCompleted)) {
          return Violation("job " + std::to_string(id) + " did not end as its run did", t);
        }
        r.end_s = t;
        result_.last_end_s = std::max(result_.last_end_s, t);
        RETURN_IF_ERROR(CheckNodes(allocs, t));
        RETURN_IF_ERROR(Event(t));
      }
      while (next_failure_ < failures_.size() && failures_[next_failure_].first == t) {
        Silence(failures_[next_failure_++].second, t);
        RETURN_IF_ERROR(Event(t));
      }
      while (!returns_.empty() && returns_.begin()->first == t) {
        const core::NodeIndex node = returns_.begin()->second;
        returns_.erase(returns_.begin());
        if (back_at_[node] == t && (silent_.empty() || !silent_[node]))
          RETURN_IF_ERROR(state_->SetSchedulable(node, true));
        RETURN_IF_ERROR(Event(t));
      }
      while (next_notice_ < notices_.size() && notices_[next_notice_].first == t) {
        RETURN_IF_ERROR(Notice(notices_[next_notice_++].second, t));
        RETURN_IF_ERROR(Event(t));
      }
      while (!reclaim_stops_.empty() && std::get<0>(*reclaim_stops_.begin()) == t) {
        const auto [at, job, run, saved_at] = *reclaim_stops_.begin();
        reclaim_stops_.erase(reclaim_stops_.begin());
        RETURN_IF_ERROR(ReclaimStop(job, run, saved_at, t));
        RETURN_IF_ERROR(Event(t));
      }
      if (!checks_.empty() && *checks_.begin() == t) {
        checks_.erase(checks_.begin());
        RETURN_IF_ERROR(CheckLiveness(t));
        RETURN_IF_ERROR(Event(t));
      }
      while (next < arrivals_.size() && arrivals_[next].submit_s == t) {
        RETURN_IF_ERROR(Submit(next, now));
        ++next;
        RETURN_IF_ERROR(Event(t));
      }
      if (state_->pending_count() == 0 && !MayGrow()) continue;
      result_.max_pending = std::max<int64_t>(result_.max_pending, state_->pending_count());

      // Preemptions stop their victims at once: cycle again so the
      // preemptors start on the capacity held for them.
      for (int round = 0; round < 64; ++round) {
        bool preempted = false;
        RETURN_IF_ERROR(Cycle(t, now, completions, preempted));
        if (!preempted) break;
      }
    }
    ++result_.audits;
    if (Status s = state_->CheckInvariants(); !s.ok()) return Violation(s.message(), result_.last_end_s);
    if (opts_.stories) {
      for (JobId id = 1; id <= static_cast<JobId>(stories_.size()); ++id) {
        stories_[id - 1].state = core::JobStateName(state_->Find(id)->state);
      }
      result_.stories = std::move(stories_);
    }
    if (state_->pending_count() != 0 || state_->running_count() != 0) {
      return Violation(std::to_string(state_->pending_count()) + " jobs pending and " +
                           std::to_string(state_->running_count()) + " running when the trace is done",
                       result_.last_end_s);
    }
    return Status::Ok();
  }

  // One scheduling cycle at t, its decisions applied.
  Status Cycle(int64_t t, Time now, Completions& completions, bool& preempted) {
    core::ClusterSnapshot snap = state_->Snapshot(clock_.Now());
    for (int32_t q = fairshare_.named(); q < state_->num_queues(); ++q) fairshare_.NameQueue(q, state_->QueueName(q));
    if (fairshare_.enabled()) {
      points_ = fairshare_.Points(state_->num_queues(), snap.quotas, core::SchedulableGpus(snap));
      snap.queue_fairshare = points_;
    }
    shares_ = fairshare_.Shares(state_->num_queues());
    snap.queue_shares = shares_;
    const core::Decisions d = scheduler_->Cycle(snap);
    ++result_.cycles;
    result_.reservations_made += d.stats.reservations;
    for (const core::Reservation& res : d.reservations) {
      JobResult& r = result_.jobs[job_result_[res.job - 1]];
      if (r.promised_start_s < 0 && r.start_s < 0) r.promised_start_s = res.start.millis() / 1000;
    }
    result_.backfilled += d.stats.backfilled;
    for (const core::JobFailure& f : d.failures) {
      RETURN_IF_ERROR(state_->EndPending(f.job, f.state, now, f.reason));
      result_.jobs[job_result_[f.job - 1]].note = f.reason;
      RETURN_IF_ERROR(Event(t));
    }
    for (const core::PendingReason& reason : d.reasons) {
      if (reason.code != core::ReasonCode::kUnschedulable) continue;
      JobResult& r = result_.jobs[job_result_[reason.job - 1]];
      r.outcome = Outcome::kUnschedulable;
      r.note =
          core::FormatReason(reason, state_->GpuTypeName(reason.gpu_type), now, state_->FeatureNames(reason.features));
      RETURN_IF_ERROR(state_->EndPending(reason.job, core::JobState::kFailed, now, r.note));
      RETURN_IF_ERROR(Event(t));
    }
    for (const core::Preemption& p : d.preemptions) RETURN_IF_ERROR(Preempt(p, t, completions));
    preempted = !d.preemptions.empty();
    for (const core::Binding& b : d.bindings) {
      if (Status s = state_->Bind(b, now); !s.ok()) return Violation(s.message(), t);
      RETURN_IF_ERROR(CheckNodes(b.allocations, t));
      lifecycle::Effects fx;
      JobResult& r = result_.jobs[job_result_[b.job - 1]];
      const int32_t attempt = static_cast<int32_t>(r.stopped_runs.size()) + 1;
      if (Status s = lifecycle_->Start(b.job, attempt, Terms(b.job), /*durable=*/true, fx); !s.ok()) {
        return Violation(s.message(), t);
      }
      Tell(b.job, "Started", "");
      const TraceJob& tj = trace_[arrivals_[b.job - 1].trace_index];
      if (r.start_s < 0) r.start_s = t;
      r.last_start_s = t;
      std::set<core::NodeIndex> nodes;
      for (const core::Allocation& a : b.allocations) nodes.insert(a.node);
      r.nodes = static_cast<int32_t>(nodes.size());
      JobRun& jr = runs_[b.job - 1];
      if (jr.remaining_s < 0) jr.remaining_s = RunTime(tj.duration_s);  // drawn once
      jr.overhead_s = r.stopped_runs.empty() ? 0 : opts_.restart_cost.millis() / 1000;
      jr.replicas = 0;
      for (const core::Allocation& a : b.allocations) jr.replicas += a.replicas;
      jr.limit_end_s = t + state_->Find(b.job)->spec.time_limit.millis() / 1000;
      if (r.min_replicas > 0) elastic_running_.insert(b.job);
      // An elastic job below its full size progresses more slowly.
      int64_t run = AtSize(jr.remaining_s, jr.replicas, r.replicas) + jr.overhead_s;
      const int64_t limit = jr.limit_end_s - t;
      r.outcome = Outcome::kCompleted;
      if (run > limit) {
        run = limit;
        r.outcome = Outcome::kTimeout;
      }
      ++jr.number;
      jr.start_s = t;
      jr.segment_s = t;
      jr.end_s = t + run;
      result_.busy_gpu_seconds += run * per_replica_[b.job - 1] * jr.replicas;
      r.resized_gpu_seconds += run * per_replica_[b.job - 1] * (jr.replicas - r.replicas);
      NoteSize(b.job, t, r.replicas, jr.replicas);
      completions.push({t + run, b.job, jr.number});
      if (opts_.preemption && checkpoints_[b.job - 1]) {
        RETURN_IF_ERROR(state_->NoteCheckpoint(b.job, Time::Zero(), opts_.checkpoint_interval));
      }
      RETURN_IF_ERROR(Event(t));
    }
    for (const core::Growth& g : d.growths) {
      if (Status s = state_->Grow(g.job, g.allocations, now); !s.ok()) return Violation(s.message(), t);
      RETURN_IF_ERROR(CheckNodes(g.allocations, t));
      lifecycle::Effects fx;
      lifecycle_->Grow(g.job, fx);
      lifecycle_->MarkGrowthDurable(g.job, lifecycle_->Find(g.job)->number);
      RETURN_IF_ERROR(Settle(std::move(fx), t));
      ++result_.growths;
      Resize(g.job, state_->running().at(g.job).replicas(), t, completions);
      RETURN_IF_ERROR(Event(t));
    }
    return Status::Ok();
  }

  // An elastic job's run went from `from` to `to` replicas at t.
  void NoteSize(JobId job, int64_t t, int32_t from, int32_t to) {
    if (from != to)
      result_.jobs[job_result_[job - 1]].size_changes.emplace_back(t, (to - from) * per_replica_[job - 1]);
  }

  // Seconds to make `remaining_s` of progress (at full size) with
  // `replicas` of `full`.
  static int64_t AtSize(int64_t remaining_s, int32_t replicas, int32_t full) {
    if (replicas <= 0 || replicas >= full) return remaining_s;
    return (remaining_s * full + replicas - 1) / replicas;
  }

  // Progress (at full size) the current run of `job` made from its segment's
  // start (after the segment's overhead) to t.
  int64_t Progress(JobId job, int64_t t) const {
    const JobRun& jr = runs_[job - 1];
    const JobResult& r = result_.jobs[job_result_[job - 1]];
    const int64_t worked = std::max<int64_t>(0, t - jr.segment_s - jr.overhead_s);
    return jr.replicas >= r.replicas ? worked : worked * jr.replicas / r.replicas;
  }

  // Elastic `job` runs on `replicas` from t: the progress so far is kept
  // (the group re-forms from a checkpoint taken for the resize), the rest
  // goes at the new size after the restart cost; its completion moves.
  void Resize(JobId job, int32_t replicas, int64_t t, Completions& completions) {
    JobRun& jr = runs_[job - 1];
    JobResult& r = result_.jobs[job_result_[job - 1]];
    const int64_t g = per_replica_[job - 1];
    jr.remaining_s = std::max<int64_t>(0, jr.remaining_s - Progress(job, t));
    // What the old plan counted from t on, at the old size.
    result_.busy_gpu_seconds -= (jr.end_s - t) * g * jr.replicas;
    r.resized_gpu_seconds -= (jr.end_s - t) * g * (jr.replicas - r.replicas);
    NoteSize(job, t, jr.replicas, replicas);
    jr.replicas = replicas;
    jr.segment_s = t;
    jr.overhead_s = opts_.restart_cost.millis() / 1000;
    r.lost_gpu_seconds += jr.overhead_s * g * replicas;
    result_.lost_gpu_seconds += jr.overhead_s * g * replicas;
    int64_t run = AtSize(jr.remaining_s, replicas, r.replicas) + jr.overhead_s;
    r.outcome = Outcome::kCompleted;
    if (t + run > jr.limit_end_s) {
      run = std::max<int64_t>(0, jr.limit_end_s - t);
      r.outcome = Outcome::kTimeout;
    }
    jr.end_s = t + run;
    result_.busy_gpu_seconds += run * g * replicas;
    r.resized_gpu_seconds += run * g * (replicas - r.replicas);
    ++r.resizes;
    ++jr.number;
    completions.push({jr.end_s, job, jr.number});
  }

  // Stops the victims of `p` at once: each keeps the progress of its last
  // checkpoint and goes back to the queue; the preemptor's placement is
  // held for it.
  Status Preempt(const core::Preemption& p, int64_t t, Completions& completions) {
    RETURN_IF_ERROR(state_->Nominate(p.job, p.allocations, p.victims));
    Tell(p.job, "Preempting", "");
    // Elastic jobs give back their newest replicas, which stop at once.
    for (const core::Shrink& sh : p.shrinks) {
      const std::vector<core::Allocation> allocs = state_->Find(sh.job)->allocations;
      lifecycle::Effects fx;
      lifecycle_->Shrink(sh.job, sh.keep, "Shrinking", fx);
      RETURN_IF_ERROR(Settle(std::move(fx), t));
      if (state_->running().at(sh.job).replicas() != sh.keep) {
        return Violation("job " + std::to_string(sh.job) + " did not shrink to " + std::to_string(sh.keep), t);
      }
      ++result_.shrinks;
      Resize(sh.job, sh.keep, t, completions);
      RETURN_IF_ERROR(CheckNodes(allocs, t));
      RETURN_IF_ERROR(Event(t));
    }
    for (JobId v : p.victims) {
      if (std::any_of(p.shrinks.begin(), p.shrinks.end(), [&](const core::Shrink& sh) { return sh.job == v; }))
        continue;
      ++result_.preemptions;
      ++result_.jobs[job_result_[v - 1]].preemptions;
      Tell(v, "Preempted", "");
      const std::vector<core::Allocation> allocs = state_->Find(v)->allocations;
      // It stops at once: the stop, then every replica's end, and the
      // lifecycle puts it back in the queue.
      lifecycle::Effects fx;
      lifecycle_->Stop(v, std::nullopt, /*requeue=*/true, "Preempted", lifecycle::StopPace::kAtOnce, fx);
      RETURN_IF_ERROR(Settle(fx, t));
      if (state_->Find(v)->state != core::JobState::kPending) {
        return Violation("preempted job " + std::to_string(v) + " is not pending again", t);
      }
      RETURN_IF_ERROR(CheckNodes(allocs, t));
      RETURN_IF_ERROR(Event(t));
    }
    return Status::Ok();
  }

  // A run of `job` ended early at t (preempted, or a node of it lost): it
  // keeps the progress of its last checkpoint and its completion is void.
  void Interrupted(JobId job, int64_t t) {
    const int64_t interval = IntervalOf(job);
    JobRun& jr = runs_[job - 1];
    JobResult& r = result_.jobs[job_result_[job - 1]];
    elastic_running_.erase(job);
    NoteSize(job, t, jr.replicas, r.replicas);                 // the run's edges end it at its full size
    const int64_t gpus = per_replica_[job - 1] * jr.replicas;  // its present size
    if (jr.segment_s > jr.start_s) {
      // An elastic job that was resized: the progress of its earlier sizes
      // was kept at each resize; this size's counts to its last checkpoint.
      const int64_t elapsed = t - jr.segment_s;
      const int64_t progress = Progress(job, t);
      const int64_t saved = interval > 0 ? progress / interval * interval : 0;
      jr.remaining_s -= saved;
      const int64_t saved_wall = AtSize(saved, jr.replicas, r.replicas);
      result_.busy_gpu_seconds -= (jr.end_s - t) * gpus;
      r.resized_gpu_seconds -= (jr.end_s - t) * (gpus - r.gpus);
      result_.lost_gpu_seconds += std::max<int64_t>(0, elapsed - saved_wall) * gpus;
      r.lost_gpu_seconds += std::max<int64_t>(0, elapsed - saved_wall) * gpus;
      r.stopped_runs.emplace_back(jr.start_s, t);
      jr.saved_at_s = -1;
      ++jr.number;
      return;
    }
    const int64_t elapsed = t - jr.start_s;
    const int64_t progress = Progress(job, t);
    int64_t saved = interval > 0 ? progress / interval * interval : 0;
    if (jr.saved_at_s >= jr.start_s)
      saved = std::max(saved, std::max<int64_t>(0, jr.saved_at_s - jr.start_s - jr.overhead_s));
    jr.saved_at_s = -1;
    jr.remaining_s -= saved;
    const int64_t saved_wall = AtSize(saved, jr.replicas, r.replicas);
    result_.busy_gpu_seconds -= (jr.end_s - t) * gpus;
    r.resized_gpu_seconds -= (jr.end_s - t) * (gpus - r.gpus);
    result_.lost_gpu_seconds += (elapsed - saved_wall) * gpus;
    r.lost_gpu_seconds += (elapsed - saved_wall) * gpus;
    r.stopped_runs.emplace_back(jr.start_s, t);
    ++jr.number;  // its completion is void
  }

  // Node `node`'s agent goes silent at t, for good: the liveness rules are
  // checked again when it may have become unreachable, lost, or released
  // from a mass-silence hold.
  void Silence(core::NodeIndex node, int64_t t) {
    HearAll();  // its last sync (and every other agent's) was now
    silent_[node] = true;
    const lifecycle::LivenessOptions& o = opts_.liveness;
    // Lost once past lostAfter and fenced (the simulator's tasks have no grace).
    const Duration lost = std::max(o.lost_after, o.lease + lifecycle::NodeLiveness::kFenceSlack);
    for (Duration d : {o.unreachable_after, lost, lost + o.mass_silence_hold}) {
      checks_.insert(t + d.millis() / 1000 + 1);  // the rules compare strictly: a second later
    }
  }

  void HearAll() {
    for (core::NodeIndex n = 0; n < static_cast<core::NodeIndex>(silent_.size()); ++n) {
      if (!silent_[static_cast<size_t>(n)]) liveness_->Heard(n);
    }
  }

  // The agents that are not silent synced just now; nodes silent for long
  // enough become unreachable (no new work) or lost (their gangs requeued).
  Status CheckLiveness(int64_t t) {
    HearAll();
    lifecycle::Effects fx;
    const lifecycle::NodeLiveness::SweepResult swept = liveness_->Sweep(fx);
    for (core::NodeIndex n : swept.changed) {
      RETURN_IF_ERROR(state_->SetSchedulable(n, liveness_->Of(n) == lifecycle::NodeCondition::kReady));
    }
    for (core::NodeIndex n : swept.lost) {
      ++result_.nodes_lost;
      RETURN_IF_ERROR(state_->SetSchedulable(n, false));
      std::set<JobId> jobs = lifecycle_->AttemptsOn(n);
      for (JobId job : jobs) ++result_.jobs[job_result_[job - 1]].node_losses;
      lifecycle_->NodeLost(n, liveness_->SilentTooLong(n), fx);
    }
    return Settle(fx, t);
  }

  // Carries out a lifecycle step's effects at t, as the agents would: every
  // stop released to a node whose agent is not silent ends its replica at
  // once (stopped); then again for what those ends changed.
  Status Settle(lifecycle::Effects fx, int64_t t) {
    while (!fx.empty()) {
      Record(fx, t);
      std::set<core::NodeIndex> touched(fx.touched.begin(), fx.touched.end());
      fx = lifecycle::Effects();
      for (core::NodeIndex node : touched) {
        if (!silent_.empty() && silent_[node]) continue;
        const std::set<JobId> jobs = lifecycle_->AttemptsOn(node);  // a copy: ends erase attempts
        for (JobId job : jobs) {
          const lifecycle::Attempt* first = lifecycle_->Find(job);
          if (first == nullptr) continue;
          const bool stopped = first->StopReleased(clock_.Now());
          // An end may end the attempt (and erase it): look it up again for
          // every replica. Replicas an elastic job gives back stop too.
          for (int32_t i = 0;; ++i) {
            const lifecycle::Attempt* a = lifecycle_->Find(job);
            if (a == nullptr || i >= static_cast<int32_t>(a->replicas.size())) break;
            const lifecycle::Replica& rep = a->replicas[i];
            if (rep.node != node || rep.ended || !(stopped || rep.leaving)) continue;
            lifecycle::ReplicaExit exit;
            exit.cause = lifecycle::ExitCause::kStoppedByAgent;
            exit.signal = 15;
            lifecycle_->ReplicaEnded(job, i, exit, fx);
          }
        }
      }
    }
    return Status::Ok();
  }

  // What a lifecycle step did to jobs: their stories, and runs ended early.
  void Record(const lifecycle::Effects& fx, int64_t t) {
    for (const lifecycle::LifecycleEvent& e : fx.events) {
      if (e.job != 0) Tell(e.job, lifecycle::EventTypeName(e.type), e.reason);
    }
    for (const lifecycle::AttemptEnd& e : fx.ended) {
      if (!e.terminal) Interrupted(e.job, t);
      if (!opts_.stories) continue;
      const lifecycle::AttemptRecord& r = e.record;
      std::vector<std::pair<std::string, std::string>> replicas;
      for (const auto& rep : r.replicas) replicas.emplace_back(state_->nodes()[rep.node].spec.name, rep.result);
      stories_[e.job - 1].attempts.push_back(
          AttemptLine(r.number, r.requeued ? "REQUEUED" : core::JobStateName(r.state), r.reason, replicas));
    }
  }

  void Tell(JobId job, const std::string& type, const std::string& reason) {
    if (opts_.stories) stories_[job - 1].events.push_back(EventLine(type, reason));
  }

  // Every replica of `job`'s attempt ends with `exit`, as its agent would report.
  Status EndReplicas(JobId job, const lifecycle::ReplicaExit& exit, int64_t t) {
    const lifecycle::Attempt* a = lifecycle_->Find(job);
    if (a == nullptr) return Violation("job " + std::to_string(job) + " runs without an attempt", t);
    const int32_t replicas = static_cast<int32_t>(a->replicas.size());
    lifecycle::Effects fx;
    for (int32_t i = 0; i < replicas; ++i) lifecycle_->ReplicaEnded(job, i, exit, fx);
    if (lifecycle_->Find(job) != nullptr) return Violation("job " + std::to_string(job) + "'s attempt did not end", t);
    return Settle(std::move(fx), t);
  }

  // A trace job is never retried: a run ends as the trace says.
  lifecycle::JobTerms Terms(JobId job) const {
    lifecycle::JobTerms terms;
    terms.retry.limit = 0;
    terms.grace = Duration::Zero();
    terms.time_limit = state_->Find(job)->spec.time_limit;
    return terms;
  }

  int64_t LimitSeconds(int64_t duration_s) const {
    if (!opts_.time_limit.is_infinite()) return std::max<int64_t>(1, opts_.time_limit.millis() / 1000);
    return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(duration_s * opts_.time_limit_factor)));
  }

  int64_t RunTime(int64_t duration_s) {
    if (opts_.runtime_noise <= 0) return duration_s;
    const double f = 1.0 + opts_.runtime_noise * (2.0 * rng_.UniformDouble() - 1.0);
    return std::max<int64_t>(0, std::llround(duration_s * f));
  }

  Status Submit(size_t k, Time now) {
    const TraceJob& t = trace_[arrivals_[k].trace_index];
    const JobId id = static_cast<JobId>(k + 1);
    JobResult& r = result_.jobs[job_result_[k]];
    core::JobSpec spec;
    spec.name = t.id;
    spec.queue = t.tenant.empty() ? "default" : t.tenant;
    spec.priority_class = r.priority_class;
    spec.replicas = r.replicas;
    spec.per_replica.gpus = per_replica_[k];
    spec.time_limit = Duration::Seconds(LimitSeconds(t.duration_s));
    spec.user = t.user.empty() ? spec.queue + "/" + std::to_string(t.num_gpus) : t.user;
    if (opts_.elastic_min > 0 && r.replicas >= 2) {
      r.min_replicas = std::clamp(static_cast<int32_t>(std::ceil(r.replicas * opts_.elastic_min)), 1, r.replicas);
      if (r.min_replicas < r.replicas) {
        spec.min_replicas = r.min_replicas;
        spec.time_limit = Duration::Seconds(LimitSeconds(t.duration_s * r.replicas / r.min_replicas));
      } else {
        r.min_replicas = 0;
      }
    }
    spec.known_duration = Duration::Seconds(t.duration_s);
    if (has_spot_ && !may_use_spot_[k]) spec.required_features = {"on-demand"};
    if (checkpoints_[k] && opts_.checkpoint_interval > Duration::Zero())
      spec.checkpoint_interval = opts_.checkpoint_interval;
    auto submitted = state_->Submit(std::move(spec), now, id);
    if (!submitted.ok()) {
      return InvalidArgument("trace job " + t.id + ": " + submitted.status().ToString());
    }
    if (opts_.stories) {
      stories_.push_back({t.id, {}, {}, ""});
      Tell(id, "Submitted", "");
    }
    return Status::Ok();
  }

  const std::vector<TraceJob>& trace_;
  const ClusterDescription& cluster_;
  const SimOptions& opts_;
  Random rng_;
  SimClock clock_;
  std::unique_ptr<core::ClusterState> state_;
  std::unique_ptr<lifecycle::JobLifecycle> lifecycle_;
  std::unique_ptr<lifecycle::NodeLiveness> liveness_;          // with node failures only
  std::vector<std::pair<int64_t, core::NodeIndex>> failures_;  // (time, node), by time
  size_t next_failure_ = 0;
  std::vector<std::pair<int64_t, core::NodeIndex>> notices_;  // reclaim notices (time, node), by time
  size_t next_notice_ = 0;
  // Stops of jobs given notice: (time, job, run, notice time if it
  // checkpointed, else -1); the (job, run) pairs given notice; times
  // reclaimed nodes come back; when the checkpoint storage is next free.
  std::set<std::tuple<int64_t, JobId, int32_t, int64_t>> reclaim_stops_;
  std::set<std::pair<JobId, int32_t>> reclaiming_;
  std::multimap<int64_t, core::NodeIndex> returns_;
  std::map<core::NodeIndex, int64_t> back_at_;  // when a reclaimed node returns (INT64_MAX: never)
  int64_t storage_free_s_ = 0;
  bool has_spot_ = false;           // the cluster has spot nodes
  std::vector<bool> may_use_spot_;  // by arrival: the job may run on them
  std::vector<bool> checkpoints_;   // by arrival (job id - 1): the job checkpoints
  // How often job `job` checkpoints, in seconds (0: never).
  int64_t IntervalOf(JobId job) const { return checkpoints_[job - 1] ? opts_.checkpoint_interval.millis() / 1000 : 0; }
  std::vector<bool> silent_;       // by node: its agent went silent
  std::set<int64_t> checks_;       // times the liveness rules are checked again
  std::vector<JobStory> stories_;  // id - 1 -> its story (with opts_.stories)
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  SimResult result_;
  scheduler::FairShare fairshare_;
  std::vector<int64_t> points_;
  std::vector<double> shares_;
  std::vector<Arrival> arrivals_;     // runnable jobs in submit order; id = index + 1
  std::vector<size_t> job_result_;    // id - 1 -> index in result_.jobs
  std::vector<int64_t> per_replica_;  // id - 1 -> GPUs per replica
  std::vector<int64_t> priority_;     // trace index -> priority used
  // Whether some running elastic job is below its full size.
  bool MayGrow() const {
    for (JobId job : elastic_running_) {
      if (runs_[job - 1].replicas < result_.jobs[job_result_[job - 1]].replicas) return true;
    }
    return false;
  }
  std::set<JobId> elastic_running_;
  struct JobRun {
    int64_t remaining_s = -1;  // progress still to make (-1: never started)
    int32_t replicas = 0;      // its present size
    int64_t segment_s = 0;     // when it last started or was resized
    int64_t limit_end_s = 0;   // its time limit ends
    int32_t number = 0;        // runs so far; a completion of an older run is void
    int64_t start_s = 0, end_s = 0;
    int64_t overhead_s = 0;   // restart cost at the start of this run
    int64_t saved_at_s = -1;  // a reclaim checkpoint holds the progress made until then
  };
  std::vector<JobRun> runs_;  // id - 1 -> its current run
};

}  // namespace

Status SimOptions::Validate() const {
  if (Status s = scheduler.Validate(); !s.ok()) {
    // The policy is a flag of `muster sim`.
    return s.field() == "scheduler.policy" ? InvalidArgument(s.message(), "--policy") : s;
  }
  RETURN_IF_ERROR(fairshare.Validate());
  if (!(time_limit_factor > 0) || !std::isfinite(time_limit_factor)) {
    return InvalidArgument("must be a positive number", "--time-limit-factor");
  }
  if (time_limit <= Duration::Zero()) return InvalidArgument("must be positive", "--time-limit");
  if (!(runtime_noise >= 0 && runtime_noise < 1)) {
    return InvalidArgument("must be in [0, 1)", "--runtime-noise");
  }
  if (audit_every < 0) return InvalidArgument("must be >= 0", "--audit-every");
  if (checkpoint_interval < Duration::Zero()) return InvalidArgument("must be >= 0", "--checkpoint-interval");
  if (restart_cost < Duration::Zero()) return InvalidArgument("must be >= 0", "--restart-cost");
  if (!(elastic_min >= 0 && elastic_min <= 1)) return InvalidArgument("must be in [0, 1]", "--elastic-min");
  if (!(high_priority_fraction >= 0 && high_priority_fraction <= 1)) {
    return InvalidArgument("must be in [0, 1]", "--high-priority-fraction");
  }
  for (const NodeFailure& f : node_failures) {
    if (f.at_s < 0 || f.at_s > kMaxTraceSeconds) return InvalidArgument("time out of range", "--node-failure");
  }
  for (const Reclaim& r : reclaims) {
    if (r.at_s < 0 || r.at_s > kMaxTraceSeconds) return InvalidArgument("time out of range", "--reclaims");
  }
  for (const ReclaimBurst& b : reclaim_bursts) {
    if (b.at_s < 0 || b.at_s > kMaxTraceSeconds) return InvalidArgument("time out of range", "--reclaim-burst");
    if (!(b.fraction > 0 && b.fraction <= 1)) return InvalidArgument("fraction must be in (0, 1]", "--reclaim-burst");
  }
  if (reclaim_notice < Duration::Zero()) return InvalidArgument("must be >= 0", "--reclaim-notice");
  if (reclaim_downtime < Duration::Zero()) return InvalidArgument("must be >= 0", "--reclaim-downtime");
  if (!(checkpoint_gb_per_gpu >= 0) || !std::isfinite(checkpoint_gb_per_gpu)) {
    return InvalidArgument("must be a number >= 0", "--checkpoint-gb-per-gpu");
  }
  if (!(checkpoint_gbps >= 0) || !std::isfinite(checkpoint_gbps)) {
    return InvalidArgument("must be a number >= 0", "--checkpoint-gbps");
  }
  if (!(spot_fraction >= 0 && spot_fraction <= 1)) return InvalidArgument("must be in [0, 1]", "--spot-fraction");
  if (!(checkpointing_fraction >= 0 && checkpointing_fraction <= 1)) {
    return InvalidArgument("must be in [0, 1]", "--checkpointing-fraction");
  }
  if (liveness.unreachable_after < Duration::Seconds(1))
    return InvalidArgument("must be at least 1s", "--unreachable-after");
  if (liveness.lease < Duration::Seconds(1)) return InvalidArgument("must be at least 1s", "--lease");
  if (liveness.lost_after <= liveness.unreachable_after || liveness.lost_after <= liveness.lease) {
    return InvalidArgument("must be longer than --unreachable-after and --lease", "--lost-after");
  }
  return Status::Ok();
}

std::pair<int32_t, int64_t> GangShape(int64_t gpus, int64_t node_gpus) {
  if (gpus <= node_gpus) return {1, gpus};
  for (int64_t d = node_gpus; d >= 1; --d) {
    if (gpus % d == 0) return {static_cast<int32_t>(gpus / d), d};
  }
  return {static_cast<int32_t>(gpus), 1};
}

std::vector<JobEdge> JobEdges(const std::vector<JobResult>& jobs) {
  std::vector<JobEdge> edges;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobResult& j = jobs[i];
    if (!j.Ran()) continue;
    edges.push_back({j.submit_s, i, +1, 0});
    for (const auto& [a, b] : j.stopped_runs) {  // runs, each followed by a wait
      edges.push_back({a, i, -1, j.gpus});
      edges.push_back({b, i, +1, -j.gpus});
    }
    edges.push_back({j.LastStart(), i, -1, j.gpus});
    edges.push_back({j.end_s, i, 0, -j.gpus});
    for (const auto& [t, delta] : j.size_changes) edges.push_back({t, i, 0, delta});
  }
  std::stable_sort(edges.begin(), edges.end(), [](const JobEdge& a, const JobEdge& b) { return a.t < b.t; });
  return edges;
}

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kCompleted:
      return "completed";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kUnschedulable:
      return "unschedulable";
    case Outcome::kSkippedNoDuration:
      return "skipped-no-duration";
    case Outcome::kSkippedNoGpus:
      return "skipped-no-gpus";
  }
  return "?";
}

StatusOr<SimResult> Simulate(const std::vector<TraceJob>& trace, const ClusterDescription& cluster,
                             const SimOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  return Run(trace, cluster, options).Go();
}

}  // namespace muster::sim
