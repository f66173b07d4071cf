// ControlLoop: agents. A node's registration by its agent's first sync,
// each sync's report (capacity, GPU health, tasks) and its answer (the
// node's desired state, once durable), long polls, and nodes whose agents
// went silent (see the "Agents" paragraph of control_loop.h).
#include <algorithm>
#include <set>

#include "common/message_text.h"
#include "server/control_loop.h"

#include <fmt/format.h>

namespace muster::server {

using core::JobState;

namespace {

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

void ControlLoop::AgentSync(const std::shared_ptr<const proto::SyncRequest>& req, SyncPhase phase, SyncReply done) {
  loop_.Async<StatusOr<SyncResult>>([this, req, phase](const SyncReply& reply) { DoAgentSync(*req, phase, reply); },
                                    std::move(done), ShuttingDown());
}

void ControlLoop::DoAgentSync(const proto::SyncRequest& req, SyncPhase phase, const SyncReply& reply) {
  if (req.epoch > epoch_) {
    return reply(FailedPrecondition("this agent has seen leader epoch " + std::to_string(req.epoch) +
                                    ", newer than this server's " + std::to_string(epoch_) +
                                    "; this server is not the leader"));
  }
  const Time now = clock_.Now();
  std::optional<core::NodeIndex> index = state_.FindNode(req.node);
  if (index) {  // one agent a node
    const Status admitted = agents_.Admit(
        req, now - liveness_.LastHeard(*index), [&] { return waits_.HasWaiter(req.node); },
        std::max(options_.node_lost_after, liveness_.FencedAfter(*index)));
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
    n.features = core::WithPoolFeature(req.features);
    auto added = state_.AddNode(n);
    if (!added.ok()) return reply(added.status());
    index = *added;
    pacer_.Changed();
    out.changed = true;
  }
  AgentRegistry::Agent& agent = agents_.Get(req.node);
  const AgentRegistry::Served served = agents_.Serve(req, agent);
  if (served.replaced) b.events.push_back({0, 0, now.millis(), "AgentReplaced", "", *served.replaced});
  const bool first = served.first;
  if (liveness_.Heard(*index) || first) UpdateSchedulable(*index);
  ApplyCapacity(*index, {static_cast<int64_t>(req.gpus.size()), req.cpu_milli, req.memory_bytes}, b);
  // What the node can do (Podman installed or gone): placed by from the next cycle.
  std::vector<std::string> reported = req.features;
  // A node of the configuration keeps the pool it gives.
  if (*index < static_cast<core::NodeIndex>(options_.nodes.size())) {
    if (core::InSpotPool(options_.nodes[*index].features) && !core::InSpotPool(reported)) {
      reported.emplace_back(core::kSpotFeature);
    }
  }
  if (std::vector<std::string> features = core::WithPoolFeature(std::move(reported));
      state_.nodes()[*index].spec.features != features) {
    if (const Status set = state_.SetFeatures(*index, features); !set.ok()) return reply(set);
    pacer_.Changed();
    out.changed = true;
  }
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
      pacer_.Changed();
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
  // The cloud's notice that it takes the node back, as its agent heard it.
  if (req.reclaim_in_ms > 0) {
    BeginReclaim(*index, now + Duration::Millis(req.reclaim_in_ms),
                 "its agent" + (req.reclaim_source.empty() ? "" : ": " + SanitizeForMessage(req.reclaim_source)), b);
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
      report.tasks.push_back(
          {t.job, t.attempt, t.replica, t.running, t.running ? lifecycle::ReplicaExit() : ExitOf(t)});
      if (!lifecycle_.IsCurrent(t.job, t.attempt, t.replica, *index)) continue;
      AttemptDetail& d = details_.at(t.job);
      if (t.gpu_utilization >= 0) d.utilization[t.replica] = t.gpu_utilization;
      if (!t.image_state.empty() && t.image_state != d.image_seen[t.replica]) {
        RecordImageState(t.job, t, req.node, b);
        d.image_seen[t.replica] = t.image_state;
        out.changed = true;
      }
      // The checkpoint a replica of the current attempt resumed from.
      if (!t.resume_known || d.resume_seen[t.replica]) continue;
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

  // Pre-pulls: an outcome is a cluster event; a pull the agent has not
  // heard of is news for it.
  if (!req.pulls.empty() || !image_pulls_.Wanted(req.node).empty()) {
    const std::vector<ImagePull> ended = image_pulls_.Report(req.node, req.pulls);
    for (const ImagePull& p : ended) {
      const bool ok = p.state == "pulled";
      b.events.push_back({0, 0, clock_.Now().millis(), ok ? "ImagePulled" : "ImagePullFailed", "",
                          ok ? fmt::format("{} pulled {} in {:.1f} s", req.node, p.image, p.ms / 1000.0)
                             : req.node + " could not pull " + p.image + ": " + p.message});
    }
    if (!ended.empty()) b.meta.emplace_back(ImagePulls::kMetaKey, image_pulls_.Dump());
    if (image_pulls_.Unheard(req.node, req.pulls)) out.changed = true;
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
    pacer_.Changed();
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
    if (!SignalReaches(*d.spec, replica)) continue;
    for (const SentSignal& s : d.signals) {
      if (s.until_ms > clock_.Now().millis()) out.signals.push_back({job, a.number, replica, s.seq, s.signal, s.to});
    }
  }
  out.epoch = epoch_;
  out.lease_ms = options_.agent_lease.millis();
  out.version = lifecycle_.Generation(node);
  out.pulls = image_pulls_.Wanted(state_.nodes()[node].spec.name);
  // Stops of attempts here whose grace a preemptor's class cut short; a cut
  // is forgotten once its attempt is gone.
  out.grace_cuts = preemptions_.CutsOn([&](int64_t job, int32_t attempt) -> std::optional<bool> {
    const lifecycle::Attempt* a = lifecycle_.Find(job);
    if (a == nullptr || a->number != attempt) return std::nullopt;
    return std::any_of(a->replicas.begin(), a->replicas.end(),
                       [&](const lifecycle::Replica& r) { return r.node == node; });
  });
  const AgentRegistry::Agent* agent = agents_.Find(state_.nodes()[node].spec.name);
  out.reclaim_in_ms =
      agent != nullptr && agent->reclaim_at ? std::max<int64_t>(1, (*agent->reclaim_at - clock_.Now()).millis()) : 0;
  return wait;
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
  pacer_.Changed();
}

Status ControlLoop::RestoreNodes() {
  ASSIGN_OR_RETURN(std::vector<store::NodeRow> rows, store_.ListNodes());
  const std::vector<core::NodeSpec> restored =
      agents_.Restore(rows, [this](const std::string& name) { return state_.FindNode(name).has_value(); });
  for (const core::NodeSpec& n : restored) {
    auto added = state_.AddNode(n);
    if (!added.ok())
      return DataLoss("store " + options_.store_path + ": node " + n.name + ": " + added.status().ToString());
    // A fresh grace period after a restart: silent from now on, not from
    // before (its running jobs are not lost at once). But no new work until
    // its agent syncs: a node that was dead before the restart looked Ready
    // and took jobs that then sat RUNNING with nothing running.
    liveness_.Watch(*added, /*synced=*/false);
    (void)state_.SetSchedulable(*added, false);
  }
  return Status::Ok();
}

void ControlLoop::SweepAgents(store::WriteBatch& b) {
  lifecycle::Effects fx;
  const lifecycle::NodeLiveness::SweepResult swept = liveness_.Sweep(fx);
  for (core::NodeIndex node : swept.changed) UpdateSchedulable(node);
  for (core::NodeIndex node : swept.lost) lifecycle_.NodeLost(node, liveness_.SilentTooLong(node), fx);
  ApplyEffects(fx, b);
}

}  // namespace muster::server
