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

// A task's end as the agent reported it, typed (lifecycle/replica_exit.h).
lifecycle::ReplicaExit ExitOf(const proto::TaskReport& r) {
  using lifecycle::ExitCause;
  lifecycle::ReplicaExit e;
  e.exit_code = r.exit_code;
  e.signal = r.signal;
  e.message = r.message;
  e.end = Time::FromMillis(std::max<int64_t>(r.end_ms, 0));
  if (r.oom) {
    e.cause = ExitCause::kOutOfMemory;
  } else if (r.stop_reason.empty()) {
    e.cause = ExitCause::kExited;
  } else if (!lifecycle::ExitCauseFromName(r.stop_reason, e.cause) || e.cause == ExitCause::kExited) {
    e.cause = ExitCause::kStoppedByAgent;  // "stop", or a word this server does not know
  }
  return e;
}

}  // namespace

void ControlLoop::Publish(core::NodeIndex node) {
  waits_.Publish(state_.nodes()[node].spec.name, lifecycle_.Generation(node));
}

void ControlLoop::WhenNodeChanges(const std::string& node, int64_t version, Duration max_wait,
                                  std::function<void()> then) {
  // The loop sleeps until its next deadline and this one may be sooner: a
  // task (even an empty one) makes it look again.
  if (waits_.WhenChanges(node, version, max_wait, std::move(then))) loop_.Post([] {});
}

lifecycle::JobTerms ControlLoop::TermsOf(const api::JobSpec* spec) const {
  lifecycle::JobTerms t;
  t.grace = options_.default_grace;
  if (spec == nullptr) return t;
  const api::RetrySpec& r = spec->retry;
  t.retry = {r.limit, r.backoff.initial, r.backoff.factor, r.backoff.max, r.fail_on_exit_codes, r.retry_on_oom};
  if (spec->checkpoint) t.grace = spec->checkpoint->grace_period;
  t.time_limit = spec->time_limit;
  t.stall_timeout = spec->stall_timeout;
  return t;
}

void ControlLoop::ApplyEffects(lifecycle::Effects& fx, store::WriteBatch& b) {
  const int64_t now = clock_.Now().millis();
  for (const lifecycle::LifecycleEvent& e : fx.events) {
    b.events.push_back({0, e.job, now, lifecycle::EventTypeName(e.type), e.reason, e.message});
  }
  std::vector<int64_t> written;
  for (const lifecycle::AttemptEnd& e : fx.ended) {
    const lifecycle::AttemptRecord& r = e.record;
    json record = {{"attempt", r.number},
                   {"startTime", r.start.millis()},
                   {"endTime", r.end.millis()},
                   {"result", r.requeued ? "REQUEUED" : core::JobStateName(r.state)},
                   {"reason", r.reason}};
    json replicas = json::array();
    for (size_t i = 0; i < r.replicas.size(); ++i) {
      replicas.push_back({{"replica", i}, {"node", state_.nodes()[r.replicas[i].node].spec.name},
                          {"result", r.replicas[i].result}});
    }
    record["replicas"] = replicas;
    if (auto d = details_.find(e.job); d != details_.end()) {  // the attempt that ended
      if (d->second.resume_recorded) record["resumedFrom"] = d->second.resumed_from;
      details_.erase(d);
    }
    if (r.last_step) record["lastStep"] = *r.last_step;
    json& records = attempt_records_[e.job];
    if (!records.is_array()) records = json::array();
    records.push_back(std::move(record));
    // An attempt started after the job became immune to preemption has
    // ended: it may be preempted again.
    if (auto im = immune_since_ms_.find(e.job); im != immune_since_ms_.end() && r.start.millis() > im->second) {
      (void)state_.SetPreemptImmune(e.job, false);
      immune_since_ms_.erase(im);
    }
    if (e.terminal) checkpoints_.Forget(e.job);  // the store keeps the entries for queries
    reasons_.erase(e.job);
    dirty_ = true;
    written.push_back(e.job);
  }
  for (const lifecycle::JobChange& c : fx.jobs) {
    JobTable::Change change;
    change.state = c.state;
    change.reason = c.reason;
    change.back_to_pending = c.back_to_pending;
    change.end = c.end;
    jobs_.Apply(c.job, change, clock_.Now());
    written.push_back(c.job);
  }
  // Each changed job's row once, as it stands now.
  std::set<int64_t> once;
  for (int64_t job : written) {
    if (once.insert(job).second) jobs_.Write(job, b);
  }
  std::set<core::NodeIndex> touched(fx.touched.begin(), fx.touched.end());
  for (core::NodeIndex node : touched) Publish(node);
  if (fx.resources_freed) dirty_ = true;
  fx = lifecycle::Effects();
}

void ControlLoop::ApplyCapacity(core::NodeIndex node, const core::Resources& reported, store::WriteBatch& b) {
  // Nodes from the configuration come first (Start) and keep the capacity
  // it gives them.
  if (node < static_cast<core::NodeIndex>(options_.nodes.size())) return;
  const core::NodeSpec& spec = state_.nodes()[node].spec;
  AgentRegistry::Agent& agent = agents_.Get(spec.name);
  if (reported == spec.capacity) {
    if (!agent.resizing.empty()) {  // it came back as it was
      agent.resizing.clear();
      UpdateSchedulable(node);
    }
    return;
  }
  const std::string change = spec.capacity.ToString() + " to " + reported.ToString();
  const int64_t now = clock_.Now().millis();
  if (Status s = state_.SetCapacity(node, reported); !s.ok()) {
    const std::string why = "its agent reports " + reported.ToString() + " (was " + spec.capacity.ToString() +
                            "); applied once its running jobs let it: " + s.message();
    if (agent.resizing.empty()) {
      b.events.push_back({0, 0, now, "NodeResizePending", "", spec.name + " gets no new work: " + why});
    }
    agent.resizing = why;
    UpdateSchedulable(node);
    return;
  }
  b.events.push_back({0, 0, now, "NodeResized", "", spec.name + ": " + change});
  agent.resizing.clear();
  UpdateSchedulable(node);
}

void ControlLoop::UpdateSchedulable(core::NodeIndex node) {
  const AgentRegistry::Agent* agent = agents_.Find(state_.nodes()[node].spec.name);
  const bool cordoned = agent != nullptr && agent->Cordoned();
  const bool ready = liveness_.Of(node) == lifecycle::NodeCondition::kReady;
  (void)state_.SetSchedulable(node, ready && !cordoned);
  dirty_ = true;
}

Status ControlLoop::RestoreNodes() {
  ASSIGN_OR_RETURN(std::vector<store::NodeRow> rows, store_.ListNodes());
  const std::vector<core::NodeSpec> restored =
      agents_.Restore(rows, [this](const std::string& name) { return state_.FindNode(name).has_value(); });
  for (const core::NodeSpec& n : restored) {
    auto added = state_.AddNode(n);
    if (!added.ok()) return DataLoss("store " + options_.store_path + ": node " + n.name + ": " + added.status().ToString());
    // A fresh grace period after a restart: silent from now on, not from
    // before (its running jobs are not lost at once). But no new work until
    // its agent syncs: a node that was dead before the restart looked Ready
    // and took jobs that then sat RUNNING with nothing running.
    liveness_.Watch(*added, /*synced=*/false);
    (void)state_.SetSchedulable(*added, false);
  }
  return Status::Ok();
}

void ControlLoop::StartAttempt(int64_t job, int32_t number, bool durable, const json* restored, store::WriteBatch& b) {
  AttemptDetail d;
  auto spec = api::ParseJobSpecJson(jobs_.at(job).spec_json);
  if (spec.ok()) d.spec = std::make_shared<const api::JobSpec>(std::move(*spec));
  d.resume = checkpoints_.ResumeCandidates(job);
  lifecycle::RestoredAttempt r;
  std::optional<int64_t> restored_step;
  if (restored && restored->is_object()) {
    if (restored->contains("resumedFrom")) {
      d.resumed_from = (*restored)["resumedFrom"];
      d.resume_recorded = true;
    }
    if (restored->contains("progress") && (*restored)["progress"].is_object()) {
      const json& p = (*restored)["progress"];
      restored_step = p.value("step", int64_t{-1});
      d.metrics = p.value("metrics", json());
      d.progress_message = p.value("message", "");
    }
    if (restored->contains("endedReplicas") && (*restored)["endedReplicas"].is_array()) {
      for (const json& e : (*restored)["endedReplicas"]) {
        if (e.is_number_integer()) r.ended_replicas.push_back(e.get<int32_t>());
      }
    }
    if (restored->contains("replicaResults") && (*restored)["replicaResults"].is_array()) {
      for (const json& x : (*restored)["replicaResults"]) r.results.emplace_back(x.value("replica", -1), x.value("result", ""));
    }
    if (restored->contains("ending") && (*restored)["ending"].is_object()) {
      const json& e = (*restored)["ending"];
      r.stopping = true;
      r.requeue = e.value("requeue", false);
      r.ending_reason = e.value("reason", "");
      r.ending = core::JobStateFromName(e.value("state", ""));
    }
  }
  lifecycle::Effects fx;
  if (!lifecycle_.Start(job, number, TermsOf(d.spec.get()), durable, fx, restored ? &r : nullptr).ok()) return;
  // A fresh stall period after a restart.
  if (restored_step) lifecycle_.NoteProgress(job, *restored_step);
  const lifecycle::Attempt* a = lifecycle_.Find(job);
  d.encoded.resize(a->replicas.size());
  d.resume_seen.resize(a->replicas.size());
  details_[job] = std::move(d);
  ApplyEffects(fx, b);
}

json ControlLoop::AttemptJson(int64_t job) const {
  const lifecycle::Attempt* a = lifecycle_.Find(job);
  auto d = details_.find(job);
  if (a == nullptr || d == details_.end()) return json();
  json ended = json::array();
  json results = json::array();
  for (size_t i = 0; i < a->replicas.size(); ++i) {
    if (a->replicas[i].ended) ended.push_back(i);
    if (!a->replicas[i].result.empty()) results.push_back({{"replica", i}, {"result", a->replicas[i].result}});
  }
  json out = {{"attempt", a->number}, {"endedReplicas", ended}, {"replicaResults", results}};
  if (d->second.resume_recorded) out["resumedFrom"] = d->second.resumed_from;
  if (const Time at = lifecycle_.LastProgress(job); at > Time::Zero()) {
    out["progress"] = {{"step", lifecycle_.LastStep(job)},
                       {"metrics", d->second.metrics.is_null() ? json::object() : d->second.metrics},
                       {"message", d->second.progress_message}, {"timeMs", at.millis()}};
  }
  if (a->Stopping()) {
    out["ending"] = {{"state", a->ending ? core::JobStateName(*a->ending) : ""},
                     {"requeue", a->requeue},
                     {"reason", a->ending_reason}};
  }
  return out;
}

void ControlLoop::AgentSync(std::shared_ptr<const proto::SyncRequest> req, SyncPhase phase, SyncReply done) {
  loop_.Async<StatusOr<SyncResult>>([this, req, phase](SyncReply reply) { DoAgentSync(*req, phase, reply); }, std::move(done),
                              ShuttingDown());
}

void ControlLoop::DoAgentSync(const proto::SyncRequest& req, SyncPhase phase, const SyncReply& reply) {
  if (req.epoch > epoch_) {
    return reply(FailedPrecondition("this agent has seen leader epoch " + std::to_string(req.epoch) +
                                    ", newer than this server's " + std::to_string(epoch_) + "; this server is not the leader"));
  }
  const Time now = clock_.Now();
  std::optional<core::NodeIndex> index = state_.FindNode(req.node);
  if (index) {  // one agent a node
    const Status admitted = agents_.Admit(req, now - liveness_.LastHeard(*index),
                                          [&] { return waits_.HasWaiter(req.node); }, options_.node_lost_after);
    if (!admitted.ok()) return reply(admitted);
  }
  store::WriteBatch b;
  SyncResult out;
  if (phase == SyncPhase::kAfterWait) {
    if (!index) return reply(NotFound("node " + req.node + " is not registered"));
    const bool wait = BuildDesired(*index, out.response);
    return ReplyDurable({}, wait, std::move(out), reply);
  }
  // The node: registered on its agent's first sync.
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
    dirty_ = true;
    out.changed = true;
  }
  AgentRegistry::Agent& agent = agents_.Get(req.node);
  const AgentRegistry::Served served = agents_.Serve(req, agent);
  if (served.replaced) b.events.push_back({0, 0, now.millis(), "AgentReplaced", "", *served.replaced});
  const bool first = served.first;
  if (liveness_.Heard(*index) || first) UpdateSchedulable(*index);
  ApplyCapacity(*index, {static_cast<int64_t>(req.gpus.size()), req.cpu_milli, req.memory_bytes}, b);
  // At most this many GPU health events of one report are stored one by
  // one (a GPU that floods XIDs, or a bogus agent, must not fill the store);
  // the rest are counted in one event. Fatal ones act all the same.
  constexpr size_t kStoredHealthEvents = 16;
  size_t health_event = 0;
  for (const proto::HealthEventReport& e : req.health_events) {
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
      agent.cordon = what;  // stored with the status below
      (void)state_.SetSchedulable(*index, false);
      b.events.push_back({0, 0, now.millis(), "NodeCordoned", "GpuFault", req.node + " cordoned: " + what});
      dirty_ = true;
    }
    int32_t device = -1;
    for (const proto::GpuReport& g : req.gpus) {
      if (g.uuid == e.uuid) device = g.index;
    }
    const std::set<int64_t> jobs = lifecycle_.AttemptsOn(*index);
    for (int64_t job : jobs) {
      const lifecycle::Attempt* a = lifecycle_.Find(job);
      if (a == nullptr || a->Stopping()) continue;
      bool uses = false;
      for (const lifecycle::Replica& r : a->replicas) {
        uses = uses || (r.node == *index && !r.ended &&
                        (device < 0 || std::find(r.gpus.begin(), r.gpus.end(), device) != r.gpus.end()));
      }
      if (!uses) continue;
      b.events.push_back(Event(job, "GpuFault", "NODE_FAIL", what));
      lifecycle::Effects fx;
      lifecycle_.Fail(job, JobState::kNodeFail, lifecycle::ReplicaExit(), "its GPU failed: " + what, fx);
      ApplyEffects(fx, b);
      out.changed = true;
    }
  }
  if (health_event > kStoredHealthEvents) {
    b.events.push_back({0, 0, now.millis(), "GpuHealth", "Many",
                        req.node + ": " + std::to_string(health_event - kStoredHealthEvents) +
                            " more GPU health events in one report, not stored one by one"});
  }
  if (std::optional<std::string> status = agents_.Report(req, agent)) {
    b.nodes.push_back({req.node, *status, "READY", now.millis()});
  }
  out.response.health_events_recorded = static_cast<int32_t>(req.health_events.size());
  if (first) {
    lifecycle::Effects fx;
    lifecycle_.Touch(*index, fx);
    ApplyEffects(fx, b);
    // MASTER_ADDR and the replicas' addresses may name this node: encode
    // the assignments of the attempts placed here anew (only those: with
    // thousands of jobs, every node's first sync would re-encode them all).
    for (int64_t job : lifecycle_.AttemptsOn(*index)) {
      for (auto& e : details_.at(job).encoded) e.reset();
    }
  }

  // Task reports, unless a newer report was processed already.
  bool freed = false;  // a replica ended: its GPUs may be free for the next cycle
  if (req.report_seq >= agent.report_seq) {
    agent.report_seq = req.report_seq;
    lifecycle::NodeReport report;
    report.node = *index;
    // Generations of an older epoch (before this server started) say
    // nothing about this server's desired states.
    report.acted_on = req.epoch == epoch_ ? req.reports_version : -1;
    for (const proto::TaskReport& t : req.tasks) {
      report.tasks.push_back({t.job, t.attempt, t.replica, t.running, t.running ? lifecycle::ReplicaExit() : ExitOf(t)});
      // The checkpoint a replica of the current attempt resumed from.
      if (!t.resume_known || !lifecycle_.IsCurrent(t.job, t.attempt, t.replica, *index)) continue;
      AttemptDetail& d = details_.at(t.job);
      if (d.resume_seen[t.replica]) continue;
      d.resume_seen[t.replica] = true;
      RecordResume(t.job, t, b);
      out.changed = true;
    }
    lifecycle::Effects fx;
    const lifecycle::ReportResult result = lifecycle_.Report(report, fx);
    ApplyEffects(fx, b);
    for (const auto& k : result.recorded) out.response.recorded.push_back({k.job, k.attempt, k.replica});
    out.changed = out.changed || result.changed;
    freed = result.replica_ended;
  }

  // Acknowledgements alone do not answer a waiting sync at once: the agent
  // may repeat an end it reported until it sees the acknowledgement.
  if (!req.health_events.empty()) out.changed = true;
  const int64_t version = lifecycle_.Generation(*index);
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

bool ControlLoop::BuildDesired(core::NodeIndex node, proto::SyncResponse& out) {
  bool wait = false;
  for (const auto& [job, replica] : lifecycle_.Desired(node, wait)) {
    const lifecycle::Attempt& a = *lifecycle_.Find(job);
    AttemptDetail& d = details_.at(job);
    if (!d.spec) continue;
    std::shared_ptr<const std::string>& encoded = d.encoded[replica];
    if (!encoded) encoded = std::make_shared<const std::string>(proto::ToJson(Assignment(job, a, d, replica)));
    out.encoded_tasks.push_back(encoded);
  }
  out.epoch = epoch_;
  out.lease_ms = options_.agent_lease.millis();
  out.version = lifecycle_.Generation(node);
  return wait;
}

proto::TaskAssignment ControlLoop::Assignment(int64_t job, const lifecycle::Attempt& a, const AttemptDetail& d,
                                              int32_t replica) const {
  std::vector<ReplicaPlace> places;
  for (const lifecycle::Replica& r : a.replicas) {
    const std::string& name = state_.nodes()[r.node].spec.name;
    places.push_back({name, agents_.AddressOf(name)});
  }
  auto task = array_task_of_.find(job);
  const api::JobSpec& spec = *d.spec;
  proto::TaskAssignment t;
  t.job = job;
  t.attempt = a.number;
  t.replica = replica;
  t.epoch = epoch_;
  t.user = jobs_.at(job).user;
  t.argv = TaskArgv(spec);
  t.script = spec.script.has_value();
  t.image = spec.image.value_or("");
  t.env = TaskEnvironment(spec, {job, a.number, replica, places, task != array_task_of_.end() ? task->second.index : -1,
                                 port_salt_});
  t.working_dir = spec.working_dir.value_or("");
  t.resume = d.resume;
  t.gpus = a.replicas[replica].gpus;
  t.cpu_milli = spec.resources.cpu_milli;
  t.memory_bytes = spec.resources.memory_bytes;
  t.time_limit_ms = spec.time_limit.is_infinite() ? 0 : spec.time_limit.millis();
  t.stop_signal = spec.checkpoint ? SignalNumber(spec.checkpoint->signal) : SIGTERM;
  t.grace_ms = a.terms.grace.millis();
  return t;
}

void ControlLoop::SweepAgents(store::WriteBatch& b) {
  lifecycle::Effects fx;
  const lifecycle::NodeLiveness::SweepResult swept = liveness_.Sweep(fx);
  for (core::NodeIndex node : swept.changed) UpdateSchedulable(node);
  for (core::NodeIndex node : swept.lost) lifecycle_.NodeLost(node, liveness_.SilentTooLong(node), fx);
  ApplyEffects(fx, b);
}

void ControlLoop::Cordon(const std::string& node, bool cordon, const std::string& user, bool drain,
                         Done<StatusOr<NodeView>> done) {
  using R = StatusOr<NodeView>;
  loop_.Async<R>([this, node, cordon, user, drain](std::function<void(R)> reply) {
    const std::string verb = drain ? "drain" : cordon ? "cordon" : "uncordon";
    const StatusOr<core::NodeIndex> index = AdminNode(node, user, verb);
    if (!index.ok()) return reply(index.status());
    AgentRegistry::Agent& a = agents_.Get(node);
    const std::string before = a.cordon;
    const std::optional<std::string> status =
        agents_.SetCordon(a, cordon ? (before.empty() ? (drain ? "drained by " : "cordoned by ") + user : before) : "");
    UpdateSchedulable(*index);
    store::WriteBatch b;
    if (status) b.nodes.push_back({node, *status, "READY", clock_.Now().millis()});
    if (drain) {
      // Stop changes nothing for an attempt already stopping.
      const std::set<int64_t> jobs = lifecycle_.AttemptsOn(*index);
      for (int64_t job : jobs) {
        const std::string why = "its node " + node + " is drained by " + user;
        lifecycle::Effects fx;
        if (lifecycle_.Stop(job, std::nullopt, true, why, /*staggered=*/true, fx) == lifecycle::StopOutcome::kStopping) {
          b.events.push_back(Event(job, "Requeuing", "Drain", why + "; stopping its replicas"));
        }
        ApplyEffects(fx, b);
      }
    }
    if (before != a.cordon) {
      b.events.push_back({0, 0, clock_.Now().millis(), drain ? "NodeDrained" : cordon ? "NodeCordoned" : "NodeUncordoned", "",
                          node + " " + verb + "ed by " + user});
    }
    ReplyNodeView(std::move(b), *index, reply);
  }, std::move(done), ShuttingDown());
}

Status ControlLoop::RequireAdmin(const std::string& user, const std::string& verb) const {
  if (std::find(options_.admins.begin(), options_.admins.end(), user) != options_.admins.end()) return Status::Ok();
  return Status(StatusCode::kPermissionDenied,
                "only an admin may " + verb + "; " + user + " is not one (server option admins)");
}

StatusOr<core::NodeIndex> ControlLoop::AdminNode(const std::string& node, const std::string& user,
                                                 const std::string& verb) {
  RETURN_IF_ERROR(RequireAdmin(user, verb + " a node"));
  const std::optional<core::NodeIndex> index = state_.FindNode(node);
  if (!index || agents_.Removed(node)) return NotFound("node " + node + " does not exist");
  return *index;
}

void ControlLoop::ReplyNodeView(store::WriteBatch b, core::NodeIndex node,
                                const std::function<void(StatusOr<NodeView>)>& reply) {
  NodeView view = ViewOf(state_.nodes()[node]);
  if (b.empty()) return reply(view);
  Persist(std::move(b), [reply, view](const Status& st) {
    if (!st.ok()) return reply(st);
    reply(view);
  });
}

void ControlLoop::DeclareLost(const std::string& node, const std::string& user, Done<StatusOr<NodeView>> done) {
  using R = StatusOr<NodeView>;
  loop_.Async<R>([this, node, user](std::function<void(R)> reply) {
    const StatusOr<core::NodeIndex> index = AdminNode(node, user, "declare lost");
    if (!index.ok()) return reply(index.status());
    lifecycle::Effects fx;
    if (Status s = liveness_.DeclareLost(*index, user, fx); !s.ok()) return reply(s);
    UpdateSchedulable(*index);
    lifecycle_.NodeLost(*index, "was lost with its node " + node + " (declared lost by " + user + ")", fx);
    store::WriteBatch b;
    ApplyEffects(fx, b);
    ReplyNodeView(std::move(b), *index, reply);
  }, std::move(done), ShuttingDown());
}

void ControlLoop::RemoveNode(const std::string& node, const std::string& user, Done<StatusOr<NodeView>> done) {
  using R = StatusOr<NodeView>;
  loop_.Async<R>([this, node, user](std::function<void(R)> reply) {
    const StatusOr<core::NodeIndex> index = AdminNode(node, user, "remove");
    if (!index.ok()) return reply(index.status());
    if (!liveness_.Watched(*index)) {
      return reply(FailedPrecondition("node " + node + " comes from the server's configuration; remove it there"));
    }
    if (const lifecycle::NodeCondition c = liveness_.Of(*index); c != lifecycle::NodeCondition::kLost) {
      return reply(FailedPrecondition("node " + node + " is " + lifecycle::NodeConditionName(c) +
                                      "; only a lost node can be removed (declare it lost first)"));
    }
    if (const std::set<int64_t>& jobs = lifecycle_.AttemptsOn(*index); !jobs.empty()) {
      return reply(FailedPrecondition("node " + node + " still holds job " + std::to_string(*jobs.begin()) +
                                      ", whose other replicas are being stopped; try again once it has ended"));
    }
    AgentRegistry::Agent& a = agents_.Get(node);
    a.removed = true;
    a.inventory.clear();  // a returning agent's first sync stores the node again
    UpdateSchedulable(*index);
    store::WriteBatch b;
    b.removed_nodes.push_back(node);
    b.events.push_back({0, 0, clock_.Now().millis(), "NodeRemoved", "", node + " removed by " + user});
    ReplyNodeView(std::move(b), *index, reply);
  }, std::move(done), ShuttingDown());
}

StatusOr<ControlLoop::ReplicaLocation> ControlLoop::LocateReplica(int64_t job, int32_t replica, int32_t wanted) {
  using R = StatusOr<ReplicaLocation>;
  return loop_.Call<R>([this, job, replica, wanted](std::function<void(R)> reply) {
    const store::JobRow* row = jobs_.Find(job);
    if (row == nullptr) return reply(NotFound("job " + std::to_string(job) + " does not exist"));
    // The current attempt (unless another is asked for), else the one asked
    // for or the last one recorded in the job's status.
    int32_t attempt = row->attempts;
    std::string node;
    const lifecycle::Attempt* current = lifecycle_.Find(job);
    if (current != nullptr && (wanted == 0 || current->number == wanted)) {
      attempt = current->number;
      if (replica < 0 || replica >= static_cast<int32_t>(current->replicas.size())) {
        // The field is named by the error's prefix ("replica: job 10 has ...").
        return reply(InvalidArgument("job " + std::to_string(job) + " has " +
                                         std::to_string(current->replicas.size()) + " replicas (0 to " +
                                         std::to_string(current->replicas.size() - 1) + "), got " +
                                         std::to_string(replica),
                                     "replica"));
      }
      node = state_.nodes()[current->replicas[replica].node].spec.name;
    } else {
      const json* record = nullptr;
      if (auto h = attempt_records_.find(job); h != attempt_records_.end() && h->second.is_array()) {
        for (const json& a : h->second) {
          if (wanted == 0 || a.value("attempt", 0) == wanted) record = &a;
        }
      }
      if (wanted > 0 && !record) {
        return reply(NotFound("job " + std::to_string(job) + " has no attempt " + std::to_string(wanted) +
                              " (it has had " + std::to_string(row->attempts) + ")"));
      }
      if (record) {
        attempt = record->value("attempt", attempt);
        for (const json& r : record->value("replicas", json::array())) {
          if (r.value("replica", -1) == replica) node = r.value("node", "");
        }
      }
    }
    if (node.empty()) {
      const JobState state = StateOf(job);
      if (row->attempts == 0 && (state == JobState::kPending || state == JobState::kHeld)) {
        return reply(NotFound("job " + std::to_string(job) + " is " + core::JobStateName(state) + " and has not run yet"));
      }
      return reply(NotFound("job " + std::to_string(job) + " has no replica " + std::to_string(replica) + " that ran"));
    }
    const AgentRegistry::Agent* ag = agents_.Find(node);
    if (ag == nullptr || ag->log_port == 0) {
      return reply(Status(StatusCode::kUnavailable, "node " + node + " has no agent serving logs"));
    }
    reply(ReplicaLocation{node, ag->address, ag->log_port, attempt});
  }, ShuttingDown());
}

}  // namespace muster::server
