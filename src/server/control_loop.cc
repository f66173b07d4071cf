#include "server/control_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <tuple>

#include "api/json_writer.h"
#include "api/slurm_mapping.h"
#include "common/log.h"
#include "common/message_text.h"
#include "common/quantity.h"
#include "core/fit_check.h"
#include "server/leadership.h"
#include "server/submit_admission.h"

namespace muster::server {

using core::JobState;
using nlohmann::json;
using store::JobRow;

namespace {

bool IsEnded(const JobRow& r) { return r.end_ms.has_value(); }

}  // namespace

const char* ControlLoop::ActionName(Action a) {
  switch (a) {
    case Action::kCancel:
      return "cancel";
    case Action::kHold:
      return "hold";
    case Action::kRelease:
      return "release";
    case Action::kRequeue:
      return "requeue";
  }
  return "?";
}

ControlLoop::ControlLoop(const ServerOptions& options, const Clock& clock, store::Store& store)
    : options_(options),
      authz_(options),
      clock_(clock),
      store_(store),
      waits_(clock),
      state_(options.cluster),
      liveness_(state_, clock,
                {options.node_unreachable_after, options.node_lost_after, options.agent_lease,
                 options.max_lost_fraction, options.silence_burst_window, options.silence_hold},
                [this](core::NodeIndex node) { return lifecycle_.LongestGraceOn(node); }),
      lifecycle_(state_, clock,
                 {static_cast<int32_t>(options.checkpoint_signals_per_second), options.checkpoint_bytes_per_second},
                 [this](core::NodeIndex node) { return liveness_.Watched(node); }),
      fairshare_(options.fairshare),
      jobs_([this](int64_t job) { return AllocationsJson(job); }),
      watch_(clock, {}),
      settings_(options),
      queue_admin_(options),
      pacer_(options.cycle_delay, options.cycle_interval),
      stragglers_(options.stragglers) {}

ControlLoop::~ControlLoop() { Stop(); }

Status ControlLoop::Start(std::optional<int64_t> leader_epoch, std::vector<store::JobRow>* rows) {
  ASSIGN_OR_RETURN(scheduler_, scheduler::Scheduler::Create(options_.scheduler));
  {
    ASSIGN_OR_RETURN(std::optional<std::string> queues, store_.GetMeta(ApiQueues::kMetaKey));
    if (Status st = queue_admin_.Load(queues.value_or("")); !st.ok()) {
      return DataLoss("store " + options_.store_path + ": " + st.message());
    }
  }
  if (std::optional<ServerOptions> deferred = queue_admin_.MarkStarted()) {
    if (Status s = ApplyConfig(*deferred); !s.ok()) {
      log::Error("the configuration reloaded while a standby is refused; the one it started with stays: {}",
                 s.ToString());
    }
  }
  if (queue_admin_.has_api_queues()) {
    RETURN_IF_ERROR(ApplyQueues(queue_admin_.file_cluster(), queue_admin_.file_fairshare()));
  }
  store::WriteBatch nodes;
  for (const core::NodeSpec& n : options_.nodes) {
    auto added = state_.AddNode(n);
    if (!added.ok()) return added.status().WithFieldPrefix("nodes");
    nlohmann::json spec = {{"gpus", n.capacity.gpus},          {"gpuType", n.gpu_type},
                           {"cpuMilli", n.capacity.cpu_milli}, {"memoryBytes", n.capacity.memory_bytes},
                           {"leaf", n.topology.leaf},          {"spine", n.topology.spine}};
    nodes.nodes.push_back({n.name, spec.dump(), "READY", clock_.Now().millis()});
  }
  // Every start is a new leader epoch; tasks carry it (fencing). With an
  // elected leader it is the lease's; otherwise one more than the last.
  if (leader_epoch) {
    epoch_ = *leader_epoch;
  } else {
    ASSIGN_OR_RETURN(std::optional<std::string> epoch, store_.GetMeta("epoch"));
    epoch_ = (epoch ? std::atoll(epoch->c_str()) : 0) + 1;
  }
  nodes.meta.emplace_back("epoch", std::to_string(epoch_));
  // A random number fixed when the store is created: it shifts the
  // MASTER_PORTs this cluster hands out, so two clusters sharing machines
  // (tests, `muster dev` beside a real cluster) do not pick the same port
  // for their job 1. (The one place the server draws randomness: an
  // identity, not a decision.)
  ASSIGN_OR_RETURN(std::optional<std::string> salt, store_.GetMeta("portSalt"));
  if (!salt) {
    salt = std::to_string(std::random_device{}() % 10000);
    nodes.meta.emplace_back("portSalt", *salt);
  }
  port_salt_ = std::atoi(salt->c_str());
  RETURN_IF_ERROR(RestoreNodes());
  nodes_at_start_ = state_.nodes().size();
  janitor_ = std::make_unique<CheckpointJanitor>();
  ASSIGN_OR_RETURN(std::vector<store::CheckpointRow> checkpoints, store_.LoadLiveCheckpoints());
  checkpoints_.Restore(std::move(checkpoints));
  for (const auto& [job, bytes] : checkpoints_.LastCommittedBytes()) lifecycle_.NoteCheckpointSize(job, bytes);
  RETURN_IF_ERROR(Restore(rows));
  {
    ASSIGN_OR_RETURN(std::optional<std::string> saved, store_.GetMeta(FairShareLedger::kMetaKey));
    if (Status st = fairshare_.Restore(saved, state_, clock_.Now()); !st.ok()) {
      return DataLoss("store " + options_.store_path + ": " + st.message());
    }
  }
  {
    ASSIGN_OR_RETURN(std::optional<std::string> creds, store_.GetMeta(RegistryCredentials::kMetaKey));
    if (Status st = registry_credentials_.Load(creds.value_or("")); !st.ok()) {
      return DataLoss("store " + options_.store_path + ": " + st.message());
    }
    ASSIGN_OR_RETURN(std::optional<std::string> reserved, store_.GetMeta(Reservations::kMetaKey));
    if (Status st = admin_reservations_.Load(reserved.value_or("")); !st.ok()) {
      return DataLoss("store " + options_.store_path + ": " + st.message());
    }
    state_.SetReservations(admin_reservations_.Windows());
    ASSIGN_OR_RETURN(std::optional<std::string> pulls, store_.GetMeta(ImagePulls::kMetaKey));
    if (Status st = image_pulls_.Load(pulls.value_or("")); !st.ok()) {
      return DataLoss("store " + options_.store_path + ": " + st.message());
    }
  }
  RETURN_IF_ERROR(store_.Commit({&nodes}));
  store::StoreWriter::Options writer_options;
  if (metrics_ != nullptr) writer_options.on_commit = [m = metrics_](double s) { m->ObserveCommit(s); };
  writer_ = std::make_unique<store::StoreWriter>(store_, writer_options);
  watch_.Start();
  pacer_.Reset(clock_.Now());
  LoopExecutor::Hooks hooks{[this] { return IdleWait(); }, [this] { Tick(); },
                            [this] {
                              AnswerHeldSyncs();
                              // Saved last: the writer commits it before it stops.
                              if (store::WriteBatch b = fairshare_.Save(clock_.Now(), state_); !b.empty()) {
                                Persist(std::move(b), nullptr);
                              }
                            },
                            [this] { writer_->Flush(); }};
  if (manual_) {
    loop_.StartManual(std::move(hooks));
  } else {
    loop_.Start("control-loop", std::move(hooks));
  }
  return Status::Ok();
}

void ControlLoop::EndWaits() { waits_.Close(); }

core::JobState ControlLoop::StateOf(int64_t job) const {
  if (std::optional<JobState> shown = lifecycle_.Shown(job)) return *shown;
  const core::JobRecord* rec = state_.Find(job);
  return rec != nullptr ? rec->state : JobState::kCancelled;
}

void ControlLoop::Stop() {
  EndWaits();
  loop_.Stop();
  writer_.reset();  // commits what is queued
  watch_.Stop();
}

namespace {

// True when a running job's stored status lists the GPU devices of each of
// its allocations, as integers.
bool HasGpuIds(const json& status) {
  if (!status.is_object() || !status.contains("allocations") || !status["allocations"].is_array()) return false;
  for (const auto& a : status["allocations"]) {
    if (!a.is_object() || !a.contains("gpus") || !a["gpus"].is_array()) return false;
    for (const auto& g : a["gpus"]) {
      if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > INT32_MAX) return false;
    }
  }
  return true;
}

}  // namespace

namespace {

struct ServiceSoFar {
  int64_t gpu_seconds = 0;
  Duration queued = Duration::Zero();
  Time last_end;
};

// What a job's stored attempt records add up to: GPUs x seconds run, the
// time pending before each, and the end of the last.
ServiceSoFar ServiceOf(const json& history, Time submit) {
  ServiceSoFar s;
  s.last_end = submit;
  for (const json& a : history) {
    if (!a.is_object()) continue;
    const Time start = Time::FromMillis(a.value("startTime", submit.millis()));
    const Time end = Time::FromMillis(a.value("endTime", start.millis()));
    int64_t gpus = 0;
    if (a.contains("replicas") && a["replicas"].is_array()) {
      for (const json& r : a["replicas"]) {
        if (!r.is_object()) continue;
        if (r.contains("startTime")) {  // an elastic job's replica added or given back: its own span
          s.gpu_seconds +=
              r.value("gpus", int64_t{0}) *
              (std::max<int64_t>(0, r.value("endTime", int64_t{0}) - r.value("startTime", int64_t{0})) / 1000);
        } else {
          gpus += r.value("gpus", int64_t{0});
        }
      }
    }
    if (end > start) s.gpu_seconds += gpus * ((end - start).millis() / 1000);
    if (start > s.last_end) s.queued = s.queued + (start - s.last_end);
    s.last_end = std::max(s.last_end, end);
  }
  return s;
}

}  // namespace

Status ControlLoop::Restore(std::vector<JobRow>* warm) {
  std::vector<JobRow> rows;
  if (warm != nullptr) {
    rows = std::move(*warm);
  } else {
    ASSIGN_OR_RETURN(rows, store_.LoadJobs(/*include_terminal=*/true));
  }
  store::WriteBatch requeued;  // running jobs whose nodes are gone
  // Running jobs, placed once all are read.
  struct Running {
    int64_t id;
    core::JobSpec spec;
    json status;   // its stored status: allocations, attempt
    bool devices;  // the status names its GPU devices
  };
  std::vector<Running> running;
  // Runs that ended on their own, for the run-time predictions: (end, user, length).
  std::vector<std::tuple<int64_t, std::string, Duration>> runs_ended;
  // Singleton jobs wait for the earlier unfinished jobs of their name and user.
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> unfinished;
  for (const JobRow& row : rows) {
    if (!IsEnded(row)) unfinished[{row.name, row.user}].push_back(row.id);
  }
  for (JobRow& row : rows) {
    const std::string what = "store " + options_.store_path + ": job " + std::to_string(row.id);
    auto spec = api::ParseJobSpecJson(row.spec_json);
    if (!spec.ok()) return DataLoss(what + " has an unreadable spec: " + spec.status().ToString());
    core::JobSpec core_spec = api::ToCoreSpec(*spec);
    core_spec.user = row.user;
    if (spec->singleton) {
      for (int64_t other : unfinished[{row.name, row.user}]) {
        if (other < row.id) core_spec.dependencies.push_back({core::DependencyType::kAfterAny, other});
      }
    }
    const auto state = core::JobStateFromName(row.state);
    if (!state) return DataLoss(what + " has an unknown state \"" + row.state + "\"");
    const auto detail = nlohmann::json::parse(row.status_json, nullptr, false);
    if (detail.is_object() && detail.contains("idempotencyKey") && detail["idempotencyKey"].is_string()) {
      idempotency_.SetKeyOf(row.id, detail["idempotencyKey"]);
    }
    if (detail.is_object() && detail.contains("arrayFirstId") && detail["arrayFirstId"].is_number_integer()) {
      array_task_of_[row.id] = {detail["arrayFirstId"].get<int64_t>(), detail.value("arrayIndex", 0)};
      if (spec->array_indices && spec->array_indices->max_running > 0) {
        core_spec.run_group = array_task_of_[row.id].first_id;
        core_spec.run_group_limit = spec->array_indices->max_running;
      }
    }
    // As at submit: dependencies on arrays, for this task's index.
    if (!core_spec.dependencies.empty()) {
      const auto task = array_task_of_.find(row.id);
      auto resolved =
          ResolveArrayDependencies(core_spec.dependencies, core_spec.dependencies_any,
                                   task == array_task_of_.end() ? std::nullopt : std::optional(task->second.index),
                                   [this](int64_t id) { return ArrayTasks(id); });
      if (resolved.ok()) core_spec.dependencies = std::move(*resolved);
    }
    core::JobSpec core_spec_restored = core_spec;
    if (detail.is_object() && (detail.contains("attemptHistory") || detail.contains("retries"))) {
      lifecycle::JobHistory h;
      h.retries = detail.value("retries", 0);
      h.requeues = detail.value("requeues", 0);
      h.not_before = Time::FromMillis(detail.value("notBeforeMs", int64_t{0}));
      lifecycle_.RestoreHistory(row.id, h);
      attempt_records_[row.id] = detail.contains("attemptHistory") && detail["attemptHistory"].is_array()
                                     ? detail["attemptHistory"]
                                     : json::array();
      // A retry's backoff outlives a restart.
      if (h.not_before > Time::Zero() && *state == JobState::kPending) {
        const Time nb = h.not_before;
        if (!core_spec_restored.begin_time || *core_spec_restored.begin_time < nb) core_spec_restored.begin_time = nb;
      }
    }
    const Time submit = Time::FromMillis(row.submit_ms);
    if (IsEnded(row)) {
      RETURN_IF_ERROR(state_.RestoreEnded(row.id, core_spec, submit, *state, Time::FromMillis(*row.end_ms), row.reason,
                                          row.start_ms ? Time::FromMillis(*row.start_ms) : Time::Max()));
      if (row.start_ms && core::EndedOnItsOwn(*state)) {
        runs_ended.push_back({*row.end_ms, row.user, Duration::Millis(*row.end_ms - *row.start_ms)});
      }
    } else {
      auto id = state_.Submit(core_spec_restored, submit, row.id);
      if (!id.ok()) return DataLoss(what + " cannot be restored: " + id.status().ToString());
      if (*state == JobState::kHeld && !core_spec.hold) RETURN_IF_ERROR(state_.Hold(row.id));
      // Released from a hold: its age counts from then (and keeps doing so).
      const int64_t released_ms = detail.is_object() ? detail.value("releasedMs", int64_t{0}) : 0;
      if (*state == JobState::kPending && (core_spec.hold || released_ms > 0)) {
        RETURN_IF_ERROR(state_.Release(row.id, Time::FromMillis(released_ms)));
      }
      // The service its earlier attempts attained and the time it waited
      // before them, which the las policy ranks it by.
      if (auto h = attempt_records_.find(row.id); h != attempt_records_.end() && !h->second.empty()) {
        const ServiceSoFar so_far = ServiceOf(h->second, submit);
        RETURN_IF_ERROR(state_.RestoreService(row.id, so_far.gpu_seconds, so_far.queued, so_far.last_end));
      }
      if (*state == JobState::kRunning || *state == JobState::kCompleting) {
        json status = json::parse(row.status_json, nullptr, false);
        const bool devices = HasGpuIds(status);
        running.push_back({row.id, core_spec, std::move(status), devices});
      }
    }
    jobs_.Restore(std::move(row));
  }
  std::sort(runs_ended.begin(), runs_ended.end());
  for (const auto& [end, user, ran] : runs_ended) state_.NoteRunTime(user, ran);
  // Back on the nodes and GPU devices it holds (the lowest free devices
  // would put a new job on a GPU a running one still uses); if a node is
  // gone or a device is not free, the job waits again.
  // Those that name their devices first: one without names gets the lowest
  // free devices, which must not be another's.
  std::stable_partition(running.begin(), running.end(), [](const Running& r) { return r.devices; });
  for (const Running& r : running) {
    const json& status = r.status;
    const core::JobSpec& core_spec = r.spec;
    const JobRow& row = jobs_.at(r.id);
    core::Binding b{row.id, {}};
    std::vector<std::vector<int32_t>> gpus;
    bool ok = true;
    std::string why = "its nodes are no longer in the cluster", code = "NodeMissing";
    if (status.is_object() && status.contains("allocations") && status["allocations"].is_array()) {
      for (const auto& a : status["allocations"]) {
        const std::string node = a.value("node", "");
        const int32_t replicas = a.value("replicas", 0);
        const std::optional<core::NodeIndex> index = state_.FindNode(node);
        if (!index || replicas < 1) {
          ok = false;
          break;
        }
        // An exclusive job holds its nodes whole (placement.h).
        b.allocations.push_back(
            {*index, replicas,
             core_spec.exclusive ? state_.nodes()[*index].spec.capacity : core_spec.per_replica * replicas});
        if (r.devices) gpus.push_back(a["gpus"].get<std::vector<int32_t>>());
      }
    } else {
      ok = false;
    }
    const Time start = Time::FromMillis(row.start_ms.value_or(row.submit_ms));
    if (ok) {
      const Status bound = state_.Bind(b, start, r.devices ? &gpus : nullptr);
      if (!bound.ok()) {
        why = "it cannot be put back on its nodes: " + bound.message();
        code = "PlacementLost";
      }
      ok = bound.ok();
    }
    if (ok) {
      StartAttempt(row.id, std::max(1, row.attempts), /*durable=*/true,
                   status.is_object() && status.contains("attempt") ? &status["attempt"] : nullptr, requeued);
      continue;
    }
    requeued.events.push_back({0, row.id, clock_.Now().millis(), "Requeued", code, why});
    JobTable::Change requeue = JobTable::Change::To(JobState::kPending, "Requeued: " + why);
    requeue.back_to_pending = true;
    NoteDefect(jobs_.Update(row.id, requeue, clock_.Now(), requeued));
  }
  const int64_t day_ago = clock_.Now().millis() - 24LL * 3600 * 1000;
  ASSIGN_OR_RETURN(std::vector<store::IdempotencyRow> keys, store_.LoadIdempotency(day_ago));
  idempotency_.Restore(keys);
  if (!requeued.empty()) RETURN_IF_ERROR(store_.Commit({&requeued}));
  (void)jobs_.Changes(requeued, false);  // written before any watch: their states before are done with
  return state_.CheckInvariants();
}

void ControlLoop::NoteDefect(const Status& s) const {
  if (!s.ok()) log::Error("internal error (please report): {}", s.message());
}

Status ControlLoop::ShuttingDown() { return Status(StatusCode::kUnavailable, "the server is shutting down"); }

void ControlLoop::Tick() {
  const Time now = clock_.Now();
  waits_.EndExpired(now);
  if (lifecycle_.NextStopDue() <= now) {
    lifecycle::Effects fx;
    store::WriteBatch b;
    lifecycle_.ReleaseDueStops(fx);
    ApplyEffects(fx, b);
    if (!b.empty()) Persist(std::move(b), nullptr);
  }
  if (pacer_.Due(now)) {
    const auto started = std::chrono::steady_clock::now();
    RunCycle();
    // The cycle's own cost, in real time (CyclePacer).
    const auto took = std::chrono::steady_clock::now() - started;
    // Manual mode (tests): a pace that the clock alone decides.
    pacer_.Ran(now, manual_ ? 0 : std::chrono::duration_cast<std::chrono::microseconds>(took).count(), clock_.Now());
    if (metrics_ != nullptr) metrics_->ObserveCycle(std::chrono::duration<double>(took).count());
  }
}

Duration ControlLoop::IdleWait() const {
  const Time now = clock_.Now();
  Duration wait = pacer_.Wait();
  if (const Time due = lifecycle_.NextStopDue(); !due.is_max())
    wait = std::min(wait, std::max(Duration::Zero(), due - now));
  return std::min(wait, waits_.UntilNextDeadline(now));
}

store::EventRow ControlLoop::Event(int64_t job, const std::string& type, const std::string& reason,
                                   const std::string& message) const {
  return {0, job, clock_.Now().millis(), type, reason, message};
}

std::string ControlLoop::AllocationsJson(int64_t job) const {
  // Written directly (every submit stores one); keys in alphabetical order,
  // as the JSON library writes an object.
  std::string out;
  api::JsonWriter w(out);
  w.BeginObject();
  auto it = state_.running().find(job);
  if (it != state_.running().end()) {
    w.Key("allocations").BeginArray();
    for (size_t i = 0; i < it->second.allocations.size(); ++i) {
      const core::Allocation& a = it->second.allocations[i];
      w.BeginObject().Key("gpuType").String(state_.nodes()[a.node].spec.gpu_type).Key("gpus").BeginArray();
      for (int32_t g : it->second.gpu_ids[i]) w.Int(g);
      w.EndArray().Key("node").String(state_.nodes()[a.node].spec.name);
      w.Key("pool").String(PoolOf(state_.nodes()[a.node])).Key("replicas").Int(a.replicas).EndObject();
    }
    w.EndArray();
  }
  auto task = array_task_of_.find(job);
  if (task != array_task_of_.end())
    w.Key("arrayFirstId").Int(task->second.first_id).Key("arrayIndex").Int(task->second.index);
  if (details_.count(job)) w.Key("attempt").Raw(api::JsonText(AttemptJson(job)));
  auto records = attempt_records_.find(job);
  if (records != attempt_records_.end() && records->second.is_array()) {
    w.Key("attemptHistory").Raw(api::JsonText(records->second));
  }
  const lifecycle::JobHistory* h = lifecycle_.History(job);
  if (const std::string* key = idempotency_.KeyOf(job)) w.Key("idempotencyKey").String(*key);
  if (h != nullptr && h->not_before > Time::Zero()) w.Key("notBeforeMs").Int(h->not_before.millis());
  if (const core::JobRecord* rec = state_.Find(job); rec != nullptr && rec->released_at > Time::Zero()) {
    w.Key("releasedMs").Int(rec->released_at.millis());
  }
  if (h != nullptr) w.Key("requeues").Int(h->requeues).Key("retries").Int(h->retries);
  w.EndObject();
  return out;
}

uint64_t ControlLoop::Persist(store::WriteBatch batch, std::function<void(const Status&)> done) {
  // The job rows it writes, for watches: published once durable.
  const bool wrote_jobs = !batch.jobs.empty() || !batch.reasons.empty();
  std::vector<JobWatch::Change> changes = jobs_.Changes(batch, wrote_jobs && watch_.Keeping());
  return last_ticket_ = writer_->Submit(std::move(batch), [this, wrote_jobs, changes = std::move(changes),
                                                           done = std::move(done)](const Status& s) mutable {
    if (s.ok() && wrote_jobs) watch_.Publish(std::move(changes));
    if (store::IsFenced(s)) {
      // Another server leads now: this one's memory is stale. A supervisor
      // restarts it as a standby.
      log::Error("lost leadership: {}; exiting", s.message());
      std::fflush(stderr);
      std::_Exit(kExitLostLeadership);
    }
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) {
      // The promise "acknowledged means durable" cannot be kept: stop, so a
      // restart resumes from the last durable state.
      log::Error("the store failed a write: {}; exiting", s.ToString());
      std::fflush(stderr);
      std::_Exit(70);
    }
    if (done) done(s);
  });
}

std::vector<ArrayTaskRef> ControlLoop::ArrayTasks(int64_t id) const {
  std::vector<ArrayTaskRef> out;
  for (int64_t t = id;; ++t) {
    const auto it = array_task_of_.find(t);
    if (it == array_task_of_.end() || it->second.first_id != id) break;
    out.push_back({t, it->second.index});
  }
  return out;
}

void ControlLoop::Submit(SubmitRequest req, SubmitReply done) {
  auto shared = std::make_shared<const SubmitRequest>(std::move(req));
  loop_.Async<StatusOr<SubmitResult>>([this, shared](const SubmitReply& reply) { DoSubmit(*shared, reply); },
                                      std::move(done), ShuttingDown());
}

void ControlLoop::DoSubmit(const SubmitRequest& req, const SubmitReply& reply) {
  if (!req.idempotency_key.empty()) {
    using Outcome = IdempotencyTable::Outcome;
    const IdempotencyTable::Found found = idempotency_.Find(req.user, req.idempotency_key, req.fingerprint, *writer_);
    switch (found.outcome) {
      case Outcome::kNew:
        break;
      case Outcome::kConflict:
        return reply(Status(StatusCode::kAlreadyExists, "Idempotency-Key \"" + req.idempotency_key +
                                                            "\" was already used for a different request (job " +
                                                            std::to_string(found.job) + ")"));
      case Outcome::kInFlight:
        return reply(FailedPrecondition("a request with Idempotency-Key \"" + req.idempotency_key +
                                        "\" is still being processed; retry"));
      case Outcome::kReplay:
        return reply(SubmitResult{jobs_.at(found.job), std::max<int32_t>(1, req.spec.array), false});
    }
  }
  // Only configured queues: a misspelt one would otherwise be a new queue
  // outside every quota.
  const auto& queues = state_.config().queues;
  if (options_.strict_queues && std::none_of(queues.begin(), queues.end(),
                                             [&](const core::QueueConfig& q) { return q.name == req.spec.queue; })) {
    std::vector<std::string> names;
    std::string known;
    for (const core::QueueConfig& q : queues) {
      names.push_back(q.name);
      known += (known.empty() ? "" : ", ") + q.name;
    }
    std::string msg = "unknown queue \"" + req.spec.queue.substr(0, 64) + "\"";
    const std::string close = ClosestMatch(req.spec.queue, names);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    return reply(InvalidArgument(msg + " (known: " + known + "; strictQueues is on)", "spec.queue"));
  }
  const Time now = clock_.Now();
  const int32_t count = std::max<int32_t>(1, req.spec.array);
  // Per-user limits and the dependencies' visibility, before anything is added.
  if (Status admitted = CheckSubmitAdmission(req.spec, req.user, jobs_, options_, req.may_see); !admitted.ok()) {
    return reply(admitted);
  }
  core::JobSpec core_spec = api::ToCoreSpec(req.spec);
  core_spec.user = req.user;
  // As sbatch: what no node could ever hold is refused now, not left to wait.
  if (!options_.accept_unfit_jobs) {
    if (Status fits = core::CheckEverFits(core_spec, state_.nodes()); !fits.ok()) {
      return reply(InvalidArgument(fits.message() + " (the server's acceptUnfitJobs accepts such jobs for nodes yet "
                                                    "to join)",
                                   fits.field())
                       .WithFieldPrefix("spec"));
    }
  }
  if (!req.spec.reservation.empty()) {
    if (Status may = admin_reservations_.MayUse(req.spec.reservation, req.user, req.spec.queue); !may.ok()) {
      return reply(may.WithFieldPrefix("spec"));
    }
  }
  if (req.spec.singleton) {
    for (const auto& [id, other] : jobs_.rows()) {  // O(jobs), for this rare option only
      if (!IsEnded(other) && other.name == req.spec.name && other.user == req.user) {
        core_spec.dependencies.push_back({core::DependencyType::kAfterAny, id});
      }
    }
  }
  if (req.spec.array_indices && req.spec.array_indices->max_running > 0) {
    core_spec.run_group = state_.NextId();  // the array's first id
    core_spec.run_group_limit = req.spec.array_indices->max_running;
  }
  // Dependencies on arrays, per task (aftercorr pairs indexes); checked on
  // the first task, so a refusal comes before anything is added.
  const std::vector<core::Dependency> written = core_spec.dependencies;
  auto index_of = [&](int32_t i) -> std::optional<int32_t> {
    if (req.spec.array <= 0) return std::nullopt;
    return req.spec.array_indices ? req.spec.array_indices->indices[i] : i;
  };
  auto tasks_of = [this](int64_t id) { return ArrayTasks(id); };
  auto resolved = ResolveArrayDependencies(written, core_spec.dependencies_any, index_of(0), tasks_of);
  if (!resolved.ok()) return reply(resolved.status().WithFieldPrefix("spec"));
  core_spec.dependencies = std::move(*resolved);
  const bool paired = std::any_of(written.begin(), written.end(),
                                  [](const core::Dependency& d) { return d.type == core::DependencyType::kAfterCorr; });
  store::WriteBatch b;
  std::vector<JobRow> rows;
  int64_t first_id = 0;
  for (int32_t i = 0; i < count; ++i) {
    if (paired && i > 0) {
      core_spec.dependencies = *ResolveArrayDependencies(written, core_spec.dependencies_any, index_of(i), tasks_of);
    }
    auto id = state_.Submit(core_spec, now);
    if (!id.ok()) {
      // Only the first task can fail (all tasks share the spec); nothing was added.
      return reply(id.status().WithFieldPrefix("spec"));
    }
    if (i == 0) first_id = *id;
    JobRow row;
    row.id = *id;
    row.name = req.spec.name;
    row.user = req.user;
    row.queue = req.spec.queue;
    row.priority_class = req.spec.priority;
    if (req.spec.hold)
      row.reason = core::ReasonCodeName(core::ReasonCode::kHeld);  // the cycle's, already in the answer
    row.submit_ms = now.millis();
    row.spec_json = req.spec_json;
    if (!req.idempotency_key.empty()) idempotency_.SetKeyOf(row.id, req.idempotency_key);
    if (req.spec.array > 0) {
      array_task_of_[row.id] = {first_id, req.spec.array_indices ? req.spec.array_indices->indices[i] : i};
    }
    rows.push_back(jobs_.Add(std::move(row), req.spec.hold ? JobState::kHeld : JobState::kPending, b));
    b.events.push_back(Event(*id, "Submitted", "",
                             req.spec.array > 0
                                 ? "by " + req.user + ", task " + std::to_string(array_task_of_[*id].index) +
                                       " of array " + std::to_string(first_id)
                                 : "by " + req.user));
    if (req.spec.hold) b.events.push_back(Event(*id, "Held", "", "submitted held"));
  }
  if (!req.idempotency_key.empty()) {
    b.idempotency.push_back({req.user, req.idempotency_key, req.fingerprint, first_id, now.millis()});
  }
  if (req.audit) {
    store::AuditRow a = *req.audit;
    a.time_ms = now.millis();
    a.object = "job/" + std::to_string(first_id);
    b.audit.push_back(std::move(a));
  }
  pacer_.Changed();
  const uint64_t ticket = Persist(std::move(b), [first = rows.front(), count, reply](const Status& s) {
    if (!s.ok()) return reply(s);
    reply(SubmitResult{first, count, true});
  });
  if (!req.idempotency_key.empty())
    idempotency_.Add(req.user, req.idempotency_key, req.fingerprint, first_id, ticket, now);
}

StatusOr<const JobRow*> ControlLoop::ManagedJob(int64_t id, const Identity& who, const std::string& verb) {
  const JobRow* row = jobs_.Find(id);
  if (row == nullptr) return NotFound("job " + std::to_string(id) + " does not exist");
  if (who.kind == Identity::Kind::kJob) {
    // A job token speaks for its own job only (HttpApi lets it reach
    // nothing else; this is the second lock).
    if (who.job != id)
      return PermissionDenied("a job token of job " + std::to_string(who.job) + " may not " + verb + " job " +
                              std::to_string(id));
    return row;
  }
  RETURN_IF_ERROR(authz_.MayManageJob(who, row->user, row->queue, verb));
  return row;
}

void ControlLoop::Record(store::WriteBatch b, const std::function<void(const Status&)>& then) {
  const bool posted = loop_.PostUnlessStopped([this, b = std::move(b), then]() mutable {
    for (store::AuditRow& a : b.audit) a.time_ms = clock_.Now().millis();
    Persist(std::move(b), then);
  });
  if (!posted && then) then(ShuttingDown());
}

void ControlLoop::Act(int64_t id, Action action, const Identity& who, Done<StatusOr<JobRow>> done) {
  using R = StatusOr<JobRow>;
  loop_.Async<R>(
      [this, id, action, who, user = who.Describe()](const std::function<void(R)>& reply) {
        auto managed = ManagedJob(id, who, ActionName(action));
        if (!managed.ok()) return reply(managed.status());
        const JobRow& row = **managed;
        const Time now = clock_.Now();
        const JobState state = StateOf(id);
        auto ended = [&](const char* verb) {
          return FailedPrecondition("job " + std::to_string(id) + " is " + core::JobStateName(state) + "; only " +
                                    verb);
        };
        Status s;
        std::string event;
        JobTable::Change change;
        switch (action) {
          case Action::kCancel:
            if (state == JobState::kPending || state == JobState::kHeld) {
              s = state_.EndPending(id, JobState::kCancelled, now, "cancelled by " + user);
            } else if (state == JobState::kRunning || state == JobState::kCompleting) {
              return StopRunning(id, JobState::kCancelled, false, "cancelled by " + user, reply);
            } else {
              return reply(ended("pending, held or running jobs can be cancelled"));
            }
            if (s.ok()) {
              change = JobTable::Change::Ended(JobState::kCancelled, "cancelled by " + user, now);
              event = "Cancelled";
              checkpoints_.Forget(id);
            }
            break;
          case Action::kHold:
            if (state == JobState::kHeld) return reply(row);
            if (state != JobState::kPending) return reply(ended("pending jobs can be held"));
            s = state_.Hold(id);
            if (s.ok()) {
              change = JobTable::Change::To(JobState::kHeld, "Held");
              event = "Held";
            }
            break;
          case Action::kRelease:
            if (state == JobState::kPending) return reply(row);
            if (state != JobState::kHeld) return reply(ended("held jobs can be released"));
            s = state_.Release(id, now);
            if (s.ok()) {
              change = JobTable::Change::To(JobState::kPending, "");
              event = "Released";
            }
            break;
          case Action::kRequeue:
            if (state != JobState::kRunning) return reply(ended("running jobs can be requeued"));
            return StopRunning(id, std::nullopt, true, "requeued by " + user, reply);
        }
        if (!s.ok()) return reply(s);
        reasons_.Forget(id);
        pacer_.Changed();
        store::WriteBatch b;
        NoteDefect(jobs_.Update(id, change, now, b));
        b.events.push_back(Event(id, event, "", "by " + user));
        Persist(std::move(b), [row, reply](const Status& st) {
          if (!st.ok()) return reply(st);
          reply(row);
        });
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::StopRunning(int64_t id, std::optional<JobState> final_state, bool requeue, const std::string& reason,
                              const std::function<void(StatusOr<JobRow>)>& reply) {
  if (lifecycle_.Find(id) == nullptr) return reply(Internal("job " + std::to_string(id) + " runs without an attempt"));
  store::WriteBatch b;
  lifecycle::Effects fx;
  // A requeue asks for a checkpoint: staggered with the others.
  const lifecycle::StopOutcome outcome = lifecycle_.Stop(
      id, final_state, requeue, reason, requeue ? lifecycle::StopPace::kStaggered : lifecycle::StopPace::kAtOnce, fx);
  if (outcome == lifecycle::StopOutcome::kUnchanged) return reply(jobs_.at(id));
  if (outcome == lifecycle::StopOutcome::kStopping) {
    b.events.push_back(Event(id, requeue ? "Requeuing" : "Cancelling", "", reason + "; stopping its replicas"));
  }
  ApplyEffects(fx, b);
  reasons_.Forget(id);
  pacer_.Changed();
  Persist(std::move(b), [row = jobs_.at(id), reply](const Status& st) {
    if (!st.ok()) return reply(st);
    reply(row);
  });
}

void ControlLoop::RunCycle() {
  const Time now = clock_.Now();
  if (now - last_prune_ >= Duration::Minutes(10)) {
    idempotency_.Prune(now, *writer_);
    last_prune_ = now;
  }
  store::WriteBatch swept;
  SweepAgents(swept);
  lifecycle::Effects fx;
  lifecycle_.SweepStalls(fx);
  lifecycle_.SweepTimeLimits(fx);
  ApplyEffects(fx, swept);
  SweepPreemptions(now, swept);
  EndReservations(now, swept);
  for (auto& m : fairshare_.SaveIfDue(now, state_).meta) swept.meta.push_back(std::move(m));
  if (!swept.empty()) Persist(std::move(swept), nullptr);
  fairshare_.Charge(now, state_, settings_.Get()->prices, metrics_);
  core::ClusterSnapshot snap = state_.Snapshot(now);
  snap.queue_fairshare = fairshare_.UpdatePoints(state_.num_queues(), snap);
  snap.queue_shares = fairshare_.shares();
  const core::Decisions d = scheduler_->Cycle(snap);
  reservations_ = d.reservations;
  pacer_.Seen();
  store::WriteBatch b;
  for (const core::JobFailure& f : d.failures) {
    if (!state_.EndPending(f.job, f.state, now, f.reason).ok()) continue;
    NoteDefect(jobs_.Update(f.job, JobTable::Change::Ended(f.state, f.reason, now), now, b));
    b.events.push_back(Event(f.job, "Failed", "DependencyNeverSatisfied", f.reason));
    pacer_.Changed();
  }
  std::vector<std::pair<int64_t, int32_t>> started;  // (job, attempt)
  for (core::Binding bnd : d.bindings) {
    // A gang of one replica per node holds its nodes in Slurm's order:
    // replica 0, which runs a batch script, on the first (BatchHost), and
    // SLURM_NODEID, the host list and scontrol agree.
    if (const core::JobRecord* rec = state_.Find(bnd.job); rec != nullptr && rec->spec.one_per_node) {
      std::sort(bnd.allocations.begin(), bnd.allocations.end(), [this](const auto& x, const auto& y) {
        return api::SlurmNodeOrderLess(state_.nodes()[x.node].spec.name, state_.nodes()[y.node].spec.name);
      });
    }
    if (Status s = state_.Bind(bnd, now); !s.ok()) {
      log::Error("scheduler binding for job {} rejected: {}", bnd.job, s.ToString());
      continue;
    }
    JobTable::Change start = JobTable::Change::To(JobState::kRunning, "");
    start.started = true;
    NoteDefect(jobs_.Apply(bnd.job, start, now));
    const int32_t attempt = jobs_.at(bnd.job).attempts;
    StartAttempt(bnd.job, attempt, /*durable=*/false, nullptr, b);
    started.emplace_back(bnd.job, attempt);
    jobs_.Write(bnd.job, b);
    std::string where;
    for (const core::Allocation& a : bnd.allocations) {
      where += (where.empty() ? "" : ", ") + state_.nodes()[a.node].spec.name + " x" + std::to_string(a.replicas);
    }
    b.events.push_back(Event(bnd.job, "Started", "", "attempt " + std::to_string(attempt) + " on " + where));
  }
  for (const core::Preemption& p : d.preemptions) ApplyPreemption(p, now, b);
  std::vector<std::pair<int64_t, int32_t>> grown;  // (job, attempt)
  for (const core::Growth& g : d.growths) {
    const lifecycle::Attempt* a = lifecycle_.Find(g.job);
    if (a == nullptr || a->Stopping()) continue;
    if (Status s = state_.Grow(g.job, g.allocations, now); !s.ok()) {
      log::Error("scheduler growth of job {} rejected: {}", g.job, s.ToString());
      continue;
    }
    lifecycle::Effects growth;
    lifecycle_.Grow(g.job, growth);
    AttemptDetail& detail = details_.at(g.job);
    const size_t n = lifecycle_.Find(g.job)->replicas.size();
    detail.encoded.resize(n);
    detail.resume_seen.resize(n);
    detail.image_seen.resize(n);
    detail.utilization.resize(n, -1);
    ApplyEffects(growth, b);
    grown.emplace_back(g.job, a->number);
  }
  // Only a reason that changed touches the job's row (a long queue keeps
  // most of its reasons from one cycle to the next).
  for (const core::PendingReason* r : reasons_.Update(d.reasons)) jobs_.WriteReason(r->job, ReasonName(*r), b);
  if (!b.empty()) {
    // Agents learn of a start only once it is durable (ReplyDurable): a
    // server that crashes before the write never has a task running for a
    // bind it forgot.
    Persist(
        std::move(b), started.empty() && grown.empty()
                          ? std::function<void(const Status&)>()
                          : [this, started = std::move(started), grown = std::move(grown)](const Status&) {
                              loop_.Post([this, started, grown] {
                                for (const auto& [job, number] : started) lifecycle_.MarkDurable(job, number);
                                for (const auto& [job, number] : grown) lifecycle_.MarkGrowthDurable(job, number);
                              });
                            });
  }
  AnswerHeldSyncs();
}

void ControlLoop::Explain(int64_t id, Done<StatusOr<Explanation>> done) {
  using R = StatusOr<Explanation>;
  loop_.Async<R>(
      [this, id](const std::function<void(R)>& reply) {
        const JobRow* row = jobs_.Find(id);
        if (row == nullptr) return reply(NotFound("job " + std::to_string(id) + " does not exist"));
        Explanation e;
        e.job = *row;
        // The live status (progress changes more often than the row is written).
        if (details_.count(id)) e.job.status_json = AllocationsJson(id);
        const Time now = clock_.Now();
        if (const core::PendingReason* r = reasons_.Find(id)) {
          e.reason = *r;
          e.reason_text = ReasonText(*r, now);
        } else {
          e.reason_text = e.job.reason;
        }
        core::ClusterSnapshot snap = state_.Snapshot(now);
        if (fairshare_.points().size() == static_cast<size_t>(state_.num_queues()))
          snap.queue_fairshare = fairshare_.points();
        for (const core::PendingJob& p : snap.pending) {
          if (p.id != id) continue;
          e.priority = scheduler_->Priority(p, snap);
          e.attained_gpu_seconds = p.attained_gpu_seconds;
          e.queued = p.QueuedFor(now);
        }
        if (auto run = state_.running().find(id); run != state_.running().end()) {
          e.attained_gpu_seconds = run->second.AttainedGpuSeconds(now);
          e.queued = run->second.queued;
        }
        // Only what is durable is shown: while a change is on its way to the
        // store (the job's end, say), the answer waits for it, so a client never
        // sees a state a crash could take back, nor a state before its events.
        if (writer_->Committed(last_ticket_)) return reply(std::move(e));
        Persist({}, [reply, e = std::move(e)](const Status& s) {
          if (!s.ok()) return reply(s);
          reply(e);
        });
      },
      std::move(done), ShuttingDown());
}

bool ControlLoop::InBackoff(const core::PendingReason& r) const {
  if (r.code != core::ReasonCode::kBeginTime) return false;
  const lifecycle::JobHistory* h = lifecycle_.History(r.job);
  return h != nullptr && h->not_before == r.begin_time;
}

const char* ControlLoop::ReasonName(const core::PendingReason& r) const {
  return InBackoff(r) ? "Backoff" : core::ReasonCodeName(r.code);
}

std::string ControlLoop::ReasonText(const core::PendingReason& r, Time now) const {
  if (!InBackoff(r)) return core::FormatReason(r, state_.GpuTypeName(r.gpu_type), now, state_.FeatureNames(r.features));
  const lifecycle::JobHistory& h = *lifecycle_.History(r.job);
  const int64_t wait_s = (r.begin_time.millis() - now.millis() + 999) / 1000;
  std::string s = "Backoff: retry " + std::to_string(h.retries);
  auto records = attempt_records_.find(r.job);
  if (records != attempt_records_.end() && records->second.is_array() && !records->second.empty() &&
      records->second.back().is_object()) {
    const json& last = records->second.back();
    s += " after attempt " + std::to_string(last.value("attempt", 0)) + " " + last.value("result", "ended") + " (" +
         last.value("reason", "") + ")";
  }
  return s + "; starts again in " + Duration::Seconds(std::max<int64_t>(wait_s, 0)).ToString();
}

void ControlLoop::Queues(Done<StatusOr<std::vector<QueueView>>> done) {
  using R = StatusOr<std::vector<QueueView>>;
  loop_.Async<R>(
      [this](const std::function<void(R)>& reply) {
        std::map<std::string, QueueView> queues;
        for (const auto& [id, row] : jobs_.rows()) {
          QueueView& q = queues[row.queue];
          q.name = row.queue;
          const JobState state = StateOf(id);
          if (state == JobState::kPending || state == JobState::kHeld) ++q.pending;
          if (state == JobState::kRunning || state == JobState::kCompleting) ++q.running;
        }
        for (const core::QueueConfig& c : state_.config().queues) {
          QueueView& q = queues[c.name];
          q.name = c.name;
          q.guarantee = c.guarantee;
          q.limit = c.limit;
          q.parent = c.parent;
          QueueAdmin::QueueSource from = queue_admin_.SourceOf(c.name);
          q.share = from.share;
          q.source = std::move(from.source);
          q.changed_by = std::move(from.changed_by);
        }
        // GPUs held, from the state's per-queue counts.
        const auto& usage = state_.queue_usage();
        for (int32_t i = 0; i < state_.num_queues(); ++i) {
          auto it = queues.find(state_.QueueName(i));
          if (it == queues.end()) continue;
          for (size_t t = 0; t < usage[i].size(); ++t) {
            if (usage[i][t] == 0) continue;
            it->second.in_use_by_type[state_.GpuTypeName(static_cast<int32_t>(t))] = usage[i][t];
            it->second.gpus_in_use += usage[i][t];
          }
        }
        std::vector<QueueView> out;
        out.reserve(queues.size());
        for (auto& [name, q] : queues) out.push_back(q);
        reply(std::move(out));
      },
      std::move(done), ShuttingDown());
}

}  // namespace muster::server
