// Lifecycle transcripts (test/transcripts/lifecycle/*.txt): a job's life
// after the scheduler's decision, driven by a simulated clock through the
// real scheduler, JobLifecycle and NodeLiveness, and printed as text.
// Format and rewriting (MUSTER_REWRITE=1): test/transcript_file.h.
//
// Commands:
//   config [signals=N] [bandwidth=BYTES] [lost=DUR] [unreachable=DUR] [lease=DUR] [fraction=F]
//          [window=DUR] [hold=DUR]          before any node
//   node NAME gpus=N [leaf=L]               a node; with `agent`, an agent serves it
//   agent NAME                              its agent syncs for the first time (now)
//   submit ID gpus=G [replicas=R] [min=M] [limit=DUR] [class=C] [retries=N]
//          [backoff=DUR] [factor=N] [max=DUR] [grace=DUR] [fail-codes=C,C] [oom-retry]
//          [batch]                          (batch: Slurm's model, replica 0's end decides)
//   advance DUR                             moves the simulated clock
//   cycle                                   a scheduling cycle; binds start attempts
//                                           (durable at once), preemptions stop victims
//                                           or shrink elastic jobs (min=M), growths add
//                                           replicas (durable at once)
//   report NODE [acted=old] [J.R=WHAT ...]  the agent of NODE syncs and reports its
//                                           tasks: WHAT is running, exit:N, signal:N,
//                                           or a cause (oom, timeout, fenced, stopped,
//                                           launch, agent-exit); J.R@A names attempt A
//                                           (default: the current one)
//   sweep                                   the loop's periodic step: node liveness,
//                                           stalls, time limits, staggered stops due
//   checkpoint ID bytes=N                   the job committed a checkpoint of N bytes
//                                           (its next stop's share of bandwidth=)
//   cancel ID | requeue ID | drain NODE | reclaim NODE | declare-lost NODE
//                                           (reclaim: a drain whose stops go
//                                           ahead of the others, StopPace::kUrgent)
//   desired NODE                            the replicas NODE should run
//   jobs                                    every job: state, attempts, retries
// Each command prints what changed: events, job states, ended attempts and
// the nodes whose agents are nudged.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "common/clock.h"
#include "common/quantity.h"
#include "core/cluster_state.h"
#include "lifecycle/job_lifecycle.h"
#include "lifecycle/node_liveness.h"
#include "scheduler/scheduler.h"
#include "transcript_file.h"

namespace muster::lifecycle {
namespace {

using core::JobId;
using core::JobState;

core::ClusterConfig Config() {
  core::ClusterConfig c;
  c.priority_classes = {{"low", 0, true, false}, {"normal", 10'000, false, false}, {"high", 20'000, false, true}};
  return c;
}

class Transcript {
 public:
  Transcript() : state_(Config()) { Rebuild(); }

  std::string Run(const std::string& command) {
    testing::TranscriptCommand c = testing::SplitCommand(command);
    Effects fx;
    std::string out;
    Status s = Dispatch(c.verb, c.positional, c.kv, fx, out);
    if (!s.ok()) out += "error: " + s.ToString() + "\n";
    out += Print(fx);
    if (Status inv = state_.CheckInvariants(); !inv.ok()) out += "INVARIANT: " + inv.ToString() + "\n";
    return out.empty() ? "(nothing)\n" : out;
  }

 private:
  Status Dispatch(const std::string& verb, const std::vector<std::string>& pos, std::map<std::string, std::string>& kv,
                  Effects& fx, std::string& out) {
    if (verb == "config") return Configure(kv);
    if (verb == "node") return AddNode(pos, kv);
    if (verb == "agent") {
      ASSIGN_OR_RETURN(core::NodeIndex n, NodeNamed(pos.at(0)));
      liveness_->Watch(n, true);
      lifecycle_->Touch(n, fx);
      return Status::Ok();
    }
    if (verb == "submit") return Submit(pos, kv);
    if (verb == "advance") {
      ASSIGN_OR_RETURN(Duration d, ParseDuration(pos.at(0)));
      clock_.Advance(d);
      out += "t=" + (clock_.Now() - Time::Zero()).ToString() + "\n";
      return Status::Ok();
    }
    if (verb == "cycle") return Cycle(fx, out);
    if (verb == "report") return Report(pos, kv, fx, out);
    if (verb == "sweep") {
      const NodeLiveness::SweepResult r = liveness_->Sweep(fx);
      for (core::NodeIndex n : r.changed) {
        out += "node " + Name(n) + " " + NodeConditionName(liveness_->Of(n)) + "\n";
        (void)state_.SetSchedulable(n, liveness_->Of(n) == NodeCondition::kReady);
      }
      for (core::NodeIndex n : r.lost) lifecycle_->NodeLost(n, "was lost with its node " + Name(n), fx);
      lifecycle_->SweepStalls(fx);
      lifecycle_->SweepTimeLimits(fx);
      lifecycle_->ReleaseDueStops(fx);
      return Status::Ok();
    }
    if (verb == "checkpoint") {
      ASSIGN_OR_RETURN(const int64_t bytes, ParseMemoryBytes(kv["bytes"]));
      lifecycle_->NoteCheckpointSize(std::stoll(pos.at(0)), bytes);
      return Status::Ok();
    }
    if (verb == "cancel" || verb == "requeue") {
      const JobId id = std::stoll(pos.at(0));
      const core::JobRecord* rec = state_.Find(id);
      if (rec == nullptr) return NotFound("job " + pos.at(0));
      if (rec->state == JobState::kPending || rec->state == JobState::kHeld) {
        if (verb == "requeue") return FailedPrecondition("job " + pos.at(0) + " is not running");
        return state_.EndPending(id, JobState::kCancelled, clock_.Now(), "cancelled");
      }
      const StopOutcome o = verb == "cancel"
                                ? lifecycle_->Stop(id, JobState::kCancelled, false, "cancelled", StopPace::kAtOnce, fx)
                                : lifecycle_->Stop(id, std::nullopt, true, "requeued", StopPace::kStaggered, fx);
      if (o == StopOutcome::kUnchanged) out += "unchanged\n";
      return Status::Ok();
    }
    if (verb == "drain" || verb == "reclaim") {
      ASSIGN_OR_RETURN(core::NodeIndex n, NodeNamed(pos.at(0)));
      (void)state_.SetSchedulable(n, false);
      const std::set<JobId> jobs = lifecycle_->AttemptsOn(n);
      for (JobId job : jobs) {
        lifecycle_->Stop(job, std::nullopt, true, "its node " + Name(n) + " is " + verb + "ed",
                         verb == "drain" ? StopPace::kStaggered : StopPace::kUrgent, fx);
      }
      return Status::Ok();
    }
    if (verb == "declare-lost") {
      ASSIGN_OR_RETURN(core::NodeIndex n, NodeNamed(pos.at(0)));
      RETURN_IF_ERROR(liveness_->DeclareLost(n, "an operator", fx));
      (void)state_.SetSchedulable(n, false);
      lifecycle_->NodeLost(n, "was lost with its node " + Name(n) + " (declared lost)", fx);
      return Status::Ok();
    }
    if (verb == "desired") {
      ASSIGN_OR_RETURN(core::NodeIndex n, NodeNamed(pos.at(0)));
      bool not_durable = false;
      std::string list;
      for (const auto& [job, replica] : lifecycle_->Desired(n, not_durable)) {
        list += " " + std::to_string(job) + "." + std::to_string(replica) + "@" +
                std::to_string(lifecycle_->Find(job)->number);
      }
      out += Name(n) + " runs" + (list.empty() ? " nothing" : list) + " (generation " +
             std::to_string(lifecycle_->Generation(n)) + ")\n";
      return Status::Ok();
    }
    if (verb == "jobs") {
      for (const JobId id : submitted_) out += JobLine(id);
      return Status::Ok();
    }
    return InvalidArgument("unknown command " + verb);
  }

  // Recreates the lifecycle and the liveness with the options set so far.
  void Rebuild() {
    liveness_ = std::make_unique<NodeLiveness>(state_, clock_, liveness_options_,
                                               [this](core::NodeIndex n) { return lifecycle_->LongestGraceOn(n); });
    lifecycle_ = std::make_unique<JobLifecycle>(state_, clock_, options_,
                                                [this](core::NodeIndex n) { return liveness_->Watched(n); });
  }

  Status Configure(std::map<std::string, std::string>& kv) {
    for (auto& kv_pair : kv) {
      const std::string& k = kv_pair.first;
      const std::string& v = kv_pair.second;  // (a structured binding: clang 14 cannot capture it below)
      auto dur = [&](Duration& d) -> Status {
        ASSIGN_OR_RETURN(d, ParseDuration(v));
        return Status::Ok();
      };
      if (k == "signals") {
        options_.checkpoint_signals_per_second = std::stoi(v);
      } else if (k == "bandwidth") {
        ASSIGN_OR_RETURN(options_.checkpoint_bytes_per_second, ParseMemoryBytes(v));
      } else if (k == "lost") {
        RETURN_IF_ERROR(dur(liveness_options_.lost_after));
      } else if (k == "unreachable") {
        RETURN_IF_ERROR(dur(liveness_options_.unreachable_after));
      } else if (k == "lease") {
        RETURN_IF_ERROR(dur(liveness_options_.lease));
      } else if (k == "window") {
        RETURN_IF_ERROR(dur(liveness_options_.burst_window));
      } else if (k == "hold") {
        RETURN_IF_ERROR(dur(liveness_options_.mass_silence_hold));
      } else if (k == "fraction") {
        liveness_options_.max_lost_fraction = std::stod(v);
      } else {
        return InvalidArgument("unknown config key", k);
      }
    }
    Rebuild();
    return Status::Ok();
  }

  Status AddNode(const std::vector<std::string>& pos, std::map<std::string, std::string>& kv) {
    core::NodeSpec spec;
    spec.name = pos.at(0);
    spec.capacity.gpus = std::stoll(kv["gpus"]);
    spec.gpu_type = "H100";
    spec.topology.leaf = kv["leaf"];
    ASSIGN_OR_RETURN(core::NodeIndex n, state_.AddNode(spec));
    nodes_[spec.name] = n;
    return Status::Ok();
  }

  StatusOr<core::NodeIndex> NodeNamed(const std::string& name) const {
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return NotFound("node " + name);
    return it->second;
  }
  const std::string& Name(core::NodeIndex n) const { return state_.nodes()[n].spec.name; }

  Status Submit(const std::vector<std::string>& pos, std::map<std::string, std::string>& kv) {
    const JobId id = std::stoll(pos.at(0));
    core::JobSpec spec;
    spec.per_replica.gpus = std::stoll(kv["gpus"]);
    if (kv.count("replicas")) spec.replicas = std::stoi(kv["replicas"]);
    if (kv.count("min")) spec.min_replicas = std::stoi(kv["min"]);
    if (kv.count("class")) spec.priority_class = kv["class"];
    JobTerms terms;
    if (kv.count("limit")) {
      ASSIGN_OR_RETURN(spec.time_limit, ParseDuration(kv["limit"]));
      terms.time_limit = spec.time_limit;
    }
    if (kv.count("retries")) terms.retry.limit = std::stoi(kv["retries"]);
    if (kv.count("backoff")) {
      ASSIGN_OR_RETURN(terms.retry.initial, ParseDuration(kv["backoff"]));
    }
    if (kv.count("factor")) terms.retry.factor = std::stoi(kv["factor"]);
    if (kv.count("max")) {
      ASSIGN_OR_RETURN(terms.retry.max, ParseDuration(kv["max"]));
    }
    if (kv.count("grace")) {
      ASSIGN_OR_RETURN(terms.grace, ParseDuration(kv["grace"]));
    }
    if (kv.count("fail-codes")) {
      std::istringstream codes(kv["fail-codes"]);
      std::string c;
      while (std::getline(codes, c, ',')) terms.retry.fail_on_exit_codes.push_back(std::stoi(c));
    }
    terms.retry.retry_on_oom = std::find(pos.begin(), pos.end(), "oom-retry") != pos.end();
    terms.first_replica_decides = std::find(pos.begin(), pos.end(), "batch") != pos.end();
    RETURN_IF_ERROR(state_.Submit(std::move(spec), clock_.Now(), id).status());
    terms_[id] = terms;
    submitted_.push_back(id);
    return Status::Ok();
  }

  Status Cycle(Effects& fx, std::string& out) {
    scheduler::SchedulerOptions so;
    so.preemption.enabled = true;
    so.preemption.min_run_time = Duration::Zero();
    ASSIGN_OR_RETURN(auto sched, scheduler::Scheduler::Create(so));
    const core::Decisions d = sched->Cycle(state_.Snapshot(clock_.Now()));
    for (const core::Preemption& p : d.preemptions) {
      RETURN_IF_ERROR(state_.Nominate(p.job, p.allocations, p.victims));
      for (const core::Shrink& sh : p.shrinks) {
        out += "shrink " + std::to_string(sh.job) + " to " + std::to_string(sh.keep) + " for " + std::to_string(p.job) +
               "\n";
        lifecycle_->Shrink(sh.job, sh.keep, "for job " + std::to_string(p.job), fx);
      }
      for (JobId v : p.victims) {
        if (std::any_of(p.shrinks.begin(), p.shrinks.end(), [&](const core::Shrink& sh) { return sh.job == v; }))
          continue;
        out += "preempt " + std::to_string(v) + " for " + std::to_string(p.job) + "\n";
        lifecycle_->Stop(v, std::nullopt, true, "Preempted: for job " + std::to_string(p.job), StopPace::kStaggered,
                         fx);
      }
    }
    for (const core::Binding& b : d.bindings) {
      RETURN_IF_ERROR(state_.Bind(b, clock_.Now()));
      const int32_t number = ++attempts_[b.job];
      std::string where;
      for (const core::Allocation& a : b.allocations) where += " " + Name(a.node) + "x" + std::to_string(a.replicas);
      out += "bind " + std::to_string(b.job) + "#" + std::to_string(number) + ":" + where + "\n";
      RETURN_IF_ERROR(lifecycle_->Start(b.job, number, terms_[b.job], /*durable=*/true, fx));
    }
    for (const core::Growth& g : d.growths) {
      RETURN_IF_ERROR(state_.Grow(g.job, g.allocations, clock_.Now()));
      std::string where;
      for (const core::Allocation& a : g.allocations) where += " " + Name(a.node) + "x" + std::to_string(a.replicas);
      out += "grow " + std::to_string(g.job) + ":" + where + "\n";
      lifecycle_->Grow(g.job, fx);
      lifecycle_->MarkGrowthDurable(g.job, lifecycle_->Find(g.job)->number);
    }
    std::vector<core::PendingReason> reasons = d.reasons;
    std::sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.job < b.job; });
    for (const core::PendingReason& r : reasons) {
      out += "pending " + std::to_string(r.job) + ": " + core::FormatReason(r, "H100", clock_.Now()) + "\n";
    }
    return Status::Ok();
  }

  Status Report(const std::vector<std::string>& pos, std::map<std::string, std::string>& kv, Effects& fx,
                std::string& out) {
    ASSIGN_OR_RETURN(core::NodeIndex n, NodeNamed(pos.at(0)));
    if (liveness_->Heard(n)) {
      out += "node " + Name(n) + " Ready\n";
      (void)state_.SetSchedulable(n, true);
    }
    NodeReport report;
    report.node = n;
    // An agent acts on the desired state it was last sent: this one.
    report.acted_on = kv.count("acted") ? -1 : lifecycle_->Generation(n);
    for (const auto& [key, what] : kv) {
      if (key == "acted") continue;
      TaskStatus t;
      const size_t dot = key.find('.');
      const size_t at = key.find('@');
      if (dot == std::string::npos) return InvalidArgument("want JOB.REPLICA[@ATTEMPT]=WHAT", key);
      t.job = std::stoll(key.substr(0, dot));
      t.replica = std::stoi(key.substr(dot + 1, at == std::string::npos ? std::string::npos : at - dot - 1));
      const Attempt* a = lifecycle_->Find(t.job);
      t.attempt = at != std::string::npos ? std::stoi(key.substr(at + 1)) : a ? a->number : 0;
      t.running = what == "running";
      if (!t.running) {
        const size_t colon = what.find(':');
        const std::string head = what.substr(0, colon);
        if (head == "exit") {
          t.exit.exit_code = std::stoi(what.substr(colon + 1));
        } else if (head == "signal") {
          t.exit.signal = std::stoi(what.substr(colon + 1));
        } else if (!ExitCauseFromName(head, t.exit.cause)) {
          return InvalidArgument("unknown end " + what, key);
        }
      }
      report.tasks.push_back(t);
    }
    const ReportResult r = lifecycle_->Report(report, fx);
    std::string acks;
    for (const auto& k : r.recorded) {
      acks += " " + std::to_string(k.job) + "." + std::to_string(k.replica) + "@" + std::to_string(k.attempt);
    }
    if (!acks.empty()) out += "recorded" + acks + "\n";
    if (r.unsettled) out += "unsettled: a stopped replica is unaccounted for\n";
    return Status::Ok();
  }

  std::string JobLine(JobId id) const {
    const core::JobRecord* rec = state_.Find(id);
    const JobState shown = lifecycle_->Shown(id).value_or(rec->state);
    std::string s = "job " + std::to_string(id) + " " + core::JobStateName(shown);
    auto a = attempts_.find(id);
    s += " attempts=" + std::to_string(a == attempts_.end() ? 0 : a->second);
    if (const JobHistory* h = lifecycle_->History(id)) {
      s += " retries=" + std::to_string(h->retries) + " requeues=" + std::to_string(h->requeues);
      if (h->not_before > clock_.Now()) s += " backoff-until=" + (h->not_before - Time::Zero()).ToString();
    }
    return s + "\n";
  }

  std::string Print(const Effects& fx) const {
    std::string out;
    for (const LifecycleEvent& e : fx.events) {
      out += "event " + (e.job == 0 ? std::string("-") : std::to_string(e.job)) + " " + EventTypeName(e.type) +
             (e.reason.empty() ? "" : " [" + e.reason + "]") + ": " + e.message + "\n";
    }
    for (const AttemptEnd& e : fx.ended) {
      out += "attempt " + std::to_string(e.job) + "#" + std::to_string(e.record.number) + " ended " +
             (e.record.requeued ? "REQUEUED" : core::JobStateName(e.record.state)) + " after " +
             (e.record.end - e.record.start).ToString() + (e.terminal ? " (final)" : "") + "\n";
    }
    for (const JobChange& c : fx.jobs) {
      if (!c.reason) continue;  // its status only (a replica ended): shown by `jobs`
      out += "job " + std::to_string(c.job) + " " + core::JobStateName(c.state) +
             (c.reason->empty() ? "" : ": " + *c.reason) + "\n";
    }
    std::set<std::string> touched;
    for (core::NodeIndex n : fx.touched) touched.insert(Name(n));
    if (!touched.empty()) {
      out += "nudge";
      for (const std::string& n : touched) out += " " + n;
      out += "\n";
    }
    return out;
  }

  SimClock clock_;
  core::ClusterState state_;
  LifecycleOptions options_;
  LivenessOptions liveness_options_;
  std::unique_ptr<NodeLiveness> liveness_;
  std::unique_ptr<JobLifecycle> lifecycle_;
  std::map<std::string, core::NodeIndex> nodes_;
  std::map<JobId, JobTerms> terms_;
  std::map<JobId, int32_t> attempts_;
  std::vector<JobId> submitted_;
};

class LifecycleTranscript : public ::testing::TestWithParam<std::string> {};

TEST_P(LifecycleTranscript, MatchesExpected) {
  Transcript t;
  testing::CheckTranscript(GetParam(), [&](const std::string& command) { return t.Run(command); });
}

INSTANTIATE_TEST_SUITE_P(Files, LifecycleTranscript,
                         ::testing::ValuesIn(testing::TranscriptFiles("test/transcripts/lifecycle")),
                         [](const auto& p) { return testing::TranscriptName(p.param); });

}  // namespace
}  // namespace muster::lifecycle
