#include "lifecycle/job_lifecycle.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace muster::lifecycle {

using core::JobId;
using core::JobState;
using core::NodeIndex;

namespace {

const std::set<JobId> kNoJobs;

}  // namespace

JobLifecycle::JobLifecycle(core::ClusterState& state, const Clock& clock, LifecycleOptions options,
                           std::function<bool(NodeIndex)> has_agent)
    : state_(state), clock_(clock), options_(options), has_agent_(std::move(has_agent)) {}

const std::string& JobLifecycle::NodeName(NodeIndex node) const { return state_.nodes()[node].spec.name; }

void JobLifecycle::Touch(NodeIndex node, Effects& fx) {
  if (generation_.size() <= static_cast<size_t>(node)) generation_.resize(static_cast<size_t>(node) + 1, 0);
  ++generation_[node];
  fx.touched.push_back(node);
}

int64_t JobLifecycle::Generation(NodeIndex node) const {
  return node >= 0 && static_cast<size_t>(node) < generation_.size() ? generation_[node] : 0;
}

const Attempt* JobLifecycle::Find(JobId job) const {
  auto it = attempts_.find(job);
  return it == attempts_.end() ? nullptr : &it->second;
}

bool JobLifecycle::IsCurrent(JobId job, int32_t attempt, int32_t replica, NodeIndex node) const {
  const Attempt* a = Find(job);
  return a != nullptr && a->number == attempt && replica >= 0 && replica < static_cast<int32_t>(a->replicas.size()) &&
         a->replicas[replica].node == node;
}

const std::set<JobId>& JobLifecycle::AttemptsOn(NodeIndex node) const {
  auto it = on_node_.find(node);
  return it == on_node_.end() ? kNoJobs : it->second;
}

Duration JobLifecycle::LongestGraceOn(NodeIndex node) const {
  Duration longest = Duration::Zero();
  for (JobId job : AttemptsOn(node)) longest = std::max(longest, attempts_.at(job).started_grace);
  return longest;
}

std::optional<JobState> JobLifecycle::Shown(JobId job) const {
  const Attempt* a = Find(job);
  if (a == nullptr) return std::nullopt;
  return a->Stopping() && Managed(*a) ? JobState::kCompleting : JobState::kRunning;
}

const JobHistory* JobLifecycle::History(JobId job) const {
  auto it = history_.find(job);
  return it == history_.end() ? nullptr : &it->second;
}

Time JobLifecycle::LastProgress(JobId job) const {
  auto it = progress_.find(job);
  return it == progress_.end() ? Time::Zero() : it->second.last;
}

int64_t JobLifecycle::LastStep(JobId job) const {
  auto it = progress_.find(job);
  return it == progress_.end() ? -1 : it->second.step;
}

bool JobLifecycle::Managed(const Attempt& a) const {
  for (const Replica& r : a.replicas) {
    if (has_agent_(r.node)) return true;
  }
  return false;
}

void JobLifecycle::Changed(JobId job, JobState state, std::optional<std::string> reason, Effects& fx) const {
  fx.jobs.push_back({job, state, std::move(reason), false, std::nullopt});
}

Status JobLifecycle::Start(JobId job, int32_t number, JobTerms terms, bool durable, Effects& fx,
                           const RestoredAttempt* restored) {
  auto run = state_.running().find(job);
  if (run == state_.running().end()) return FailedPrecondition("job " + std::to_string(job) + " is not running");
  const core::JobRecord* rec = state_.Find(job);
  const int32_t per_replica = static_cast<int32_t>(rec->spec.per_replica.gpus);
  Attempt a;
  a.number = number;
  a.terms = std::move(terms);
  a.started_grace = a.terms.grace;
  a.start = run->second.start;
  const size_t allocs = run->second.allocations.size();
  // Where a resized attempt's replicas were (restored); else in order.
  const bool renumbered = restored != nullptr && restored->first_replica.size() == allocs;
  for (size_t i = 0; i < allocs; ++i) {
    const core::Allocation& alloc = run->second.allocations[i];
    const std::vector<int32_t>& ids = run->second.gpu_ids[i];
    const int32_t first = renumbered ? restored->first_replica[i] : static_cast<int32_t>(a.replicas.size());
    if (first < static_cast<int32_t>(a.replicas.size()) || first > 100'000) {
      return DataLoss("job " + std::to_string(job) + ": stored replica numbers overlap");
    }
    // Replicas given back before the restart: ended, on the first node.
    while (static_cast<int32_t>(a.replicas.size()) < first) {
      Replica gone;
      gone.node = run->second.allocations.front().node;
      gone.ended = gone.leaving = true;
      gone.result = "given back";
      a.replicas.push_back(std::move(gone));
    }
    a.first_replica.push_back(first);
    for (int32_t k = 0; k < alloc.replicas; ++k) {
      Replica r;
      r.node = alloc.node;
      for (int32_t g = 0; g < per_replica; ++g) {
        const size_t at = static_cast<size_t>(k * per_replica + g);
        if (at < ids.size()) r.gpus.push_back(ids[at]);
      }
      a.replicas.push_back(std::move(r));
    }
    on_node_[alloc.node].insert(job);
  }
  a.durable = durable;
  progress_.erase(job);
  if (restored != nullptr) {
    for (int32_t i : restored->ended_replicas) {
      if (i >= 0 && static_cast<size_t>(i) < a.replicas.size()) a.replicas[i].ended = true;
    }
    for (const auto& [i, result] : restored->results) {
      if (i >= 0 && static_cast<size_t>(i) < a.replicas.size()) a.replicas[i].result = result;
    }
    for (int32_t i : restored->leaving) {
      if (i >= 0 && static_cast<size_t>(i) < a.replicas.size()) a.replicas[i].leaving = true;
    }
    for (const auto& [i, at] : restored->starts) {
      if (i >= 0 && static_cast<size_t>(i) < a.replicas.size()) a.replicas[i].start = at;
    }
    for (const RestoredAttempt::GivenBack& g : restored->given_back) {
      if (g.replica < 0 || static_cast<size_t>(g.replica) >= a.replicas.size() || !a.replicas[g.replica].ended)
        continue;
      Replica& r = a.replicas[g.replica];
      r.gpus.assign(static_cast<size_t>(std::clamp(g.gpus, 0, 1024)), -1);  // counted, not held
      r.start = g.start;
      r.end = g.end;
    }
    a.shrink_to = restored->shrink_to;
    if (restored->stopping) {
      a.requeue = restored->requeue;
      a.ending_reason = restored->ending_reason;
      a.ending = restored->ending;
      if (!a.ending && !a.requeue) a.ending = JobState::kFailed;
    }
  }
  Attempt& placed = attempts_[job] = std::move(a);
  // A restored stop is released again in this server's generations: the one
  // the last server released it at means nothing here, and a replica its
  // node never started would never be settled (the job would stay
  // COMPLETING for ever with its GPUs held).
  if (placed.Stopping()) ReleaseStop(placed, fx);
  for (Replica& r : placed.replicas) {
    Touch(r.node, fx);
    if (r.leaving && !r.ended) r.stop_generation = Generation(r.node);
  }
  // A shrink under way goes on (nothing grows the job meanwhile); one
  // whose replicas all ended before the restart completes now.
  if (placed.shrink_to > 0) {
    (void)state_.MarkShrinking(job);
    LeftEnded(job, fx);
  }
  return Status::Ok();
}

std::vector<int32_t> JobLifecycle::Grow(JobId job, Effects& fx) {
  std::vector<int32_t> added;
  auto it = attempts_.find(job);
  auto run = state_.running().find(job);
  if (it == attempts_.end() || run == state_.running().end()) return added;
  Attempt& a = it->second;
  const int32_t per_replica = static_cast<int32_t>(run->second.per_replica.gpus);
  for (size_t i = a.first_replica.size(); i < run->second.allocations.size(); ++i) {
    const core::Allocation& alloc = run->second.allocations[i];
    const std::vector<int32_t>& ids = run->second.gpu_ids[i];
    a.first_replica.push_back(static_cast<int32_t>(a.replicas.size()));
    for (int32_t k = 0; k < alloc.replicas; ++k) {
      Replica r;
      r.node = alloc.node;
      r.durable = false;
      r.start = clock_.Now();
      for (int32_t g = 0; g < per_replica; ++g) {
        const size_t at = static_cast<size_t>(k * per_replica + g);
        if (at < ids.size()) r.gpus.push_back(ids[at]);
      }
      added.push_back(static_cast<int32_t>(a.replicas.size()));
      a.replicas.push_back(std::move(r));
    }
    on_node_[alloc.node].insert(job);
    Touch(alloc.node, fx);
  }
  if (!added.empty()) {
    fx.events.push_back(
        {job, EventType::kGrown, "",
         "grew to " + std::to_string(a.Staying()) + " replicas (added " + std::to_string(added.size()) + ")"});
    Changed(job, *Shown(job), std::nullopt, fx);
  }
  return added;
}

void JobLifecycle::MarkGrowthDurable(JobId job, int32_t number) {
  auto it = attempts_.find(job);
  if (it == attempts_.end() || it->second.number != number) return;
  for (Replica& r : it->second.replicas) r.durable = true;
}

std::vector<int32_t> JobLifecycle::Shrink(JobId job, int32_t keep, const std::string& reason, Effects& fx) {
  std::vector<int32_t> leaving;
  auto it = attempts_.find(job);
  if (it == attempts_.end() || it->second.Stopping() || it->second.shrink_to > 0 || keep < 1) return leaving;
  Attempt& a = it->second;
  // Its replicas in index order (those given back before aside) are its
  // allocations' in order: the first `keep` stay, the newest go (one that
  // already exited goes as it is).
  int32_t kept = 0;
  for (size_t i = 0; i < a.replicas.size(); ++i) {
    Replica& r = a.replicas[i];
    if (r.leaving) continue;
    if (kept < keep) {
      ++kept;
      continue;
    }
    r.leaving = true;
    leaving.push_back(static_cast<int32_t>(i));
    if (r.ended) continue;
    Touch(r.node, fx);
    r.stop_generation = Generation(r.node);
  }
  if (leaving.empty()) return leaving;
  a.shrink_to = keep;
  (void)state_.MarkShrinking(job);
  fx.events.push_back({job, EventType::kShrinking, "",
                       reason + ": giving back " + std::to_string(leaving.size()) + " replica" +
                           (leaving.size() > 1 ? "s" : "") + ", keeping " + std::to_string(keep)});
  Changed(job, *Shown(job), std::nullopt, fx);
  LeftEnded(job, fx);  // all of them had exited already
  return leaving;
}

void JobLifecycle::LeftEnded(JobId job, Effects& fx) {
  auto it = attempts_.find(job);
  if (it == attempts_.end() || it->second.shrink_to == 0 || it->second.Stopping()) return;
  Attempt& a = it->second;
  for (const Replica& r : a.replicas) {
    if (r.leaving && !r.ended) return;
  }
  const int32_t keep = a.shrink_to;
  a.shrink_to = 0;
  if (!state_.ShrinkTo(job, keep, clock_.Now()).ok()) return;
  const core::RunningJob& run = state_.running().at(job);
  a.first_replica.resize(run.allocations.size());
  // Nodes it no longer holds a replica on.
  std::set<NodeIndex> still;
  for (const core::Allocation& alloc : run.allocations) still.insert(alloc.node);
  for (const Replica& r : a.replicas) {
    if (!still.count(r.node)) on_node_[r.node].erase(job);
  }
  fx.resources_freed = true;
  fx.events.push_back(
      {job, EventType::kShrunk, "", "runs on " + std::to_string(keep) + (keep == 1 ? " replica" : " replicas")});
  Changed(job, *Shown(job), std::nullopt, fx);
}

void JobLifecycle::MarkDurable(JobId job, int32_t number) {
  auto it = attempts_.find(job);
  if (it != attempts_.end() && it->second.number == number) it->second.durable = true;
}

void JobLifecycle::ReleaseStop(Attempt& a, Effects& fx) {
  for (Replica& r : a.replicas) {
    Touch(r.node, fx);
    r.stop_generation = Generation(r.node);
  }
}

Time JobLifecycle::NextStopDue() const { return delayed_stops_.empty() ? Time::Max() : delayed_stops_.begin()->first; }

Time JobLifecycle::NextStopSlot() const { return std::max(clock_.Now(), next_stop_slot_); }

void JobLifecycle::ReleaseDueStops(Effects& fx) {
  const Time now = clock_.Now();
  while (!delayed_stops_.empty() && delayed_stops_.begin()->first <= now) {
    const auto [at, job] = *delayed_stops_.begin();
    delayed_stops_.erase(delayed_stops_.begin());
    auto it = attempts_.find(job);
    if (it == attempts_.end() || it->second.stop_at != at) continue;
    released_until_ = std::max(released_until_, at + StopTurn(job));
    ReleaseStop(it->second, fx);
  }
}

StopOutcome JobLifecycle::Stop(JobId job, std::optional<JobState> final_state, bool requeue, const std::string& reason,
                               StopPace pace, Effects& fx) {
  auto it = attempts_.find(job);
  if (it == attempts_.end()) return StopOutcome::kUnchanged;
  Attempt& a = it->second;
  if (a.ending) return StopOutcome::kUnchanged;
  if (!a.requeue) return BeginEnding(job, final_state, requeue, reason, pace, fx);
  const Time now = clock_.Now();
  if (!final_state) {
    // Being requeued already; a deadline moves a stop still waiting ahead.
    if (pace == StopPace::kUrgent && !a.urgent_stop && a.stop_at > now) {
      TakeStopTurn(job, a, /*urgent=*/true);
      if (a.stop_at <= now) ReleaseStop(a, fx);
      (void)state_.MarkStopping(job, std::max(now, a.stop_at) + a.terms.grace);
    }
    return StopOutcome::kUnchanged;
  }
  // Being stopped for a requeue: a cancel now makes it end instead, at once.
  a.ending = final_state;
  a.requeue = false;
  a.ending_reason = reason;
  if (a.stop_at > now) {
    a.stop_at = Time::Zero();
    ReleaseStop(a, fx);
  }
  Changed(job, JobState::kCompleting, reason + "; stopping its replicas", fx);
  return StopOutcome::kStopping;
}

void JobLifecycle::CutGrace(JobId job, Duration grace) {
  if (auto it = attempts_.find(job); it != attempts_.end()) {
    it->second.terms.grace = std::min(it->second.terms.grace, std::max(grace, Duration::Zero()));
  }
}

void JobLifecycle::TakeStopTurn(JobId job, Attempt& a, bool urgent) {
  const Time now = clock_.Now();
  const Duration turn = StopTurn(job);
  if (a.stop_at > now) delayed_stops_.erase({a.stop_at, job});
  a.urgent_stop = urgent;
  if (!urgent) {
    a.stop_at = std::max(now, next_stop_slot_);
    next_stop_slot_ = a.stop_at + turn;
  } else {
    // Not sooner than a turn after the last stop released, as for any stop.
    a.stop_at = std::max({now, next_urgent_slot_, released_until_});
    next_urgent_slot_ = a.stop_at + turn;
    // Every ordinary stop from that turn on moves one turn later, in order.
    std::vector<JobId> later;
    for (auto it = delayed_stops_.lower_bound({a.stop_at, std::numeric_limits<JobId>::min()});
         it != delayed_stops_.end();) {
      auto other = attempts_.find(it->second);
      if (other == attempts_.end() || other->second.stop_at != it->first || other->second.urgent_stop) {
        ++it;  // a stale entry (ReleaseDueStops skips it), or urgent
        continue;
      }
      later.push_back(it->second);
      it = delayed_stops_.erase(it);
    }
    for (JobId j : later) {
      Attempt& o = attempts_.at(j);
      o.stop_at = o.stop_at + turn;
      delayed_stops_.insert({o.stop_at, j});
      (void)state_.MarkStopping(j, o.stop_at + o.terms.grace);
    }
    if (!later.empty()) next_stop_slot_ = next_stop_slot_ + turn;
    next_stop_slot_ = std::max(next_stop_slot_, next_urgent_slot_);
  }
  if (a.stop_at > now) {
    delayed_stops_.insert({a.stop_at, job});
  } else {
    released_until_ = std::max(released_until_, a.stop_at + turn);
  }
}

Duration JobLifecycle::StopTurn(JobId job) const {
  const int32_t rate = options_.checkpoint_signals_per_second;
  int64_t ms = rate > 0 ? std::max<int64_t>(1, 1000 / rate) : 1;
  if (const int64_t bandwidth = options_.checkpoint_bytes_per_second; bandwidth > 0) {
    if (auto it = checkpoint_bytes_.find(job); it != checkpoint_bytes_.end()) {
      // Rounded up; at most a day, whatever the sizes say.
      const double write_ms = std::ceil(static_cast<double>(it->second) * 1000.0 / static_cast<double>(bandwidth));
      ms = std::max(ms, static_cast<int64_t>(std::min(write_ms, 86'400'000.0)));
    }
  }
  return Duration::Millis(ms);
}

void JobLifecycle::Fail(JobId job, JobState state, const ReplicaExit& failure, const std::string& reason, Effects& fx) {
  auto it = attempts_.find(job);
  if (it == attempts_.end() || it->second.Stopping()) return;
  it->second.failure = failure;
  BeginEnding(job, state, false, reason, StopPace::kAtOnce, fx);
}

StopOutcome JobLifecycle::BeginEnding(JobId job, std::optional<JobState> final_state, bool requeue,
                                      const std::string& reason, StopPace pace, Effects& fx) {
  Attempt& a = attempts_.at(job);
  a.ending = final_state;
  a.requeue = requeue;
  a.ending_reason = reason;
  const Time now = clock_.Now();
  a.stop_at = Time::Zero();
  a.urgent_stop = false;
  if (pace != StopPace::kAtOnce && Staggers()) {
    TakeStopTurn(job, a, pace == StopPace::kUrgent);
  }
  if (a.stop_at <= now) ReleaseStop(a, fx);
  // The backfill plan may count on its resources after the grace period.
  (void)state_.MarkStopping(job, std::max(now, a.stop_at) + a.terms.grace);
  const bool any_running =
      Managed(a) && std::any_of(a.replicas.begin(), a.replicas.end(), [](const Replica& r) { return !r.ended; });
  if (!any_running) {
    FinishAttempt(job, fx);
    return StopOutcome::kEnded;
  }
  Changed(job, JobState::kCompleting, reason + "; stopping its replicas", fx);
  return StopOutcome::kStopping;
}

void JobLifecycle::ReplicaEnded(JobId job, int32_t replica, const ReplicaExit& exit, Effects& fx) {
  auto found = attempts_.find(job);
  if (found == attempts_.end() || replica < 0 || replica >= static_cast<int32_t>(found->second.replicas.size())) return;
  Attempt& a = found->second;
  Replica& rep = a.replicas[replica];
  if (rep.ended) return;
  rep.ended = true;
  fx.resources_freed = true;
  // When it ended, not when the server heard of it (after an outage, much
  // later); an agent's clock is trusted only within the attempt's span.
  const Time now = clock_.Now();
  rep.end = std::clamp(exit.end > Time::Zero() ? exit.end : now, std::min(a.start, now), now);
  const ExitMeaning meaning = Classify(exit);
  rep.result = meaning.words;
  if (rep.leaving && !a.Stopping()) {
    // Given back: the job runs on without it, however it ended.
    rep.result = "given back: " + meaning.words;
    LeftEnded(job, fx);
    if (attempts_.count(job)) Changed(job, *Shown(job), std::nullopt, fx);
    return;
  }
  if (exit.Succeeded() && replica == 0 && a.terms.first_replica_decides && !a.Stopping() && !a.AllEnded()) {
    if (BeginEnding(job, JobState::kCompleted, false, "its batch script exited 0", StopPace::kAtOnce, fx) ==
        StopOutcome::kEnded) {
      return;
    }
  }
  if (!exit.Succeeded()) {
    const std::string where = "replica " + std::to_string(replica) + " on " + NodeName(rep.node);
    if (exit.NodesFault()) a.node_lost = true;
    if (!a.Stopping()) {
      a.failure = exit;
      fx.events.push_back(
          {job, EventType::kReplicaFailed, core::JobStateName(meaning.state), where + " " + meaning.words});
      if (BeginEnding(job, meaning.state, false, where + " " + meaning.words, StopPace::kAtOnce, fx) ==
          StopOutcome::kEnded)
        return;
    }
  }
  Attempt& still = attempts_.at(job);
  if (still.AllEnded()) {
    FinishAttempt(job, fx);
  } else {
    Changed(job, *Shown(job), std::nullopt, fx);
  }
}

void JobLifecycle::FinishAttempt(JobId job, Effects& fx) {
  Attempt a = std::move(attempts_.at(job));
  attempts_.erase(job);
  std::optional<int64_t> last_step;
  if (auto p = progress_.find(job); p != progress_.end()) {
    if (p->second.last > Time::Zero()) last_step = p->second.step;
    progress_.erase(p);
  }
  for (const Replica& r : a.replicas) on_node_[r.node].erase(job);
  const Time now = clock_.Now();
  fx.resources_freed = true;
  // The attempt ended when its last replica did.
  Time end = Time::Zero();
  for (const Replica& r : a.replicas) end = std::max(end, r.end > Time::Zero() ? r.end : now);
  for (const Replica& r : a.replicas) Touch(r.node, fx);
  JobHistory& h = history_[job];
  JobState final_state = a.ending.value_or(JobState::kCompleted);
  // A gang whose node died often fails first on another replica (its
  // collective sees the peer vanish). When a replica was lost with its
  // node, the attempt's failure is the node's: requeued without spending a
  // retry.
  if (a.node_lost && !a.requeue && final_state == JobState::kFailed) {
    a.ending_reason += "; a replica's node was lost, so the failure counts as the node's";
    final_state = JobState::kNodeFail;
  }
  AttemptEnd ended;
  ended.job = job;
  ended.record.number = a.number;
  ended.record.start = a.start;
  ended.record.end = end;
  ended.record.requeued = a.requeue;
  ended.record.state = final_state;
  ended.record.reason = a.requeue || final_state != JobState::kCompleted ? a.ending_reason : "";
  for (const Replica& r : a.replicas) {
    AttemptRecord::ReplicaRecord rec{r.node, r.result, static_cast<int32_t>(r.gpus.size()), std::nullopt};
    const Time from = std::max(a.start, r.start), to = r.leaving && r.end > Time::Zero() ? r.end : end;
    if (from != a.start || to != end) rec.span = {from, std::max(from, to)};
    ended.record.replicas.push_back(std::move(rec));
  }
  ended.record.last_step = last_step;
  if (final_state == JobState::kCompleted && !a.requeue) {
    ended.record.exit_code = 0;
  } else if (a.failure.cause == ExitCause::kExited && !a.failure.Succeeded()) {
    ended.record.exit_code = a.failure.exit_code;
    ended.record.exit_signal = a.failure.signal;
  }

  RetryDecision retry;
  if (!a.requeue) retry = Decide(a.terms.retry, final_state, a.failure, h.retries);
  if (a.requeue || retry.retry) {
    const Time not_before = retry.retry ? now + retry.backoff : Time::Zero();
    if (!state_.Requeue(job, now, a.ending_reason, not_before).ok()) return;
    JobChange change{job, JobState::kPending, std::nullopt, true, std::nullopt};
    if (a.requeue) {
      change.reason = a.ending_reason;
      fx.events.push_back({job, EventType::kRequeued, "", a.ending_reason});
    } else {
      if (retry.spends) {
        ++h.retries;
      } else {
        ++h.requeues;
      }
      h.not_before = not_before;
      const std::string why = retry.spends
                                  ? "retry " + std::to_string(h.retries) + " of " + std::to_string(a.terms.retry.limit)
                                  : "requeued after an infrastructure failure (no retry spent)";
      change.reason =
          "Retrying: " + a.ending_reason + "; " + why +
          (retry.backoff.millis() > 0 ? ", not before " + std::to_string(retry.backoff.millis() / 1000) + " s" : "");
      fx.events.push_back({job, EventType::kRetrying, core::JobStateName(final_state), *change.reason});
    }
    fx.ended.push_back(std::move(ended));
    fx.jobs.push_back(std::move(change));
    return;
  }
  std::string reason = final_state == JobState::kCompleted ? "" : a.ending_reason;
  if (!state_.Finish(job, final_state, end, reason).ok()) return;
  checkpoint_bytes_.erase(job);
  if (final_state != JobState::kCompleted && final_state != JobState::kCancelled && h.retries > 0) {
    reason += " (after " + std::to_string(h.retries) + " retries)";
  }
  const EventType type = final_state == JobState::kCompleted   ? EventType::kCompleted
                         : final_state == JobState::kCancelled ? EventType::kCancelled
                                                               : EventType::kFailed;
  // Completed: every replica exited 0, or (Slurm's model) the batch script did.
  const std::string words = !reason.empty() ? reason : a.ending ? a.ending_reason : "all replicas exited 0";
  fx.events.push_back({job, type, core::JobStateName(final_state), words});
  ended.terminal = true;
  fx.ended.push_back(std::move(ended));
  fx.jobs.push_back({job, final_state, reason, false, end});
}

ReportResult JobLifecycle::Report(const NodeReport& report, Effects& fx) {
  ReportResult out;
  const NodeIndex node = report.node;
  std::set<std::pair<JobId, int32_t>> reported;
  for (const TaskStatus& t : report.tasks) {
    if (!IsCurrent(t.job, t.attempt, t.replica, node)) {
      // A stale attempt or an unknown task: acknowledge its end; a running
      // one is not desired, so the agent stops it.
      if (!t.running) out.recorded.push_back({t.job, t.attempt, t.replica});
      continue;
    }
    Replica& rep = attempts_.at(t.job).replicas[t.replica];
    rep.seen = true;
    reported.insert({t.job, t.replica});
    if (!t.running) {
      if (!rep.ended) {
        ReplicaEnded(t.job, t.replica, t.exit, fx);
        out.changed = true;
        out.replica_ended = true;
      }
      out.recorded.push_back({t.job, t.attempt, t.replica});
    }
  }
  // Replicas of stopped attempts that the agent never started: its report
  // reflects a desired state from after the stop (so it never will) and
  // does not list them. They end here, or the attempt would wait for ever.
  // And replicas the agent reported before and no longer knows were lost.
  std::vector<std::pair<JobId, int32_t>> unstarted, lost;
  const Time now = clock_.Now();
  for (JobId job : AttemptsOn(node)) {
    const Attempt& a = attempts_.at(job);
    for (size_t i = 0; i < a.replicas.size(); ++i) {
      const Replica& r = a.replicas[i];
      if (r.node != node || r.ended || reported.count({job, static_cast<int32_t>(i)})) continue;
      if (r.seen) {
        lost.emplace_back(job, static_cast<int32_t>(i));
      } else if ((a.StopReleased(now) || r.leaving) && r.stop_generation != 0) {
        if (report.acted_on >= r.stop_generation) {
          unstarted.emplace_back(job, static_cast<int32_t>(i));
        } else {
          out.unsettled = true;
        }
      }
    }
  }
  if (out.unsettled) out.changed = true;  // no long wait: its next report settles them
  for (const auto& [job, replica] : unstarted) {
    ReplicaExit never;
    never.cause = ExitCause::kNeverStarted;
    ReplicaEnded(job, replica, never, fx);
    out.changed = true;
  }
  for (const auto& [job, replica] : lost) {
    ReplicaExit gone;
    gone.cause = ExitCause::kLost;
    gone.signal = SIGKILL;
    gone.message = "was lost: its agent no longer knows the task (the node restarted or lost its state)";
    ReplicaEnded(job, replica, gone, fx);
    out.changed = true;
  }
  return out;
}

void JobLifecycle::NodeLost(NodeIndex node, const std::string& why, Effects& fx) {
  // Its replicas ended with the node (its agent, or the task shims
  // themselves, stopped them when the lease ran out); the rest of each
  // gang is stopped, then the job is requeued without spending a retry.
  const std::set<JobId> jobs = AttemptsOn(node);
  for (JobId job : jobs) {
    // Ending a replica may end the attempt (and erase it): look it up
    // again for every replica.
    for (size_t i = 0;; ++i) {
      auto it = attempts_.find(job);
      if (it == attempts_.end() || i >= it->second.replicas.size()) break;
      const Replica& r = it->second.replicas[i];
      if (r.node != node || r.ended) continue;
      ReplicaExit lost;
      lost.cause = ExitCause::kLost;
      lost.signal = SIGKILL;
      lost.message = why;
      ReplicaEnded(job, static_cast<int32_t>(i), lost, fx);
    }
  }
}

void JobLifecycle::SweepTimeLimits(Effects& fx) {
  // Only the jobs past their expected end, in its order: agents end their
  // own, so those overdue here are static-node jobs and a few agent-run
  // ones whose report is on its way.
  const Time now = clock_.Now();
  std::vector<JobId> over;
  for (const auto& [end, job] : state_.running_by_end()) {
    if (end > now) break;
    auto it = attempts_.find(job);
    if (it == attempts_.end()) continue;
    const Attempt& a = it->second;
    if (a.Stopping() || a.terms.time_limit.is_infinite() || Managed(a)) continue;
    over.push_back(job);
  }
  for (JobId job : over) {
    ReplicaExit timeout;
    timeout.cause = ExitCause::kTimeLimit;
    Fail(job, JobState::kTimeout, timeout, "reached its time limit of " + attempts_.at(job).terms.time_limit.ToString(),
         fx);
  }
}

void JobLifecycle::NoteProgress(JobId job, std::optional<int64_t> step) {
  if (!attempts_.count(job)) return;
  Progress& p = progress_[job];
  p.last = clock_.Now();
  if (step) p.step = *step;
}

void JobLifecycle::SweepStalls(Effects& fx) {
  const Time now = clock_.Now();
  std::vector<std::pair<JobId, std::string>> stalled;
  for (const auto& [job, p] : progress_) {
    const Attempt* a = Find(job);
    if (a == nullptr || a->Stopping() || p.last == Time::Zero()) continue;
    const std::optional<Duration> timeout = a->terms.stall_timeout;
    if (!timeout) continue;
    const Duration silent = now - p.last;
    if (silent <= *timeout) continue;
    stalled.emplace_back(job, "made no progress for " + std::to_string(silent.millis() / 1000) + " s (stallTimeout " +
                                  timeout->ToString() + "; last step " + std::to_string(p.step) + "): treated as hung");
  }
  std::sort(stalled.begin(), stalled.end());
  for (const auto& [job, why] : stalled) {
    ReplicaExit hung;
    hung.cause = ExitCause::kStalled;
    hung.message = why;
    fx.events.push_back({job, EventType::kStalled, "FAILED", why});
    Fail(job, JobState::kFailed, hung, why, fx);
  }
}

std::vector<JobLifecycle::DesiredReplica> JobLifecycle::Desired(NodeIndex node, bool& not_durable) const {
  std::vector<DesiredReplica> out;
  not_durable = false;
  const Time now = clock_.Now();
  for (JobId job : AttemptsOn(node)) {
    const Attempt& a = attempts_.at(job);
    if (a.StopReleased(now)) continue;
    for (size_t i = 0; i < a.replicas.size(); ++i) {
      const Replica& r = a.replicas[i];
      if (r.node != node || r.ended || r.leaving) continue;
      out.push_back({job, static_cast<int32_t>(i)});
      not_durable = not_durable || !a.durable || !r.durable;
    }
  }
  return out;
}

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kReplicaFailed:
      return "ReplicaFailed";
    case EventType::kRequeued:
      return "Requeued";
    case EventType::kRetrying:
      return "Retrying";
    case EventType::kCompleted:
      return "Completed";
    case EventType::kCancelled:
      return "Cancelled";
    case EventType::kFailed:
      return "Failed";
    case EventType::kStalled:
      return "Stalled";
    case EventType::kNodeLost:
      return "NodeLost";
    case EventType::kManyNodesSilent:
      return "ManyNodesSilent";
    case EventType::kSilenceHoldEnded:
      return "SilenceHoldEnded";
    case EventType::kGrown:
      return "Grown";
    case EventType::kShrinking:
      return "Shrinking";
    case EventType::kShrunk:
      return "Shrunk";
  }
  return "?";
}

}  // namespace muster::lifecycle
