// ControlLoop: agents, attempts and the desired state of nodes (see the
// "Agents" paragraph of control_loop.h).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <nlohmann/json.hpp>

#include "server/control_loop.h"
#include "server/task_env.h"

namespace muster::server {

using core::JobState;
using nlohmann::json;
using store::JobRow;

namespace {

int SignalNumber(api::CheckpointSignal s) {
  switch (s) {
    case api::CheckpointSignal::kSigUsr1: return SIGUSR1;
    case api::CheckpointSignal::kSigUsr2: return SIGUSR2;
    case api::CheckpointSignal::kSigTerm: return SIGTERM;
    case api::CheckpointSignal::kSigInt: return SIGINT;
  }
  return SIGTERM;
}

// How a failed replica ended, in words, and the job state it implies.
std::pair<JobState, std::string> Classify(const proto::TaskReport& r) {
  if (r.oom) return {JobState::kOutOfMemory, "ran out of memory (the cgroup's OOM killer ended it)"};
  if (r.stop_reason == "timeout") return {JobState::kTimeout, "reached its time limit"};
  if (r.stop_reason == "fenced") return {JobState::kNodeFail, "was stopped by its agent, which lost contact with the server"};
  if (r.stop_reason == "lost") return {JobState::kNodeFail, r.message};
  // The node's agent shut down and took its tasks with it (--stop-tasks-on-exit):
  // the infrastructure's doing, so the job is requeued without spending a retry.
  if (r.stop_reason == "agent-exit") return {JobState::kNodeFail, "was stopped because its agent shut down"};
  if (r.stop_reason == "launch") return {JobState::kFailed, "could not be started: " + r.message.substr(0, 512)};
  if (r.stop_reason == "stalled") return {JobState::kFailed, r.message};
  if (r.stop_reason == "unstarted") return {JobState::kFailed, "was stopped before its node started it"};
  std::string what = r.signal != 0 ? "was killed by signal " + std::to_string(r.signal)
                                   : "exited with code " + std::to_string(r.exit_code);
  if (r.stop_reason == "stop") what += " after its agent stopped it";
  if (!r.message.empty()) what += ": " + r.message.substr(0, 512);
  return {JobState::kFailed, what};
}

}  // namespace

void ControlLoop::TouchNode(core::NodeIndex node) {
  const std::string& name = state_.nodes()[node].spec.name;
  std::vector<VersionSlot::Waiter> ready;
  {
    std::lock_guard<std::mutex> lock(versions_mu_);
    std::unique_ptr<VersionSlot>& v = versions_[name];
    if (!v) v = std::make_unique<VersionSlot>();
    v->version = ++version_counter_;
    ready.swap(v->waiters);
    for (const VersionSlot::Waiter& w : ready) wait_deadlines_.erase({w.deadline_ms, w.id, w.node});
  }
  for (VersionSlot::Waiter& w : ready) w.then();
}

int64_t ControlLoop::NodeVersion(const std::string& node) {
  std::lock_guard<std::mutex> lock(versions_mu_);
  auto it = versions_.find(node);
  return it == versions_.end() ? 0 : it->second->version;
}

void ControlLoop::WhenNodeChanges(const std::string& node, int64_t version, Duration max_wait,
                                  std::function<void()> then) {
  {
    std::lock_guard<std::mutex> lock(versions_mu_);
    std::unique_ptr<VersionSlot>& v = versions_[node];
    if (!v) v = std::make_unique<VersionSlot>();
    if (!(v->version != 0 && v->version != version) && !stopping_versions_) {
      const int64_t deadline = (clock_.Now() + max_wait).millis();
      const uint64_t id = ++next_waiter_;
      v->waiters.push_back({id, deadline, node, std::move(then)});
      wait_deadlines_.emplace(deadline, id, node);
      then = nullptr;
    }
  }
  if (then) return then();
  // The loop sleeps until its next deadline and this one may be sooner: a
  // task (even an empty one) makes it look again.
  Post([] {});
}

void ControlLoop::EndExpiredWaits(Time now, bool all) {
  std::vector<VersionSlot::Waiter> ready;
  {
    std::lock_guard<std::mutex> lock(versions_mu_);
    while (!wait_deadlines_.empty() && (all || std::get<0>(*wait_deadlines_.begin()) <= now.millis())) {
      const auto [deadline, id, node] = *wait_deadlines_.begin();
      wait_deadlines_.erase(wait_deadlines_.begin());
      std::vector<VersionSlot::Waiter>& waiters = versions_.at(node)->waiters;
      for (auto it = waiters.begin(); it != waiters.end(); ++it) {
        if (it->id != id) continue;
        ready.push_back(std::move(*it));
        waiters.erase(it);
        break;
      }
    }
  }
  for (VersionSlot::Waiter& w : ready) w.then();
}

Duration ControlLoop::UntilNextWaitEnds(Time now) {
  std::lock_guard<std::mutex> lock(versions_mu_);
  if (wait_deadlines_.empty()) return Duration::Infinite();
  return std::max(Duration::Zero(), Time::FromMillis(std::get<0>(*wait_deadlines_.begin())) - now);
}

bool ControlLoop::AttemptManaged(const Attempt& a) const {
  for (const Attempt::Replica& r : a.replicas) {
    if (agents_.count(state_.nodes()[r.node].spec.name)) return true;
  }
  return false;
}

Status ControlLoop::RestoreNodes() {
  ASSIGN_OR_RETURN(std::vector<store::NodeRow> rows, store_.ListNodes());
  for (const store::NodeRow& row : rows) {
    const json spec = json::parse(row.spec_json, nullptr, false);
    if (!spec.is_object() || spec.value("source", "") != "agent") continue;
    core::NodeSpec n;
    n.name = row.name;
    n.gpu_type = spec.value("gpuType", "");
    n.capacity.gpus = spec.value("gpus", 0);
    n.capacity.cpu_milli = spec.value("cpuMilli", int64_t{0});
    n.capacity.memory_bytes = spec.value("memoryBytes", int64_t{0});
    n.topology.leaf = spec.value("leaf", "");
    n.topology.spine = spec.value("spine", "");
    n.topology.zone = spec.value("zone", "");
    bool known = false;
    for (const core::Node& existing : state_.nodes()) known = known || existing.spec.name == n.name;
    if (known) continue;  // the configuration names it too; the configuration wins
    auto added = state_.AddNode(n);
    if (!added.ok()) return DataLoss("store " + options_.store_path + ": node " + row.name + ": " + added.status().ToString());
    node_index_[row.name] = *added;
    AgentNode& a = agents_[row.name];
    a.address = spec.value("address", "");
    a.inventory = "(restored)";
    a.cordon = spec.value("cordoned", "");
    if (!a.cordon.empty()) (void)state_.SetSchedulable(*added, false);
    a.log_port = spec.value("logPort", 0);
    a.status_json = spec.dump();
    // A fresh grace period after a restart: silent from now on, not from
    // before (its running jobs are not lost at once). But no new work until
    // its agent syncs: a node that was dead before the restart looked Ready
    // and took jobs that then sat RUNNING with nothing running.
    a.last_sync_ms = clock_.Now().millis();
    a.synced = false;
    a.unreachable = true;
    (void)state_.SetSchedulable(*added, false);
  }
  return Status::Ok();
}

void ControlLoop::StartAttempt(int64_t job, int32_t number, bool durable, const json* restored) {
  auto run = state_.running().find(job);
  if (run == state_.running().end()) return;
  Attempt a;
  a.number = number;
  a.start_ms = run->second.start.millis();
  auto spec = api::ParseJobSpecJson(jobs_.at(job).spec_json);
  if (spec.ok()) a.spec = std::make_shared<const api::JobSpec>(std::move(*spec));
  const core::JobRecord* rec = state_.Find(job);
  const int32_t per_replica = rec ? static_cast<int32_t>(rec->spec.per_replica.gpus) : 0;
  for (size_t i = 0; i < run->second.allocations.size(); ++i) {
    const core::Allocation& alloc = run->second.allocations[i];
    const std::vector<int32_t>& ids = run->second.gpu_ids[i];
    for (int32_t k = 0; k < alloc.replicas; ++k) {
      Attempt::Replica r;
      r.node = alloc.node;
      for (int32_t g = 0; g < per_replica; ++g) {
        const size_t at = static_cast<size_t>(k * per_replica + g);
        if (at < ids.size()) r.gpus.push_back(ids[at]);
      }
      a.replicas.push_back(std::move(r));
    }
    attempts_on_node_[alloc.node].insert(job);
  }
  a.resume = ResumeCandidates(job);
  if (restored && restored->is_object()) {
    if (restored->contains("resumedFrom")) {
      a.resumed_from = (*restored)["resumedFrom"];
      a.resume_recorded = true;
    }
    if (restored->contains("progress") && (*restored)["progress"].is_object()) {
      const json& p = (*restored)["progress"];
      a.progress_step = p.value("step", int64_t{-1});
      a.metrics = p.value("metrics", json());
      a.progress_message = p.value("message", "");
      a.progress_ms = clock_.Now().millis();  // a fresh stall period after a restart
    }
    if (restored->contains("endedReplicas") && (*restored)["endedReplicas"].is_array()) {
      for (const json& e : (*restored)["endedReplicas"]) {
        if (e.is_number_integer() && e.get<size_t>() < a.replicas.size()) a.replicas[e.get<size_t>()].ended = true;
      }
    }
    if (restored->contains("replicaResults") && (*restored)["replicaResults"].is_array()) {
      for (const json& r : (*restored)["replicaResults"]) {
        const size_t i = r.value("replica", a.replicas.size());
        if (i < a.replicas.size()) a.replicas[i].result = r.value("result", "");
      }
    }
    if (restored->contains("ending") && (*restored)["ending"].is_object()) {
      const json& e = (*restored)["ending"];
      a.requeue = e.value("requeue", false);
      a.ending_reason = e.value("reason", "");
      if (auto st = core::JobStateFromName(e.value("state", "")); st) a.ending = *st;
      if (!a.ending && !a.requeue) a.ending = JobState::kFailed;
      // Its stop, released now in this server's versions: the version the
      // last server released it at meant nothing here, so a replica its
      // node never started was never settled, and the job stayed
      // COMPLETING for ever with its GPUs held (operator audit).
      ReleaseStop(a);
    }
  }
  // A restored attempt was durable before the restart; a new one becomes
  // durable with its bind's commit (MarkDurable). Its nodes hear of it now:
  // their answers wait for that commit.
  a.durable = durable;
  for (const Attempt::Replica& r : a.replicas) TouchNode(r.node);
  attempts_[job] = std::move(a);
}

void ControlLoop::MarkDurable(const std::vector<std::pair<int64_t, int32_t>>& started) {
  for (const auto& [job, number] : started) {
    auto it = attempts_.find(job);
    if (it != attempts_.end() && it->second.number == number) it->second.durable = true;
  }
}

json ControlLoop::AttemptJson(int64_t job) const {
  auto it = attempts_.find(job);
  if (it == attempts_.end()) return json();
  const Attempt& a = it->second;
  json ended = json::array();
  json results = json::array();
  for (size_t i = 0; i < a.replicas.size(); ++i) {
    if (a.replicas[i].ended) ended.push_back(i);
    if (!a.replicas[i].result.empty()) results.push_back({{"replica", i}, {"result", a.replicas[i].result}});
  }
  json out = {{"attempt", a.number}, {"endedReplicas", ended}, {"replicaResults", results}};
  if (a.resume_recorded) out["resumedFrom"] = a.resumed_from;
  if (a.progress_ms > 0) {
    out["progress"] = {{"step", a.progress_step}, {"metrics", a.metrics.is_null() ? json::object() : a.metrics},
                       {"message", a.progress_message}, {"timeMs", a.progress_ms}};
  }
  if (a.ending || a.requeue) {
    out["ending"] = {{"state", a.ending ? core::JobStateName(*a.ending) : ""},
                     {"requeue", a.requeue},
                     {"reason", a.ending_reason}};
  }
  return out;
}

void ControlLoop::BeginEnding(int64_t job, std::optional<JobState> final_state, bool requeue, const std::string& reason,
                              store::WriteBatch& b, bool staggered) {
  Attempt& a = attempts_.at(job);
  a.ending = final_state;
  a.requeue = requeue;
  a.ending_reason = reason;
  const int64_t now = clock_.Now().millis();
  a.stop_at_ms = 0;
  if (staggered && options_.checkpoint_signals_per_second > 0) {
    a.stop_at_ms = std::max(now, next_stop_slot_ms_);
    next_stop_slot_ms_ = a.stop_at_ms + std::max<int64_t>(1, 1000 / options_.checkpoint_signals_per_second);
    if (a.stop_at_ms > now) delayed_stops_.insert({a.stop_at_ms, job});
  }
  if (a.stop_at_ms <= now) ReleaseStop(a);
  // The backfill plan may count on its resources after the grace period.
  (void)state_.MarkStopping(job, Time::FromMillis(std::max(now, a.stop_at_ms)) + GraceOf(a));
  const bool any_running = AttemptManaged(a) && std::any_of(a.replicas.begin(), a.replicas.end(),
                                                            [](const Attempt::Replica& r) { return !r.ended; });
  if (!any_running) {
    FinishAttempt(job, b);
    return;
  }
  JobRow& row = jobs_.at(job);
  row.state = "COMPLETING";
  row.reason = reason + "; stopping its replicas";
  row.status_json = AllocationsJson(job);
  b.jobs.push_back(row);
}

std::optional<Duration> ControlLoop::RetryBackoff(const api::JobSpec& spec, JobState state,
                                                   const proto::TaskReport& failure, JobHistory& h, bool& spends) const {
  spends = false;
  if (state == JobState::kNodeFail) return Duration::Zero();  // infrastructure: requeue, free of charge
  if (state == JobState::kTimeout || state == JobState::kCancelled || state == JobState::kCompleted) return std::nullopt;
  if (state == JobState::kOutOfMemory && !spec.retry.retry_on_oom) return std::nullopt;
  if (failure.stop_reason == "launch") return std::nullopt;  // the same node would refuse it again
  // 126 and 127: the command could not be run (not executable, not found);
  // running it again would fail the same way.
  if (failure.signal == 0 && (failure.exit_code == 126 || failure.exit_code == 127)) return std::nullopt;
  if (failure.signal == 0 && failure.exit_code >= 0) {
    for (int32_t code : spec.retry.fail_on_exit_codes) {
      if (code == failure.exit_code) return std::nullopt;
    }
  }
  if (h.retries >= spec.retry.limit) return std::nullopt;
  spends = true;
  const api::BackoffSpec& bo = spec.retry.backoff;
  double wait = static_cast<double>(bo.initial.millis());
  for (int32_t i = 0; i < h.retries && wait < static_cast<double>(bo.max.millis()); ++i) wait *= bo.factor;
  return Duration::Millis(std::min<int64_t>(static_cast<int64_t>(wait), bo.max.millis()));
}

void ControlLoop::FinishAttempt(int64_t job, store::WriteBatch& b) {
  Attempt a = std::move(attempts_.at(job));
  attempts_.erase(job);
  for (const Attempt::Replica& r : a.replicas) attempts_on_node_[r.node].erase(job);
  const Time now = clock_.Now();
  // The attempt ended when its last replica did.
  int64_t end_ms = 0;
  for (const Attempt::Replica& r : a.replicas) end_ms = std::max(end_ms, r.end_ms > 0 ? r.end_ms : now.millis());
  const Time end = Time::FromMillis(end_ms);
  JobRow& row = jobs_.at(job);
  for (const Attempt::Replica& r : a.replicas) TouchNode(r.node);
  JobHistory& h = history_[job];
  if (!h.attempts.is_array()) h.attempts = json::array();
  // An attempt started after the job became immune to preemption has ended:
  // it may be preempted again.
  if (auto im = immune_since_ms_.find(job); im != immune_since_ms_.end() && a.start_ms > im->second) {
    (void)state_.SetPreemptImmune(job, false);
    immune_since_ms_.erase(im);
  }
  JobState final_state = a.ending.value_or(JobState::kCompleted);
  // A gang whose node died often fails first on another replica (its
  // collective sees the peer vanish). When a replica was lost with its
  // node, the attempt's failure is the node's: requeued without spending a
  // retry.
  if (a.node_lost && !a.requeue && final_state == JobState::kFailed) {
    a.ending_reason += "; a replica's node was lost, so the failure counts as the node's";
    final_state = JobState::kNodeFail;
  }
  // The record of this attempt.
  json record = {{"attempt", a.number},
                 {"startTime", a.start_ms},
                 {"endTime", end_ms},
                 {"result", a.requeue ? "REQUEUED" : core::JobStateName(final_state)},
                 {"reason", a.requeue || final_state != JobState::kCompleted ? a.ending_reason : ""}};
  json replicas = json::array();
  for (size_t i = 0; i < a.replicas.size(); ++i) {
    replicas.push_back({{"replica", i}, {"node", state_.nodes()[a.replicas[i].node].spec.name}, {"result", a.replicas[i].result}});
  }
  record["replicas"] = replicas;
  if (a.resume_recorded) record["resumedFrom"] = a.resumed_from;
  if (a.progress_ms > 0) record["lastStep"] = a.progress_step;
  h.attempts.push_back(std::move(record));

  bool spends = false;
  std::optional<Duration> backoff;
  if (!a.requeue && a.spec) backoff = RetryBackoff(*a.spec, final_state, a.failure, h, spends);
  if (a.requeue || backoff) {
    const Time not_before = backoff ? now + *backoff : Time::Zero();
    if (!state_.Requeue(job, a.ending_reason, not_before).ok()) return;
    row.state = "PENDING";
    row.start_ms.reset();
    if (a.requeue) {
      row.reason = a.ending_reason;
      b.events.push_back(Event(job, "Requeued", "", a.ending_reason));
    } else {
      if (spends) {
        ++h.retries;
      } else {
        ++h.requeues;
      }
      h.not_before_ms = not_before.millis();
      const std::string why = spends ? "retry " + std::to_string(h.retries) + " of " + std::to_string(a.spec->retry.limit)
                                     : "requeued after an infrastructure failure (no retry spent)";
      row.reason = "Retrying: " + a.ending_reason + "; " + why +
                   (backoff->millis() > 0 ? ", not before " + std::to_string(backoff->millis() / 1000) + " s" : "");
      b.events.push_back(Event(job, "Retrying", core::JobStateName(final_state), row.reason));
    }
  } else {
    const std::string reason = final_state == JobState::kCompleted ? "" : a.ending_reason;
    if (!state_.Finish(job, final_state, end, reason).ok()) return;
    row.state = core::JobStateName(final_state);
    row.end_ms = end_ms;
    row.reason = reason;
    if (final_state != JobState::kCompleted && final_state != JobState::kCancelled && h.retries > 0) {
      row.reason += " (after " + std::to_string(h.retries) + " retries)";
    }
    const char* type = final_state == JobState::kCompleted   ? "Completed"
                       : final_state == JobState::kCancelled ? "Cancelled"
                                                             : "Failed";
    b.events.push_back(Event(job, type, core::JobStateName(final_state), reason.empty() ? "all replicas exited 0" : row.reason));
    catalog_.erase(job);  // the store keeps the entries for queries
  }
  row.status_json = AllocationsJson(job);
  b.jobs.push_back(row);
  reasons_.erase(job);
  dirty_ = true;
}

void ControlLoop::ReplicaEnded(int64_t job, int32_t replica, const proto::TaskReport& r, store::WriteBatch& b) {
  Attempt& a = attempts_.at(job);
  Attempt::Replica& rep = a.replicas[replica];
  rep.ended = true;
  // When it ended, not when the server heard of it (after an outage, much
  // later); an agent's clock is trusted only within the attempt's span.
  const int64_t now_ms = clock_.Now().millis();
  rep.end_ms = std::clamp(r.end_ms > 0 ? r.end_ms : now_ms, std::min(a.start_ms, now_ms), now_ms);
  const bool ok = r.exit_code == 0 && r.signal == 0 && !r.oom && r.stop_reason.empty();
  const std::string where = "replica " + std::to_string(replica) + " on " + state_.nodes()[rep.node].spec.name;
  if (ok) {
    rep.result = "exited 0";
  } else {
    const auto [state, words] = Classify(r);
    rep.result = words;
    if (r.stop_reason == "lost" || r.stop_reason == "fenced") a.node_lost = true;
    if (!a.ending && !a.requeue) {
      a.failure = r;
      b.events.push_back(Event(job, "ReplicaFailed", core::JobStateName(state), where + " " + words));
      BeginEnding(job, state, false, where + " " + words, b);
      if (!attempts_.count(job)) return;  // ended at once
    }
  }
  Attempt& still = attempts_.at(job);
  const bool all_ended =
      std::all_of(still.replicas.begin(), still.replicas.end(), [](const Attempt::Replica& x) { return x.ended; });
  if (all_ended) {
    FinishAttempt(job, b);
  } else {
    JobRow& row = jobs_.at(job);
    row.status_json = AllocationsJson(job);
    b.jobs.push_back(row);
  }
}

void ControlLoop::AgentSync(std::shared_ptr<const proto::SyncRequest> req, SyncPhase phase, SyncReply done) {
  Async<StatusOr<SyncResult>>([this, req, phase](SyncReply reply) { DoAgentSync(*req, phase, reply); }, std::move(done),
                              ShuttingDown());
}

void ControlLoop::DoAgentSync(const proto::SyncRequest& req, SyncPhase phase, const SyncReply& reply) {
  if (req.epoch > epoch_) {
    return reply(FailedPrecondition("this agent has seen leader epoch " + std::to_string(req.epoch) +
                                    ", newer than this server's " + std::to_string(epoch_) + "; this server is not the leader"));
  }
  const Time now = clock_.Now();
  // One agent a node: a second one with the node's name (a copy started by
  // hand, a cloned machine) would run its tasks a second time and end them
  // as it saw fit. It is refused while the serving one may still run tasks:
  // until that one has been silent for lostAfter (longer than the lease, so
  // its tasks have fenced themselves, and the node's jobs are requeued).
  if (auto serving = agents_.find(req.node); serving != agents_.end() && !req.agent_id.empty() &&
                                             !serving->second.agent_id.empty() &&
                                             serving->second.agent_id != req.agent_id) {
    const int64_t silent_ms = now.millis() - serving->second.last_sync_ms;
    bool waiting = false;  // the serving agent's sync is held here: it is alive
    {
      std::lock_guard<std::mutex> lock(versions_mu_);
      auto slot = versions_.find(req.node);
      waiting = slot != versions_.end() && !slot->second->waiters.empty();
    }
    if (waiting || silent_ms < options_.node_lost_after.millis()) {
      return reply(FailedPrecondition("node " + req.node + " is served by another agent (" + serving->second.agent_id +
                                      (waiting ? ", whose sync is waiting here" : ", which synced " +
                                                  std::to_string(silent_ms) + " ms ago") + "); this agent (" +
                                      req.agent_id + ") may take over once that one has been silent for " +
                                      "agents.lostAfter (" + options_.node_lost_after.ToString() + ")"));
    }
  }
  store::WriteBatch b;
  SyncResult out;
  auto found = node_index_.find(req.node);
  if (phase == SyncPhase::kAfterWait) {
    if (found == node_index_.end()) return reply(NotFound("node " + req.node + " is not registered"));
    const bool wait = BuildDesired(found->second, out.response);
    return ReplyDurable({}, wait, std::move(out), reply);
  }
  // The node: registered on its agent's first sync.
  std::optional<core::NodeIndex> index;
  if (found != node_index_.end()) index = found->second;
  if (!index) {
    core::NodeSpec n;
    n.name = req.node;
    n.gpu_type = req.gpu_type;
    n.capacity.gpus = static_cast<int64_t>(req.gpus.size());
    n.capacity.cpu_milli = req.cpu_milli;
    n.capacity.memory_bytes = req.memory_bytes;
    auto label = [&](const char* k) { return req.labels.count(k) ? req.labels.at(k) : std::string(); };
    n.topology.leaf = label("leaf");
    n.topology.spine = label("spine");
    n.topology.zone = label("zone");
    auto added = state_.AddNode(n);
    if (!added.ok()) return reply(added.status());
    index = *added;
    node_index_[req.node] = *index;
    dirty_ = true;
    out.changed = true;
  }
  AgentNode& agent = agents_[req.node];
  if (!req.agent_id.empty() && agent.agent_id != req.agent_id) {
    if (!agent.agent_id.empty()) {
      b.events.push_back({0, 0, now.millis(), "AgentReplaced", "",
                          "node " + req.node + ": agent " + req.agent_id + " took over from " + agent.agent_id});
    }
    agent.agent_id = req.agent_id;
  }
  const bool first = agent.inventory.empty() || agent.address != req.address;
  agent.last_sync_ms = now.millis();
  agent.address = req.address;
  agent.log_port = req.log_port;
  agent.synced = true;
  if (agent.unreachable) {
    agent.unreachable = false;
    (void)state_.SetSchedulable(*index, agent.cordon.empty());
    dirty_ = true;
  }
  // At most this many GPU health events of one report are stored one by
  // one (a GPU that floods XIDs, or a bogus agent, must not fill the store);
  // the rest are counted in one event. Fatal ones act all the same.
  constexpr size_t kStoredHealthEvents = 16;
  size_t health_event = 0;
  for (const proto::HealthEventReport& e : req.health_events) {
    agent.events.push_back(e);
    const std::string xid = e.xid ? "XID " + std::to_string(e.xid) : "";
    const std::string what = req.node + " GPU " + e.uuid + ": " +
                             (e.kind == "xid" && !xid.empty() ? xid : e.kind + (xid.empty() ? "" : " " + xid)) +
                             (e.fatal ? " (fatal)" : "");
    if (++health_event <= kStoredHealthEvents) b.events.push_back({0, 0, now.millis(), "GpuHealth", e.kind, what});
    if (!e.fatal) continue;
    // A fatal GPU fault: the node gets no new work (cordoned until an
    // operator clears it), and the gangs using that GPU are stopped and
    // requeued elsewhere without spending a retry.
    if (agent.cordon.empty()) {
      agent.cordon = what;
      (void)state_.SetSchedulable(*index, false);
      b.events.push_back({0, 0, now.millis(), "NodeCordoned", "GpuFault", req.node + " cordoned: " + what});
      dirty_ = true;
    }
    int32_t device = -1;
    for (const proto::GpuReport& g : req.gpus) {
      if (g.uuid == e.uuid) device = g.index;
    }
    const std::set<int64_t> jobs = attempts_on_node_[*index];
    for (int64_t job : jobs) {
      auto it = attempts_.find(job);
      if (it == attempts_.end() || it->second.ending || it->second.requeue) continue;
      bool uses = false;
      for (const Attempt::Replica& r : it->second.replicas) {
        uses = uses || (r.node == *index && !r.ended &&
                        (device < 0 || std::find(r.gpus.begin(), r.gpus.end(), device) != r.gpus.end()));
      }
      if (!uses) continue;
      b.events.push_back(Event(job, "GpuFault", "NODE_FAIL", what));
      BeginEnding(job, JobState::kNodeFail, false, "its GPU failed: " + what, b);
      out.changed = true;
    }
  }
  if (health_event > kStoredHealthEvents) {
    b.events.push_back({0, 0, now.millis(), "GpuHealth", "Many",
                        req.node + ": " + std::to_string(health_event - kStoredHealthEvents) +
                            " more GPU health events in one report, not stored one by one"});
  }
  if (agent.events.size() > 32) agent.events.erase(agent.events.begin(), agent.events.end() - 32);
  // The node's report is rebuilt (and stored) only when it changed.
  std::string inventory = req.gpu_type + "|" + req.address + "|" + std::to_string(req.log_port) + "|" + req.cgroups +
                          "|" + req.agent_version + "|" + req.gpu_note + "|" + std::to_string(req.cpu_milli) + "|" +
                          std::to_string(req.memory_bytes);
  for (const auto& [k, v] : req.labels) inventory += "|" + k + "=" + v;
  for (const proto::GpuReport& g : req.gpus) inventory += "|" + g.uuid + (g.healthy ? "+" : "-") + g.health;
  if (inventory != agent.inventory || !req.health_events.empty()) {
    agent.inventory = inventory;
    json status = {{"source", "agent"},
                   {"gpuType", req.gpu_type},
                   {"gpus", static_cast<int64_t>(req.gpus.size())},
                   {"cpuMilli", req.cpu_milli},
                   {"memoryBytes", req.memory_bytes},
                   {"leaf", req.labels.count("leaf") ? req.labels.at("leaf") : ""},
                   {"spine", req.labels.count("spine") ? req.labels.at("spine") : ""},
                   {"zone", req.labels.count("zone") ? req.labels.at("zone") : ""},
                   {"labels", req.labels},
                   {"address", req.address},
                   {"logPort", req.log_port},
                   {"agentVersion", req.agent_version},
                   {"gpuSource", req.gpu_source},
                   {"gpuNote", req.gpu_note},
                   {"cgroups", req.cgroups}};
    json gpus = json::array();
    for (const proto::GpuReport& g : req.gpus) {
      gpus.push_back({{"index", g.index}, {"uuid", g.uuid}, {"name", g.name}, {"memoryBytes", g.memory_bytes},
                      {"numaNode", g.numa_node}, {"nvlinks", g.nvlinks}, {"healthy", g.healthy}, {"health", g.health}});
    }
    status["gpuDevices"] = gpus;
    json events = json::array();
    for (const proto::HealthEventReport& e : agent.events) {
      events.push_back({{"uuid", e.uuid}, {"xid", e.xid}, {"kind", e.kind}, {"fatal", e.fatal}, {"timeMs", e.time_ms}});
    }
    status["healthEvents"] = events;
    if (!agent.cordon.empty()) status["cordoned"] = agent.cordon;
    agent.status_json = status.dump();
    b.nodes.push_back({req.node, agent.status_json, "READY", now.millis()});
  }
  out.response.health_events_recorded = static_cast<int32_t>(req.health_events.size());
  if (first) {
    TouchNode(*index);
    // MASTER_ADDR may name this node: encode the assignments anew.
    for (auto& [job, a] : attempts_) {
      for (Attempt::Replica& r : a.replicas) r.encoded.reset();
    }
  }

  // Task reports, unless a newer report was processed already.
  const bool fresh = req.report_seq >= agent.report_seq;
  if (fresh) agent.report_seq = req.report_seq;
  std::set<std::pair<int64_t, int32_t>> reported;
  bool freed = false;  // a replica ended: its GPUs may be free for the next cycle
  for (const proto::TaskReport& t : req.tasks) {
    if (!fresh) break;
    auto it = attempts_.find(t.job);
    const bool current = it != attempts_.end() && it->second.number == t.attempt && t.replica >= 0 &&
                         t.replica < static_cast<int32_t>(it->second.replicas.size()) &&
                         it->second.replicas[t.replica].node == *index;
    if (!current) {
      // A stale attempt or unknown task: acknowledge its end; a running
      // one is not desired, so the agent stops it.
      if (!t.running) out.response.recorded.push_back({t.job, t.attempt, t.replica});
      continue;
    }
    Attempt::Replica& rep = it->second.replicas[t.replica];
    rep.seen = true;
    if (t.resume_known && !rep.resume_seen) {
      rep.resume_seen = true;
      RecordResume(t.job, t, b);
      out.changed = true;
    }
    reported.insert({t.job, t.replica});
    if (!t.running) {
      if (!rep.ended) {
        ReplicaEnded(t.job, t.replica, t, b);
        out.changed = true;
        freed = true;
      }
      out.response.recorded.push_back({t.job, t.attempt, t.replica});
    }
  }
  // Replicas of stopped attempts that the agent never started: its report
  // reflects a desired state from after the stop (so it never will) and
  // does not list them. They end here, or the attempt would wait forever.
  std::vector<std::pair<int64_t, int32_t>> unstarted;
  bool unsettled = false;  // such a replica, but the report predates the stop: ask again soon
  if (fresh) {
    const int64_t now_ms = now.millis();
    for (int64_t job : attempts_on_node_[*index]) {
      const Attempt& a = attempts_.at(job);
      if (!StopReleased(a, now_ms)) continue;
      for (size_t i = 0; i < a.replicas.size(); ++i) {
        const Attempt::Replica& r = a.replicas[i];
        if (r.node != *index || r.seen || r.ended || r.stop_version == 0 ||
            reported.count({job, static_cast<int32_t>(i)})) {
          continue;
        }
        // Versions of an older epoch (before this server started) say
        // nothing about this server's desired states.
        if (req.epoch == epoch_ && req.reports_version >= r.stop_version) {
          unstarted.emplace_back(job, static_cast<int32_t>(i));
        } else {
          unsettled = true;
        }
      }
    }
  }
  if (unsettled) out.changed = true;  // no long wait: its next report settles them
  for (const auto& [job, replica] : unstarted) {
    if (!attempts_.count(job)) continue;
    proto::TaskReport never;
    never.stop_reason = "unstarted";
    ReplicaEnded(job, replica, never, b);
    out.changed = true;
  }
  // Replicas the agent reported before and no longer knows were lost.
  std::vector<std::pair<int64_t, int32_t>> lost;
  if (fresh) {
    for (int64_t job : attempts_on_node_[*index]) {
      const Attempt& a = attempts_.at(job);
      for (size_t i = 0; i < a.replicas.size(); ++i) {
        const Attempt::Replica& r = a.replicas[i];
        if (r.node == *index && r.seen && !r.ended && !reported.count({job, static_cast<int32_t>(i)})) {
          lost.emplace_back(job, static_cast<int32_t>(i));
        }
      }
    }
  }
  for (const auto& [job, replica] : lost) {
    if (!attempts_.count(job)) continue;
    proto::TaskReport gone;
    gone.signal = SIGKILL;
    gone.stop_reason = "lost";
    gone.message = "was lost: its agent no longer knows the task (the node restarted or lost its state)";
    ReplicaEnded(job, replica, gone, b);
    out.changed = true;
  }

  // Acknowledgements alone do not answer a waiting sync at once: the agent
  // may repeat an end it reported until it sees the acknowledgement.
  if (!req.health_events.empty()) out.changed = true;
  const int64_t version = NodeVersion(req.node);
  if (phase == SyncPhase::kMayWait && !out.changed && req.epoch == epoch_ && version == req.version && b.empty()) {
    out.wait = true;  // nothing new: the HTTP thread waits for a change, then asks for the desired state
    return reply(std::move(out));
  }
  if (freed) {
    // The next cycle may bind work to the GPUs this report freed: the
    // answer waits for it and carries that work, instead of a later
    // nudge and a second round trip.
    Persist(std::move(b), nullptr);
    dirty_ = true;
    held_syncs_.push_back({*index, std::move(out), reply});
    return;
  }
  const bool wait = BuildDesired(*index, out.response);
  ReplyDurable(std::move(b), wait, std::move(out), reply);
}

void ControlLoop::ReplyDurable(store::WriteBatch b, bool wait, SyncResult out, SyncReply reply) {
  if (b.empty() && !wait) return reply(std::move(out));
  // The writer commits in order: once this batch is durable, so is every
  // bind submitted before it.
  Persist(std::move(b), [reply = std::move(reply), out = std::move(out)](const Status& s) {
    if (!s.ok()) return reply(s);
    reply(out);
  });
}

void ControlLoop::AnswerHeldSyncs() {
  if (held_syncs_.empty()) return;
  std::vector<HeldSync> held;
  held.swap(held_syncs_);
  for (HeldSync& h : held) {
    BuildDesired(h.node, h.out.response);
  }
  // One barrier for all: the reports they carried and the cycle's binds were
  // submitted before it.
  Persist({}, [held = std::move(held)](const Status& s) {
    for (const HeldSync& h : held) {
      if (s.ok()) {
        h.reply(h.out);
      } else {
        h.reply(s);
      }
    }
  });
}

void ControlLoop::ReleaseDueStops(Time now) {
  while (!delayed_stops_.empty() && delayed_stops_.begin()->first <= now.millis()) {
    const auto [at, job] = *delayed_stops_.begin();
    delayed_stops_.erase(delayed_stops_.begin());
    auto it = attempts_.find(job);
    if (it == attempts_.end() || it->second.stop_at_ms != at) continue;
    ReleaseStop(it->second);
  }
}

void ControlLoop::ReleaseStop(Attempt& a) {
  for (Attempt::Replica& r : a.replicas) {
    TouchNode(r.node);
    r.stop_version = NodeVersion(state_.nodes()[r.node].spec.name);
  }
}

bool ControlLoop::BuildDesired(core::NodeIndex node, proto::SyncResponse& out) {
  const int64_t now = clock_.Now().millis();
  bool wait = false;
  for (int64_t job : attempts_on_node_[node]) {
    Attempt& a = attempts_.at(job);
    if (StopReleased(a, now) || !a.spec) continue;
    for (size_t i = 0; i < a.replicas.size(); ++i) {
      Attempt::Replica& r = a.replicas[i];
      if (r.node != node || r.ended) continue;
      if (!r.encoded) r.encoded = std::make_shared<const std::string>(proto::ToJson(Assignment(job, a, static_cast<int32_t>(i))));
      out.encoded_tasks.push_back(r.encoded);
      wait = wait || !a.durable;
    }
  }
  out.epoch = epoch_;
  out.lease_ms = options_.agent_lease.millis();
  out.version = NodeVersion(state_.nodes()[node].spec.name);
  return wait;
}

proto::TaskAssignment ControlLoop::Assignment(int64_t job, const Attempt& a, int32_t replica) const {
  std::vector<ReplicaPlace> places;
  for (const Attempt::Replica& r : a.replicas) {
    const std::string& name = state_.nodes()[r.node].spec.name;
    auto ag = agents_.find(name);
    places.push_back({name, ag != agents_.end() && !ag->second.address.empty() ? ag->second.address : name});
  }
  auto task = array_task_of_.find(job);
  proto::TaskAssignment t;
  t.job = job;
  t.attempt = a.number;
  t.replica = replica;
  t.epoch = epoch_;
  t.user = jobs_.at(job).user;
  t.argv = TaskArgv(*a.spec);
  t.script = a.spec->script.has_value();
  t.image = a.spec->image.value_or("");
  t.env = TaskEnvironment(*a.spec, {job, a.number, replica, places, task != array_task_of_.end() ? task->second.index : -1,
                                    port_salt_});
  t.working_dir = a.spec->working_dir.value_or("");
  t.resume = a.resume;
  t.gpus = a.replicas[replica].gpus;
  t.cpu_milli = a.spec->resources.cpu_milli;
  t.memory_bytes = a.spec->resources.memory_bytes;
  t.time_limit_ms = a.spec->time_limit.is_infinite() ? 0 : a.spec->time_limit.millis();
  t.stop_signal = a.spec->checkpoint ? SignalNumber(a.spec->checkpoint->signal) : SIGTERM;
  t.grace_ms = GraceOf(a).millis();
  return t;
}

Duration ControlLoop::GraceOf(const Attempt& a) const {
  return a.spec && a.spec->checkpoint ? a.spec->checkpoint->grace_period : options_.default_grace;
}

void ControlLoop::SweepTimeLimits(Time now, store::WriteBatch& b) {
  // Only the jobs past their expected end, in its order: agents end their
  // own, so those overdue here are static-node jobs and a few agent-run
  // ones whose report is on its way.
  std::vector<int64_t> over;
  for (const auto& [end, job] : state_.running_by_end()) {
    if (end > now) break;
    auto it = attempts_.find(job);
    if (it == attempts_.end()) continue;
    const Attempt& a = it->second;
    if (a.ending || a.requeue || !a.spec || a.spec->time_limit.is_infinite() || AttemptManaged(a)) continue;
    over.push_back(job);
  }
  for (int64_t job : over) {
    Attempt& a = attempts_.at(job);
    a.failure = proto::TaskReport();
    a.failure.stop_reason = "timeout";
    BeginEnding(job, JobState::kTimeout, false, "reached its time limit of " + a.spec->time_limit.ToString(), b);
  }
}

void ControlLoop::SweepAgents(Time now, store::WriteBatch& b) {
  std::vector<std::string> newly_lost;
  for (auto& [name, a] : agents_) {
    const int64_t silent_ms = now.millis() - a.last_sync_ms;
    const bool silent = !a.synced || silent_ms > options_.node_unreachable_after.millis();
    if (silent != a.unreachable) {
      a.unreachable = silent;
      (void)state_.SetSchedulable(node_index_.at(name), !silent && a.cordon.empty());
      dirty_ = true;
    }
    if (!silent) a.lost = false;
    if (silent && !a.lost && silent_ms > options_.node_lost_after.millis()) newly_lost.push_back(name);
  }
  if (newly_lost.empty()) return;
  // Many nodes going silent at once is more likely this server's own
  // network than a mass failure: requeue nothing, say so, keep watching.
  // (A single node, or two, is never "many": small clusters still recover.)
  // Every node silent and not yet handled counts, not only those past
  // lostAfter in this sweep: nodes that went silent together last synced up
  // to a sync apart, so they cross the threshold in different sweeps.
  size_t silent = 0;
  for (const auto& [name, a] : agents_) silent += a.unreachable && !a.lost ? 1 : 0;
  if (silent >= 3 && static_cast<double>(silent) > options_.max_lost_fraction * static_cast<double>(agents_.size())) {
    if (!mass_silence_reported_) {
      b.events.push_back({0, 0, now.millis(), "ManyNodesSilent", "NoRequeue",
                          std::to_string(silent) + " of " + std::to_string(agents_.size()) +
                              " nodes went silent at once; assuming the fault is this server's, nothing is requeued"});
      mass_silence_reported_ = true;
    }
    return;
  }
  mass_silence_reported_ = false;
  for (const std::string& name : newly_lost) {
    agents_[name].lost = true;
    const core::NodeIndex node = node_index_.at(name);
    b.events.push_back({0, 0, now.millis(), "NodeLost", "Silent",
                        name + " has not synced for " + std::to_string((now.millis() - agents_[name].last_sync_ms) / 1000) +
                            " s; its jobs are requeued"});
    // Its replicas ended with the node (its agent, or the task shims
    // themselves, stopped them when the lease ran out); the rest of each
    // gang is stopped, then the job is requeued without spending a retry.
    const std::set<int64_t> jobs = attempts_on_node_[node];
    for (int64_t job : jobs) {
      // Ending a replica may end the attempt (and erase it): look it up
      // again for every replica.
      for (size_t i = 0;; ++i) {
        auto it = attempts_.find(job);
        if (it == attempts_.end() || i >= it->second.replicas.size()) break;
        const Attempt::Replica& r = it->second.replicas[i];
        if (r.node != node || r.ended) continue;
        proto::TaskReport lost;
        lost.signal = SIGKILL;
        lost.stop_reason = "lost";
        lost.message = "was lost with its node " + name + " (silent for more than " +
                       std::to_string(options_.node_lost_after.millis() / 1000) + " s)";
        ReplicaEnded(job, static_cast<int32_t>(i), lost, b);
      }
    }
  }
}

void ControlLoop::Cordon(const std::string& node, bool cordon, const std::string& user, bool drain,
                         Done<StatusOr<NodeView>> done) {
  using R = StatusOr<NodeView>;
  Async<R>([this, node, cordon, user, drain](std::function<void(R)> reply) {
    const std::string verb = drain ? "drain" : cordon ? "cordon" : "uncordon";
    if (std::find(options_.admins.begin(), options_.admins.end(), user) == options_.admins.end()) {
      return reply(Status(StatusCode::kPermissionDenied,
                          "only an admin may " + verb + " a node; " + user + " is not one (server option admins)"));
    }
    auto idx = node_index_.find(node);
    if (idx == node_index_.end()) return reply(NotFound("node " + node + " does not exist"));
    AgentNode& a = agents_[node];
    const std::string before = a.cordon;
    a.cordon = cordon ? (before.empty() ? (drain ? "drained by " : "cordoned by ") + user : before) : "";
    (void)state_.SetSchedulable(idx->second, !a.unreachable && a.cordon.empty());
    dirty_ = true;
    store::WriteBatch b;
    if (drain) {
      const std::set<int64_t> jobs = attempts_on_node_[idx->second];
      for (int64_t job : jobs) {
        auto it = attempts_.find(job);
        if (it == attempts_.end() || it->second.ending || it->second.requeue) continue;
        const std::string why = "its node " + node + " is drained by " + user;
        BeginEnding(job, std::nullopt, true, why, b, /*staggered=*/true);
        if (jobs_.at(job).state == "COMPLETING") b.events.push_back(Event(job, "Requeuing", "Drain", why + "; stopping its replicas"));
      }
    }
    if (a.status_json != "{}") {
      json status = json::parse(a.status_json, nullptr, false);
      if (status.is_object()) {
        if (a.cordon.empty()) {
          status.erase("cordoned");
        } else {
          status["cordoned"] = a.cordon;
        }
        a.status_json = status.dump();
        b.nodes.push_back({node, a.status_json, "READY", clock_.Now().millis()});
      }
    }
    if (before != a.cordon) {
      b.events.push_back({0, 0, clock_.Now().millis(), drain ? "NodeDrained" : cordon ? "NodeCordoned" : "NodeUncordoned", "",
                          node + " " + verb + "ed by " + user});
    }
    const core::Node& n = state_.nodes()[idx->second];
    NodeView view = ViewOf(n);
    if (b.empty()) return reply(view);
    Persist(std::move(b), [reply, view](const Status& st) {
      if (!st.ok()) return reply(st);
      reply(view);
    });
  }, std::move(done), ShuttingDown());
}

StatusOr<ControlLoop::ReplicaLocation> ControlLoop::LocateReplica(int64_t job, int32_t replica, int32_t wanted) {
  using R = StatusOr<ReplicaLocation>;
  return Call<R>([this, job, replica, wanted](std::function<void(R)> reply) {
    auto row = jobs_.find(job);
    if (row == jobs_.end()) return reply(NotFound("job " + std::to_string(job) + " does not exist"));
    // The current attempt (unless another is asked for), else the one asked
    // for or the last one recorded in the job's status.
    int32_t attempt = row->second.attempts;
    std::string node;
    auto it = attempts_.find(job);
    if (it != attempts_.end() && (wanted == 0 || it->second.number == wanted)) {
      attempt = it->second.number;
      if (replica < 0 || replica >= static_cast<int32_t>(it->second.replicas.size())) {
        // The field is named by the error's prefix ("replica: job 10 has ...").
        return reply(InvalidArgument("job " + std::to_string(job) + " has " +
                                         std::to_string(it->second.replicas.size()) + " replicas (0 to " +
                                         std::to_string(it->second.replicas.size() - 1) + "), got " +
                                         std::to_string(replica),
                                     "replica"));
      }
      node = state_.nodes()[it->second.replicas[replica].node].spec.name;
    } else {
      const json* record = nullptr;
      if (auto h = history_.find(job); h != history_.end() && h->second.attempts.is_array()) {
        for (const json& a : h->second.attempts) {
          if (wanted == 0 || a.value("attempt", 0) == wanted) record = &a;
        }
      }
      if (wanted > 0 && !record) {
        return reply(NotFound("job " + std::to_string(job) + " has no attempt " + std::to_string(wanted) +
                              " (it has had " + std::to_string(row->second.attempts) + ")"));
      }
      if (record) {
        attempt = record->value("attempt", attempt);
        for (const json& r : record->value("replicas", json::array())) {
          if (r.value("replica", -1) == replica) node = r.value("node", "");
        }
      }
    }
    if (node.empty()) {
      const std::string& state = row->second.state;
      if (row->second.attempts == 0 && (state == "PENDING" || state == "HELD")) {
        return reply(NotFound("job " + std::to_string(job) + " is " + state + " and has not run yet"));
      }
      return reply(NotFound("job " + std::to_string(job) + " has no replica " + std::to_string(replica) + " that ran"));
    }
    auto ag = agents_.find(node);
    if (ag == agents_.end() || ag->second.log_port == 0) {
      return reply(Status(StatusCode::kUnavailable, "node " + node + " has no agent serving logs"));
    }
    reply(ReplicaLocation{node, ag->second.address, ag->second.log_port, attempt});
  }, ShuttingDown());
}

}  // namespace muster::server
