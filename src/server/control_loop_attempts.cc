// ControlLoop: attempts. The lifecycle's effects become rows, events and
// attempt records (ApplyEffects, the one persistence boundary of
// lifecycle/job_lifecycle.h); what the server keeps beside each running
// attempt (AttemptDetail); the task each replica's agent is given; and
// where a replica ran, for its logs.
#include <signal.h>

#include <nlohmann/json.hpp>
#include <set>

#include "api/output_pattern.h"
#include "auth/grants.h"
#include "common/signal_name.h"
#include "server/control_loop.h"
#include "server/task_env.h"

namespace muster::server {

using core::JobState;
using nlohmann::json;

namespace {

int SignalNumber(api::CheckpointSignal s) {
  switch (s) {
    case api::CheckpointSignal::kSigUsr1:
      return SIGUSR1;
    case api::CheckpointSignal::kSigUsr2:
      return SIGUSR2;
    case api::CheckpointSignal::kSigTerm:
      return SIGTERM;
    case api::CheckpointSignal::kSigInt:
      return SIGINT;
  }
  return SIGTERM;
}

}  // namespace

lifecycle::JobTerms ControlLoop::TermsOf(const api::JobSpec* spec) const {
  lifecycle::JobTerms t;
  t.grace = options_.default_grace;
  if (spec == nullptr) return t;
  const api::RetrySpec& r = spec->retry;
  t.retry = {r.limit, r.backoff.initial, r.backoff.factor, r.backoff.max, r.fail_on_exit_codes, r.retry_on_oom};
  if (spec->checkpoint) t.grace = spec->checkpoint->grace_period;
  t.time_limit = spec->time_limit;
  t.stall_timeout = spec->stall_timeout;
  t.first_replica_decides = spec->slurm.has_value();
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
      const core::Node& node = state_.nodes()[r.replicas[i].node];
      json replica = {{"replica", i}, {"node", node.spec.name}, {"result", r.replicas[i].result}};
      // What accounting charges (`muster usage`): GPUs held for the attempt's span, by type and pool.
      replica["gpus"] = r.replicas[i].gpus;
      if (r.replicas[i].gpus > 0) replica.update({{"gpuType", node.spec.gpu_type}, {"pool", PoolOf(node)}});
      if (const auto& span = r.replicas[i].span) {  // an elastic job's replica added or given back
        replica["startTime"] = span->first.millis();
        replica["endTime"] = span->second.millis();
      }
      replicas.push_back(std::move(replica));
    }
    record["replicas"] = replicas;
    if (auto d = details_.find(e.job); d != details_.end()) {  // the attempt that ended
      if (const double u = MeanUtilization(d->second); u >= 0) record["gpuUtilization"] = u;
      if (d->second.resume_recorded) record["resumedFrom"] = d->second.resumed_from;
      details_.erase(d);
    }
    if (r.last_step) record["lastStep"] = *r.last_step;
    if (r.exit_code) record.update({{"exitCode", *r.exit_code}, {"signal", r.exit_signal}});
    json& records = attempt_records_[e.job];
    if (!records.is_array()) records = json::array();
    records.push_back(std::move(record));
    // An attempt started after the job became immune to preemption has
    // ended: it may be preempted again.
    if (preemptions_.EndsImmunity(e.job, r.start)) (void)state_.SetPreemptImmune(e.job, false);
    if (e.terminal) checkpoints_.Forget(e.job);  // the store keeps the entries for queries
    reasons_.Forget(e.job);
    stragglers_.Forget(e.job);
    pacer_.Changed();
    written.push_back(e.job);
  }
  for (const lifecycle::JobChange& c : fx.jobs) {
    JobTable::Change change;
    change.state = c.state;
    change.reason = c.reason;
    change.back_to_pending = c.back_to_pending;
    change.end = c.end;
    NoteDefect(jobs_.Apply(c.job, change, clock_.Now()));
    written.push_back(c.job);
  }
  // Each changed job's row once, as it stands now.
  std::set<int64_t> once;
  for (int64_t job : written) {
    if (once.insert(job).second) jobs_.Write(job, b);
  }
  std::set<core::NodeIndex> touched(fx.touched.begin(), fx.touched.end());
  for (core::NodeIndex node : touched) Publish(node);
  if (fx.resources_freed) pacer_.Changed();
  fx = lifecycle::Effects();
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
      d.endpoints = p.value("endpoints", json());
    }
    if (restored->contains("endedReplicas") && (*restored)["endedReplicas"].is_array()) {
      for (const json& e : (*restored)["endedReplicas"]) {
        if (e.is_number_integer()) r.ended_replicas.push_back(e.get<int32_t>());
      }
    }
    if (restored->contains("replicaResults") && (*restored)["replicaResults"].is_array()) {
      for (const json& x : (*restored)["replicaResults"])
        r.results.emplace_back(x.value("replica", -1), x.value("result", ""));
    }
    // An elastic job's replica numbers and the replicas it is giving back.
    for (auto [key, out] : {std::pair{"firstReplica", &r.first_replica}, std::pair{"leaving", &r.leaving}}) {
      if (!restored->contains(key) || !(*restored)[key].is_array()) continue;
      for (const json& e : (*restored)[key]) {
        if (e.is_number_integer()) out->push_back(e.get<int32_t>());
      }
    }
    r.shrink_to = restored->value("shrinkTo", 0);
    for (const json& e : restored->value("replicaStarts", json::array())) {
      if (e.is_object()) r.starts.emplace_back(e.value("replica", -1), Time::FromMillis(e.value("timeMs", int64_t{0})));
    }
    for (const json& e : restored->value("givenBack", json::array())) {
      if (!e.is_object()) continue;
      r.given_back.push_back({e.value("replica", -1), e.value("gpus", 0),
                              Time::FromMillis(e.value("startTime", int64_t{0})),
                              Time::FromMillis(e.value("endTime", int64_t{0}))});
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
  d.image_seen.resize(a->replicas.size());
  d.utilization.assign(a->replicas.size(), -1);
  details_[job] = std::move(d);
  ApplyEffects(fx, b);
}

double ControlLoop::MeanUtilization(const AttemptDetail& d) {
  double total = 0;
  int known = 0;
  for (double u : d.utilization) {
    if (u < 0) continue;
    total += u;
    ++known;
  }
  return known == 0 ? -1 : total / known;
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
  json out = {
      {"attempt", a->number}, {"endedReplicas", ended}, {"replicaResults", results}, {"startTime", a->start.millis()}};
  if (auto run = state_.running().find(job); run != state_.running().end() && run->second.elastic()) {
    out["firstReplica"] = a->first_replica;
    json leaving = json::array();
    for (size_t i = 0; i < a->replicas.size(); ++i) {
      if (a->replicas[i].leaving && !a->replicas[i].ended) leaving.push_back(i);
    }
    if (a->shrink_to > 0) out.update({{"leaving", leaving}, {"shrinkTo", a->shrink_to}});
    // For accounting after a restart: when replicas were added, and the
    // GPUs and spans of those given back.
    json starts = json::array(), given_back = json::array();
    for (size_t i = 0; i < a->replicas.size(); ++i) {
      const lifecycle::Replica& r = a->replicas[i];
      if (r.start > a->start) starts.push_back({{"replica", i}, {"timeMs", r.start.millis()}});
      if (r.leaving && r.ended) {
        given_back.push_back({{"replica", i},
                              {"gpus", r.gpus.size()},
                              {"startTime", std::max(a->start, r.start).millis()},
                              {"endTime", r.end.millis()}});
      }
    }
    if (!starts.empty()) out["replicaStarts"] = std::move(starts);
    if (!given_back.empty()) out["givenBack"] = std::move(given_back);
  }
  if (const double u = MeanUtilization(d->second); u >= 0) out["gpuUtilization"] = u;
  // Each replica's step rate, as the straggler detector sees it.
  json rates = json::array();
  for (const StragglerDetector::ReplicaRate& r : stragglers_.Rates(job, clock_.Now())) {
    json one = {{"replica", r.replica}, {"step", r.step}, {"straggler", r.straggling}};
    if (r.rate) one["stepsPerSecond"] = *r.rate;
    rates.push_back(std::move(one));
  }
  if (!rates.empty()) out["replicaProgress"] = std::move(rates);
  if (d->second.resume_recorded) out["resumedFrom"] = d->second.resumed_from;
  if (const Time at = lifecycle_.LastProgress(job); at > Time::Zero()) {
    out["progress"] = {{"step", lifecycle_.LastStep(job)},
                       {"metrics", d->second.metrics.is_null() ? json::object() : d->second.metrics},
                       {"message", d->second.progress_message},
                       {"timeMs", at.millis()}};
    if (d->second.endpoints.is_object()) out["progress"]["endpoints"] = d->second.endpoints;
  }
  if (a->Stopping()) {
    out["ending"] = {{"state", a->ending ? core::JobStateName(*a->ending) : ""},
                     {"requeue", a->requeue},
                     {"reason", a->ending_reason}};
  }
  return out;
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
  t.argv = TaskArgv(spec, replica);
  t.script = spec.script.has_value() && !RunsStepHost(spec, replica);
  t.image = spec.image.value_or("");
  for (const api::JobSpec::Mount& m : spec.mounts) t.mounts.push_back({m.host_path, m.container_path, m.read_only});
  if (spec.image) {
    if (auto c = registry_credentials_.ForJob(t.user, spec.queue, *spec.image)) {
      t.registry_auth = {c->registry, c->username, c->password};
    }
  }
  TaskEnvInput in;
  in.job = job;
  in.attempt = a.number;
  in.replica = replica;
  in.replicas = places;
  in.array_index = task != array_task_of_.end() ? task->second.index : -1;
  in.port_salt = port_salt_;
  in.staying = a.Staying();
  in.user = t.user;
  t.env = TaskEnvironment(spec, in);
  // The job's own credential, for its progress and checkpoint reports.
  if (!job_token_key_.empty()) t.env["MUSTER_TOKEN"] = auth::SignJobToken(job_token_key_, job, a.number);
  t.working_dir = spec.working_dir.value_or("");
  std::vector<std::string> nodes;
  nodes.reserve(places.size());
  for (const ReplicaPlace& p : places) nodes.push_back(p.node);
  std::tie(t.stdout_path, t.stderr_path) =
      OutputFiles(job, spec, replica, places[replica].node, NodeNumber(nodes, places[replica].node));
  t.resume = d.resume;
  t.gpus = a.replicas[replica].gpus;
  t.cpu_milli = spec.resources.cpu_milli;
  t.memory_bytes = spec.resources.memory_bytes;
  if (spec.exclusive) {  // the whole node is the replica's
    const core::Resources& node = state_.nodes()[a.replicas[replica].node].spec.capacity;
    t.cpu_milli = node.cpu_milli;
    t.memory_bytes = node.memory_bytes;
  }
  t.time_limit_ms = spec.time_limit.is_infinite() ? 0 : spec.time_limit.millis();
  t.stop_signal = spec.checkpoint ? SignalNumber(spec.checkpoint->signal) : SIGTERM;
  t.grace_ms = a.terms.grace.millis();
  if (spec.limit_signal && t.time_limit_ms > 0 && SignalReaches(spec, replica)) {
    t.limit_signal = spec.limit_signal->signal;
    t.limit_signal_before_ms = spec.limit_signal->before.millis();
    t.limit_signal_to = api::SignalTargetName(spec.limit_signal->to);
  }
  return t;
}

bool ControlLoop::SignalReaches(const api::JobSpec& spec, int32_t replica) { return !spec.slurm || replica == 0; }

void ControlLoop::SignalJob(int64_t id, int signal, std::optional<api::SignalTarget> to, const Identity& who,
                            Done<StatusOr<SignalAnswer>> done) {
  using R = StatusOr<SignalAnswer>;
  loop_.Async<R>(
      [this, id, signal, to, who](const std::function<void(R)>& reply) {
        auto managed = ManagedJob(id, who, "signal");
        if (!managed.ok()) return reply(managed.status());
        const lifecycle::Attempt* a = lifecycle_.Find(id);
        auto d = details_.find(id);
        if (a == nullptr || a->Stopping() || d == details_.end() || !d->second.spec) {
          return reply(FailedPrecondition("job " + std::to_string(id) + " is " + core::JobStateName(StateOf(id)) +
                                          "; only a running job can be signalled"));
        }
        AttemptDetail& detail = d->second;
        const api::JobSpec& spec = *detail.spec;
        const api::SignalTarget target = to.value_or(spec.slurm ? api::SignalTarget::kSteps : api::SignalTarget::kAll);
        if (target == api::SignalTarget::kSteps && !spec.slurm) {
          return reply(
              InvalidArgument("job " + std::to_string(id) +
                                  " has no steps: only a Slurm-style job's batch script starts steps with srun",
                              "to"));
        }
        if (target == api::SignalTarget::kSteps && !SrunPassesOn(signal)) {
          return reply(InvalidArgument(SignalName(signal) +
                                           " cannot reach the steps: srun passes on only HUP, INT, QUIT, "
                                           "TERM, USR1, USR2, ALRM and CONT (to: all or batch reaches every process)",
                                       "signal"));
        }
        const int64_t now = clock_.Now().millis();
        std::erase_if(detail.signals, [now](const SentSignal& s) { return s.until_ms <= now; });
        detail.signals.push_back({++detail.signal_seq, signal, api::SignalTargetName(target), now + 60'000});
        SignalAnswer answer;
        answer.attempt = a->number;
        answer.to = target;
        lifecycle::Effects fx;
        for (size_t r = 0; r < a->replicas.size(); ++r) {
          if (!SignalReaches(spec, static_cast<int32_t>(r)) || a->replicas[r].ended) continue;
          const std::string& node = state_.nodes()[a->replicas[r].node].spec.name;
          if (std::find(answer.nodes.begin(), answer.nodes.end(), node) == answer.nodes.end())
            answer.nodes.push_back(node);
          lifecycle_.Touch(a->replicas[r].node, fx);
        }
        store::WriteBatch b;
        b.events.push_back(Event(id, "Signalled", "",
                                 SignalName(signal) + " to " + api::SignalTargetName(target) + " of attempt " +
                                     std::to_string(a->number) + " by " + who.Describe()));
        ApplyEffects(fx, b);
        Persist(std::move(b), [reply, answer](const Status& s) { s.ok() ? reply(answer) : reply(s); });
      },
      std::move(done), ShuttingDown());
}

int32_t ControlLoop::NodeNumber(const std::vector<std::string>& nodes_by_replica, const std::string& node) {
  std::vector<std::string> seen;
  for (const std::string& n : nodes_by_replica) {
    if (n == node) break;
    if (std::find(seen.begin(), seen.end(), n) == seen.end()) seen.push_back(n);
  }
  return static_cast<int32_t>(seen.size());
}

std::pair<std::string, std::string> ControlLoop::OutputFiles(int64_t job, const api::JobSpec& spec, int32_t replica,
                                                             const std::string& node, int32_t node_number) const {
  api::OutputNames names;
  names.job = job;
  if (auto task = array_task_of_.find(job); task != array_task_of_.end()) {
    names.array_first = task->second.first_id;
    names.array_index = task->second.index;
  }
  names.replica = replica;
  names.name = spec.name;
  names.user = jobs_.at(job).user;
  names.node = node;
  names.node_number = node_number;
  return {spec.stdout_path ? api::ExpandOutputPattern(*spec.stdout_path, names) : "",
          spec.stderr_path ? api::ExpandOutputPattern(*spec.stderr_path, names) : ""};
}

std::string ControlLoop::ReplicaLocation::Elsewhere() const {
  if (stdout_path.empty() && stderr_path.empty()) {
    return "; its output was kept on node " + node +
           " only (name a file on shared storage in the job's stdout to keep it past its node)";
  }
  std::string out = "; the job also wrote";
  if (!stdout_path.empty()) out += " its output to " + stdout_path;
  if (!stderr_path.empty()) out += std::string(stdout_path.empty() ? "" : " and") + " its errors to " + stderr_path;
  return out + " (paths as node " + node + " sees them)";
}

StatusOr<ControlLoop::ReplicaLocation> ControlLoop::LocateReplica(int64_t job, int32_t replica, int32_t wanted) {
  using R = StatusOr<ReplicaLocation>;
  return loop_.Call<R>(
      [this, job, replica, wanted](const std::function<void(R)>& reply) {
        const store::JobRow* row = jobs_.Find(job);
        if (row == nullptr) return reply(NotFound("job " + std::to_string(job) + " does not exist"));
        // The current attempt (unless another is asked for), else the one asked
        // for or the last one recorded in the job's status.
        int32_t attempt = row->attempts;
        std::string node;
        std::vector<std::string> nodes;  // by replica
        const lifecycle::Attempt* current = lifecycle_.Find(job);
        if (current != nullptr && (wanted == 0 || current->number == wanted)) {
          attempt = current->number;
          if (replica < 0 || replica >= static_cast<int32_t>(current->replicas.size())) {
            // The field is named by the error's prefix ("replica: job 10 has ...").
            return reply(InvalidArgument(
                "job " + std::to_string(job) + " has " + std::to_string(current->replicas.size()) + " replicas (0 to " +
                    std::to_string(current->replicas.size() - 1) + "), got " + std::to_string(replica),
                "replica"));
          }
          node = state_.nodes()[current->replicas[replica].node].spec.name;
          for (const lifecycle::Replica& r : current->replicas) nodes.push_back(state_.nodes()[r.node].spec.name);
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
              nodes.push_back(r.value("node", ""));
            }
          }
        }
        if (node.empty()) {
          const JobState state = StateOf(job);
          if (row->attempts == 0 && (state == JobState::kPending || state == JobState::kHeld)) {
            return reply(
                NotFound("job " + std::to_string(job) + " is " + core::JobStateName(state) + " and has not run yet"));
          }
          return reply(
              NotFound("job " + std::to_string(job) + " has no replica " + std::to_string(replica) + " that ran"));
        }
        ReplicaLocation where;
        where.node = node;
        where.attempt = attempt;
        auto spec = api::ParseJobSpecJson(row->spec_json);
        if (spec.ok())
          std::tie(where.stdout_path, where.stderr_path) =
              OutputFiles(job, *spec, replica, node, NodeNumber(nodes, node));
        const AgentRegistry::Agent* ag = agents_.Find(node);
        if (ag == nullptr || ag->log_port == 0 || agents_.Removed(node)) {
          return reply(
              Status(StatusCode::kUnavailable, "node " + node + " has no agent serving logs" + where.Elsewhere()));
        }
        if (const std::optional<core::NodeIndex> index = state_.FindNode(node);
            index && liveness_.Watched(*index) && liveness_.Of(*index) == lifecycle::NodeCondition::kLost) {
          return reply(Status(StatusCode::kUnavailable, "node " + node + " is lost" + where.Elsewhere()));
        }
        where.address = ag->address;
        where.log_port = ag->log_port;
        where.log_tls_pin = ag->log_tls_pin;
        reply(std::move(where));
      },
      ShuttingDown());
}

}  // namespace muster::server
