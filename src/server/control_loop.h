// ControlLoop: the one thread that owns the cluster state in `muster server`.
//
// API threads call the public methods; each posts a task to the loop thread
// (server/loop_executor.h) and is answered through its `done` once the
// answer is ready. A change (submit, cancel, hold, release, requeue) is
// applied to the in-memory state, written to the store through the
// group-commit writer, and answered only once the write is durable, so
// every acknowledged change survives kill -9. The loop runs a scheduling
// cycle shortly after every change and every `cycle_interval`
// (server/cycle_pacer.h),
// applies its decisions (start jobs, fail jobs whose dependencies can never
// be met) and writes them too, and keeps the cycle's pending reasons for
// `why`. Before each cycle it charges the running jobs' GPUs to their
// queues' fair-share usage (scheduler/fairshare.h).
//
// Start() rebuilds the state from the store: ended jobs as history (for
// dependencies and queries), pending and held jobs in the queue, running
// jobs on their recorded nodes (a job whose node is gone is requeued).
//
// Arrays: a spec with `array: N` submits N jobs with consecutive ids in one
// durable write; each records its index and the array's first id.
//
// Idempotency (server/idempotency_table.h): a submit with a key is answered
// with the original job when the same (user, key) was used for the same
// request (fingerprint) before; a different request with a used key is
// kAlreadyExists; a retry while the first is still being written is
// kFailedPrecondition (retry later).
//
// Agents (control_loop_agents.cc, proto/agent_protocol.h): a node is
// registered by its agent's first sync and persisted. What happens to a job
// after it is bound (attempts, replicas ending, retries, stops, nodes lost)
// is the lifecycle's (lifecycle/job_lifecycle.h, lifecycle/node_liveness.h):
// the loop feeds it agents' reports and operators' requests and persists
// the effects it returns in one place (ApplyEffects). The desired state of
// a node is the replicas the lifecycle lists for it, sent only once their
// bind is durable (an agent never runs a bind the store could forget).
//
// If the store fails a write the server cannot keep its promise, so it says
// why on stderr and exits; a restart reloads the last durable state.
//
// Thread-safety: public methods are safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "api/job_spec.h"
#include "common/clock.h"
#include "common/status.h"
#include "core/cluster_state.h"
#include "core/decisions.h"
#include "lifecycle/job_lifecycle.h"
#include "lifecycle/node_liveness.h"
#include "proto/agent_protocol.h"
#include "scheduler/scheduler.h"
#include "server/agent_registry.h"
#include "server/array_dependencies.h"
#include "server/authorizer.h"
#include "server/checkpoint_catalog.h"
#include "server/checkpoint_janitor.h"
#include "server/cycle_pacer.h"
#include "server/fair_share_ledger.h"
#include "server/idempotency_table.h"
#include "server/identity.h"
#include "server/image_pulls.h"
#include "server/job_table.h"
#include "server/job_watch.h"
#include "server/live_settings.h"
#include "server/loop_executor.h"
#include "server/node_waits.h"
#include "server/options.h"
#include "server/pending_reasons.h"
#include "server/preemption_record.h"
#include "server/queue_admin.h"
#include "server/registry_credentials.h"
#include "server/reservations.h"
#include "server/server_metrics.h"
#include "server/straggler_detector.h"
#include "store/store.h"
#include "store/store_writer.h"

namespace muster::server {

class ControlLoop {
 public:
  ControlLoop(const ServerOptions& options, const Clock& clock, store::Store& store);
  ~ControlLoop();

  // Loads the state from the store and starts the loop thread. An elected
  // leader passes its lease's epoch (leadership.h); without one, the epoch
  // is one more than the last start's. A standby that followed the store
  // passes the job rows it holds (job_mirror.h), current as of after it
  // took the lease; otherwise they are read from the store.
  Status Start(std::optional<int64_t> leader_epoch = std::nullopt, std::vector<store::JobRow>* rows = nullptr);
  // Tests: run the loop without a thread (LoopExecutor's manual mode).
  // Call before Start; then Settle() does the loop's work on the caller's
  // thread, under the caller's clock, and a cycle's pace no longer
  // depends on how long the last one really took.
  void RunManually() { manual_ = true; }
  // Manual mode: runs what was posted, the ticks (a cycle when due) and
  // the store's commits with their answers, until nothing is left to do.
  void Settle() { loop_.RunUntilIdle(); }
  // The nodes it started with: static ones and those its store knew.
  size_t nodes_at_start() const { return nodes_at_start_; }
  // Stops the thread after the writes in flight are durable.
  void Stop();
  // The key job tokens are signed with (auth/grants.h): each replica gets
  // its attempt's token as MUSTER_TOKEN. Set before Start().
  void SetJobTokenKey(std::string key) { job_token_key_ = std::move(key); }
  // Where events are counted and timed (cycles, commits, starts, ends,
  // preemptions); it outlives the loop. Set before Start(); null: nowhere.
  void SetMetrics(ServerMetrics* metrics) {
    metrics_ = metrics;
    jobs_.SetMetrics(metrics);
  }
  // Job changes as they become durable, for watches (thread-safe).
  JobWatch& watch() { return watch_; }
  // What a reload changes under running requests (thread-safe).
  LiveSettings& settings() { return settings_; }
  // Applies a reloaded configuration (server/config_reload.h): queues,
  // classes, the default class and fair share on the loop's thread (the
  // next cycle schedules by them), prices and Slurm mappings for the next
  // request. Before Start (a standby) it is kept, and applied as the state
  // is restored. Refused, nothing changed, when it removes, renames or
  // reorders classes. Any thread; waits until applied.
  Status Reconfigure(const ServerOptions& next);

  struct SubmitRequest {
    api::JobSpec spec;
    std::string spec_json;        // canonical, as stored
    std::string user;             // the owner: the caller's effective user
    std::string idempotency_key;  // empty: none
    std::string fingerprint;      // of the request, for idempotency
    // Committed with the job, in the same transaction.
    std::optional<store::AuditRow> audit;
    // Whether the caller may see a job (its dependencies must name such
    // jobs, server/submit_admission.h); empty: every job.
    std::function<bool(const store::JobRow&)> may_see;
  };
  struct SubmitResult {
    store::JobRow job;     // the job, or the first task of an array
    int32_t count = 1;     // jobs submitted: the array's size, else 1
    bool created = false;  // false: an idempotent replay of an earlier submit
  };
  // The calls that take a `done` answer through it, once: on the loop's
  // thread, or the store writer's (once the change they made is durable),
  // or at once on the caller's when the loop has stopped (Unavailable).
  // `done` must not block. So a caller waiting for the loop (an HTTP
  // request) holds no thread.
  template <typename T>
  using Done = LoopExecutor::Done<T>;

  using SubmitReply = Done<StatusOr<SubmitResult>>;
  // `done` has a refusal from the loop's thread, or the job once it is durable.
  void Submit(SubmitRequest request, SubmitReply done);

  enum class Action { kCancel, kHold, kRelease, kRequeue };
  static const char* ActionName(Action a);
  // Applies `action` to job `id` for `who` (server/authorizer.h says who may).
  void Act(int64_t id, Action action, const Identity& who, Done<StatusOr<store::JobRow>> done);
  // Sends `signal` to running job `id`'s processes that `to` names
  // (api::SignalTarget; unset: steps of a Slurm-style job, else all),
  // leaving it running (scancel --signal, muster signal). Agents deliver it
  // once each, if they hear of it within a minute. Answers the attempt and
  // the nodes it goes to once its event is durable; FailedPrecondition
  // when the job does not run; InvalidArgument ("to", "signal") for steps
  // of a job that has none, or a signal srun does not pass on.
  struct SignalAnswer {
    int32_t attempt = 0;
    api::SignalTarget to = api::SignalTarget::kAll;
    std::vector<std::string> nodes;
  };
  void SignalJob(int64_t id, int signal, std::optional<api::SignalTarget> to, const Identity& who,
                 Done<StatusOr<SignalAnswer>> done);
  // Writes rows that are not the loop's own state (tokens, audit entries,
  // the cluster key) in its order; `then` runs once they are durable.
  void Record(store::WriteBatch b, const std::function<void(const Status&)>& then);

  struct Explanation {
    store::JobRow job;
    std::optional<core::PendingReason> reason;  // pending jobs, from the last cycle
    std::string reason_text;
    std::optional<scheduler::PriorityBreakdown> priority;
    // Pending or running: GPUs x seconds it has run over all its attempts
    // (what the las policy ranks by), and its time pending over all of them.
    std::optional<int64_t> attained_gpu_seconds;
    Duration queued = Duration::Zero();
  };
  // A job as the loop sees it, once what it shows is durable.
  void Explain(int64_t id, Done<StatusOr<Explanation>> done);

  struct NodeView {
    core::NodeSpec spec;
    core::Resources free;
    bool schedulable = true;
    int32_t running_jobs = 0;
    std::string status_json;          // the agent's report: GPUs, health, cgroups ("{}" without an agent)
    std::string condition = "Ready";  // Ready, Unreachable (agent silent: no new work) or Lost
    std::string cordon;               // why it gets no new work, when cordoned ("cordoned by ann", a GPU fault)
    int64_t last_seen_ms = 0;         // its agent's last sync (0: static, or never synced)
    // Its GPUs in use: device index, the job and its queue (the dashboard's map).
    struct GpuUse {
      int32_t index = 0;
      int64_t job = 0;
      std::string queue;
    };
    std::vector<GpuUse> gpu_use;
    // Free GPUs the last cycle's backfill plan reserves for a blocked job
    // (the first such job), and GPUs freed for a preemptor.
    int64_t reserved_gpus = 0;
    int64_t reserved_for = 0;
    std::optional<Time> reclaim_at;  // the cloud takes it back then (a reclaim notice)
    std::string pool;                // server/pool_prices.h: "spot", "on-demand" or one named in `pools`
  };
  void Nodes(Done<StatusOr<std::vector<NodeView>>> done);
  // The cluster's state for a scrape of /metrics (all but leadership).
  void Gauges(Done<StatusOr<ServerMetrics::Gauges>> done);

  // One agent sync (proto/agent_protocol.h). `changed`: the report changed
  // the server's state or needs an answer now (results to acknowledge).
  struct SyncResult {
    proto::SyncResponse response;
    bool changed = false;
    bool wait = false;  // kMayWait: nothing new; wait for a change, then call with kAfterWait
  };
  // kFull: process the report and answer with the desired state. kMayWait:
  // the same, but when nothing changed and the agent's version is current,
  // answer `wait` without the desired state. kAfterWait: only the desired
  // state (the report was processed before the wait).
  enum class SyncPhase { kFull, kMayWait, kAfterWait };
  using SyncReply = Done<StatusOr<SyncResult>>;
  // `done` has the answer once the writes it needs are durable.
  void AgentSync(const std::shared_ptr<const proto::SyncRequest>& request, SyncPhase phase, SyncReply done);
  // Calls `then` once when the desired-state version of `node` is not
  // `version`, or `max_wait` has passed, or EndWaits() was called; at once
  // (on the caller's thread) when one of these already holds. A waiting
  // agent holds no thread. `then` runs on any thread and must not block.
  void WhenNodeChanges(const std::string& node, int64_t version, Duration max_wait, std::function<void()> then);
  // An operator's word that a silent node is gone (lifecycle::NodeLiveness::
  // DeclareLost): its jobs are requeued now, without waiting for
  // agents.lostAfter or a mass-silence hold. Refused while its agent may
  // still run tasks (synced within the lease). Admins only.
  void DeclareLost(const std::string& node, const Identity& who, Done<StatusOr<NodeView>> done);
  // Forgets a lost node that runs nothing: deleted from the store and no
  // longer listed or counted (a retired machine, a junk registration). Its
  // agent registers it again if it ever returns. Refused for a node that
  // is not lost, one still stopping a job's replicas, and a node from the
  // configuration (remove it there). Admins only.
  void RemoveNode(const std::string& node, const Identity& who, Done<StatusOr<NodeView>> done);
  // Ends every wait of WhenNodeChanges, now and later: the server is
  // stopping, and must not sit out agents' long polls.
  void EndWaits();
  // Where a job's replica runs or ran: its node's agent address and log port.
  struct ReplicaLocation {
    std::string node;
    std::string address;
    int32_t log_port = 0;
    std::string log_tls_pin;  // "": plain HTTP
    int32_t attempt = 0;      // the attempt found (the current or last one, unless asked)
    // The files the replica's output also went to (the spec's stdout and
    // stderr, expanded), as its node sees them; empty: none.
    std::string stdout_path, stderr_path;
    // Where else its output is, for a message when the node cannot give its log.
    std::string Elsewhere() const;
  };
  // Of attempt `attempt` (0: the current or last one). Blocks until the loop
  // answers (its caller then blocks on the agent anyway).
  StatusOr<ReplicaLocation> LocateReplica(int64_t job, int32_t replica, int32_t attempt = 0);

  struct QueueView {
    std::string name;
    int64_t pending = 0;
    int64_t running = 0;
    int64_t gpus_in_use = 0;
    std::map<std::string, int64_t> in_use_by_type;    // GPUs its running jobs hold, by GPU type
    std::map<std::string, int64_t> guarantee, limit;  // its quota ("*": every type)
    std::string parent;
    std::optional<int64_t> share;  // its fair-share share, when configured
    // "file" (the configuration file), "api" (made through the API), or ""
    // (a queue only jobs name: no quota).
    std::string source;
    std::string changed_by;  // an API queue's last writer
  };
  void Queues(Done<StatusOr<std::vector<QueueView>>> done);
  // Queues through the API (server/api_queues.h; control_loop_config.cc),
  // kept in the store with `audit`; the next cycle schedules by them.
  // `path_name`: the queue a PUT names ("" for POST, whose body names it).
  // POST refuses a queue there is (FailedPrecondition); PUT creates or
  // replaces. A queue of the configuration file is refused
  // (FailedPrecondition, naming the file). Answers the queue's view.
  void PutQueue(nlohmann::json body, const std::string& path_name, const Identity& who, store::AuditRow audit,
                Done<StatusOr<QueueView>> done);
  // Deletes an API queue; false when there was none. Its jobs stay, with no
  // quota (with strictQueues, new jobs may no longer name it).
  void DeleteQueue(const std::string& name, store::AuditRow audit, Done<StatusOr<bool>> done);

  // Registry credentials (server/registry_credentials.h), kept in the store
  // with `audit`. Remove answers whether there was one.
  void PutRegistryCredential(RegistryCredential c, store::AuditRow audit, Done<Status> done);
  void RemoveRegistryCredential(std::string scope, std::string owner, std::string registry, store::AuditRow audit,
                                Done<StatusOr<bool>> done);
  void RegistryCredentialList(Done<StatusOr<std::vector<RegistryCredential>>> done);
  // Pre-pulls (server/image_pulls.h): asks `nodes` (empty: every node an
  // agent serves) to pull `image`; answers the nodes asked. NotFound for a
  // node no agent serves.
  void PullImage(std::string image, std::vector<std::string> nodes, const Identity& who, store::AuditRow audit,
                 Done<StatusOr<std::vector<std::string>>> done);
  void ImagePullList(Done<StatusOr<std::vector<ImagePull>>> done);

  // Admin reservations (server/reservations.h; control_loop_reservations.cc),
  // kept in the store with `audit`. Create answers the reservation as
  // stored; Delete whether there was one. A reservation whose window has
  // ended is removed at the next cycle (event ReservationEnded).
  void CreateReservation(nlohmann::json body, const Identity& who, store::AuditRow audit,
                         Done<StatusOr<ReservationEntry>> done);
  void DeleteReservation(const std::string& name, store::AuditRow audit, Done<StatusOr<bool>> done);
  void ReservationList(Done<StatusOr<std::vector<ReservationEntry>>> done);

  // Cordons a node (no new work; running jobs stay) or clears a cordon
  // (also one a GPU fault set). Operators and admins. Returns the node's view.
  // `drain` also requeues every job running there: each gets its
  // checkpoint signal and grace period (staggered, see BeginEnding), then
  // goes back to PENDING without spending a retry.
  void Cordon(const std::string& node, bool cordon, const Identity& who, bool drain, Done<StatusOr<NodeView>> done);
  // A reclaim notice from an operator: the cloud takes `node` back in
  // `deadline` (see BeginReclaim; its agent may also report one itself).
  void Reclaim(const std::string& node, Duration deadline, const Identity& who, Done<StatusOr<NodeView>> done);

  // Checkpoints and progress (control_loop_checkpoints.cc).
  //
  // A commit is accepted only from the job's owner (or its job token) and its current attempt
  // (a replica of an attempt that was replaced is fenced off); the entries
  // and their rules (numbering, retention, corrupt ones) are the
  // CheckpointCatalog's (server/checkpoint_catalog.h). Entries retention
  // drops are deleted from storage in the background once that is durable.
  // A new attempt's resume candidates are fixed when it is created, so
  // every replica of a gang gets the same list.
  void CommitCheckpoint(CheckpointCatalog::Commit c, Identity who, Done<StatusOr<store::CheckpointRow>> done);

  // Progress of a running attempt (step, metrics, a message), kept with the
  // attempt and shown with the job. With the job's stallTimeout set, an
  // attempt that reported progress once and then stops reporting for that
  // long fails as hung (a user failure: it spends a retry). The answer says
  // whether the job should checkpoint and exit now (its attempt is being
  // stopped: cancel, requeue, preemption, a node drain).
  // A report that names its replica also feeds the straggler detector
  // (server/straggler_detector.h): a replica found well behind its
  // siblings gets an event, counts in the metrics, is shown with the job,
  // and with stragglers.cordon its node is cordoned.
  struct ProgressReport {
    int64_t job = 0;
    int32_t attempt = 0;
    std::optional<int32_t> replica;
    std::optional<int64_t> step;
    nlohmann::json metrics = nlohmann::json::object();  // name -> number
    std::string message;
    nlohmann::json endpoints;  // name -> "host:port"; null: unchanged
    Identity who;
  };
  struct ProgressAnswer {
    int32_t attempt = 0;
    bool checkpoint_requested = false;
  };
  void ReportProgress(ProgressReport p, Done<StatusOr<ProgressAnswer>> done);

 private:
  // ---- The loop, jobs and the scheduling cycle (control_loop.cc).
  // What a call answers once the loop has stopped.
  static Status ShuttingDown();
  // Says on stderr what an internal check refused (a defect of the server,
  // not of a request), e.g. a state transition JobTable does not allow.
  void NoteDefect(const Status& s) const;
  Status Restore(std::vector<store::JobRow>* warm);
  // The loop's own work after each wake-up (LoopExecutor::Hooks::tick):
  // staggered stops due, expired waits, a scheduling cycle when due.
  void Tick();
  // How long the loop may sleep: until a cycle, a staggered stop or a
  // wait's end is due.
  Duration IdleWait() const;
  void RunCycle();
  // Queues a batch with the store writer; returns the writer's ticket.
  uint64_t Persist(store::WriteBatch batch, std::function<void(const Status&)> done);
  store::EventRow Event(int64_t job, const std::string& type, const std::string& reason,
                        const std::string& message) const;
  // A job's status column: allocations, the running attempt, history.
  std::string AllocationsJson(int64_t job) const;
  void DoSubmit(const SubmitRequest& req, const SubmitReply& reply);
  // Job `id` if `who` may `verb` it (Authorizer::MayManageJob); else
  // NotFound, or PermissionDenied saying who may.
  StatusOr<const store::JobRow*> ManagedJob(int64_t id, const Identity& who, const std::string& verb);
  // Cancel (final_state) or requeue a RUNNING or COMPLETING job: its
  // replicas are stopped first where agents run them.
  void StopRunning(int64_t id, std::optional<core::JobState> final_state, bool requeue, const std::string& reason,
                   const std::function<void(StatusOr<store::JobRow>)>& reply);
  // The state a job shows: the lifecycle's while it has an attempt (RUNNING,
  // COMPLETING), else the cluster state's.
  core::JobState StateOf(int64_t job) const;
  // A retry's backoff reaches the scheduler as a begin time: such a reason
  // is shown as Backoff, with the failure it follows.
  bool InBackoff(const core::PendingReason& r) const;
  const char* ReasonName(const core::PendingReason& r) const;
  std::string ReasonText(const core::PendingReason& r, Time now) const;
  // Per node: its free GPUs that the last cycle's reservations hold, and
  // the first job they hold them for.
  struct ReservedGpus {
    int64_t gpus = 0;
    int64_t first_job = 0;
  };
  std::vector<ReservedGpus> ReservedByNode() const;
  // The tasks of the array whose id is `id` (ids from it up, consecutive as
  // submitted); empty when it is no array's.
  std::vector<ArrayTaskRef> ArrayTasks(int64_t id) const;
  struct ArrayTask {
    int64_t first_id = 0;
    int32_t index = 0;
  };

  // ---- Admin reservations (control_loop_reservations.cc).
  // Removes the reservations whose windows have ended (at each cycle).
  void EndReservations(Time now, store::WriteBatch& b);
  // FailedPrecondition ("nodes") naming a running job that would, by its
  // limit, still run on one of the window's nodes when it opens.
  Status JobsRunIntoWindow(const core::AdminReservation& window) const;

  // ---- Queues and configuration (control_loop_config.cc).
  // Gives the state and fair share the file's `cluster` and `fairshare`
  // merged with the API's queues; nothing changes when refused.
  Status ApplyQueues(const core::ClusterConfig& cluster, const scheduler::FairShareOptions& fairshare);
  // A reload (Reconfigure, or one deferred until Start).
  Status ApplyConfig(const ServerOptions& next);
  // Puts a change queue_admin_ made in force and writes it (`then` once
  // durable); refused (and undone) when the queues it makes are.
  Status ApplyQueueChange(const std::string& event_type, const std::string& event_message, store::AuditRow audit,
                          std::function<void(const Status&)> then);

  struct SentSignal {
    int64_t seq = 0;
    int32_t signal = 0;
    std::string to;
    int64_t until_ms = 0;
  };
  // ---- Attempts (control_loop_attempts.cc). What the server keeps of a
  // running attempt beside the lifecycle's record: its spec, encoded
  // assignments, resume choice and progress as reported.
  struct AttemptDetail {
    std::shared_ptr<const api::JobSpec> spec;
    std::vector<std::shared_ptr<const std::string>> encoded;  // per replica, its assignment encoded once
    std::vector<bool> resume_seen;                            // per replica: its checkpoint verification was recorded
    std::vector<std::string> image_seen;  // per replica: the image state its agent last told of ("pulling", "pulled")
    std::vector<double> utilization;      // per replica: its mean GPU utilization as its agent said (-1: not yet)
    std::vector<proto::ResumeCandidate> resume;  // fixed at creation, for every replica
    nlohmann::json resumed_from;                 // the checkpoint it resumed from, once a replica verified
    bool resume_recorded = false;
    nlohmann::json metrics;  // progress as the job reported it
    std::string progress_message;
    nlohmann::json endpoints;  // name -> "host:port" the job serves (an interactive shell's relay)
    int64_t progress_persisted_ms = 0;
    std::vector<SentSignal> signals;  // users' signals, listed to agents until until_ms
    int64_t signal_seq = 0;
  };
  // Whether a signal for the job reaches replica `replica`: every replica,
  // but of a Slurm-style job only the first (its srun passes it on).
  static bool SignalReaches(const api::JobSpec& spec, int32_t replica);
  // The lifecycle's terms of a job's spec: retries, grace, time limit.
  lifecycle::JobTerms TermsOf(const api::JobSpec* spec) const;
  // The one persistence boundary of the lifecycle: its effects become job
  // rows, events and attempt records in `b`, and nudges to agents.
  void ApplyEffects(lifecycle::Effects& fx, store::WriteBatch& b);
  // Starts the attempt of a job just bound; `durable`: its bind is already in
  // the store (a restart), so agents may run it now. `restored`: its status
  // from before a restart (ended replicas, results, teardown in progress).
  void StartAttempt(int64_t job, int32_t number, bool durable, const nlohmann::json* restored, store::WriteBatch& b);
  nlohmann::json AttemptJson(int64_t job) const;
  // The spec's stdout and stderr files for one replica on `node` (expanded; empty when unset).
  // %n of an output pattern: `node`'s place among the job's nodes, in the
  // order of its replicas.
  static int32_t NodeNumber(const std::vector<std::string>& nodes_by_replica, const std::string& node);
  std::pair<std::string, std::string> OutputFiles(int64_t job, const api::JobSpec& spec, int32_t replica,
                                                  const std::string& node, int32_t node_number) const;
  // The mean of its replicas' GPU utilization that agents reported; -1: none.
  static double MeanUtilization(const AttemptDetail& d);
  // The task replica `replica` of `job`'s attempt is given.
  proto::TaskAssignment Assignment(int64_t job, const lifecycle::Attempt& a, const AttemptDetail& d,
                                   int32_t replica) const;

  // Acts on a replica that became a straggler or recovered: its event, the
  // metric, the cordon policy.
  void OnStraggler(const StragglerDetector::Change& c, store::WriteBatch& b);

  // ---- Agents (control_loop_agents.cc).
  void DoAgentSync(const proto::SyncRequest& req, SyncPhase phase, const SyncReply& reply);
  // The node's desired state; returns whether it names a replica whose
  // bind is not yet durable (then the answer must wait for the store).
  bool BuildDesired(core::NodeIndex node, proto::SyncResponse& out);
  // Answers once `b` and everything submitted before it are durable (at
  // once when there is nothing to wait for).
  void ReplyDurable(store::WriteBatch b, bool wait, SyncResult out, SyncReply reply);
  // Answers the syncs held for the cycle (after it, or at shutdown).
  void AnswerHeldSyncs();
  // Publishes the node's desired-state generation to its waiting agent.
  void Publish(core::NodeIndex node);
  // The capacity the agent of `node` reports, applied when nothing running
  // there holds more or a GPU it no longer has; until then the node is
  // cordoned. Events NodeResized, NodeResizePending.
  void ApplyCapacity(core::NodeIndex node, const core::Resources& reported, store::WriteBatch& b);
  // Whether the node's condition lets it take new work.
  void UpdateSchedulable(core::NodeIndex node);
  Status RestoreNodes();
  // Nodes whose agents went silent (lifecycle::NodeLiveness): no new work
  // when unreachable; lost ones have their replicas ended and jobs requeued.
  void SweepAgents(store::WriteBatch& b);
  // Agent reports that freed GPUs, answered after the next cycle.
  struct HeldSync {
    core::NodeIndex node;
    SyncResult out;
    SyncReply reply;
  };

  // ---- Nodes as operators see them (control_loop_nodes.cc).
  NodeView ViewOf(const core::Node& n) const;
  // The pool a node is in, by the prices in force (server/pool_prices.h).
  std::string PoolOf(const core::Node& n) const;
  // The node an operator (or, `admins_only`, an admin) acts on:
  // PermissionDenied for others, NotFound for a node that does not exist
  // or was removed.
  StatusOr<core::NodeIndex> AdminNode(const std::string& node, const Identity& who, const std::string& verb,
                                      bool admins_only);
  // Stops every attempt on `node` to requeue it elsewhere, each after its
  // checkpoint signal (at `pace`), with `why` as the reason; `event_reason`
  // names the cause in its events ("Drain", "Reclaim").
  void RequeueNodeJobs(core::NodeIndex node, const std::string& why, const std::string& event_reason,
                       lifecycle::StopPace pace, store::WriteBatch& b);
  // The cloud takes `node` back at `deadline` (`by`: who gave notice): the
  // node is cordoned, its jobs requeued (RequeueNodeJobs), and its agent
  // told the deadline, to which it cuts each stop's grace. A notice for a
  // node already reclaimed only moves the deadline earlier; an uncordon
  // ends the reclaim.
  void BeginReclaim(core::NodeIndex node, Time deadline, const std::string& by, store::WriteBatch& b);
  // Answers with the node's view once `b` (and all before it) is durable.
  void ReplyNodeView(store::WriteBatch b, core::NodeIndex node, const std::function<void(StatusOr<NodeView>)>& reply);

  // ---- Checkpoints (control_loop_checkpoints.cc).
  // A replica's report of the checkpoint it resumed from, and the ones it
  // found damaged.
  // A container replica's image, as its agent told: being pulled, or
  // pulled (an event each; nothing for an image the node had).
  void RecordImageState(int64_t job, const proto::TaskReport& t, const std::string& node, store::WriteBatch& b);
  void RecordResume(int64_t job, const proto::TaskReport& t, store::WriteBatch& b);

  // ---- Preemption (control_loop_preemption.cc, scheduler/preemption.h).
  // A preemptor's victims are stopped like a requeue (checkpoint signal,
  // grace period, staggered, no retry spent) and the capacity they free is
  // held for it (ClusterState::Nominate) until it starts; preemptions_
  // keeps the holds, the immunity of victims whose hold lapsed, and grace
  // cuts (server/preemption_record.h).
  void ApplyPreemption(const core::Preemption& p, Time now, store::WriteBatch& b);
  void SweepPreemptions(Time now, store::WriteBatch& b);

  // ---- State: every field, in one block. Owned by the loop's thread
  // unless said otherwise; declared (so constructed) in dependency order.
  RegistryCredentials registry_credentials_;
  Reservations admin_reservations_;  // the operators' (the scheduler's are reservations_)
  ImagePulls image_pulls_;
  CheckpointCatalog checkpoints_;
  std::unique_ptr<CheckpointJanitor> janitor_;  // thread-safe
  std::vector<HeldSync> held_syncs_;
  PreemptionRecord preemptions_;
  std::vector<core::Reservation> reservations_;                  // the last cycle's (NodeView::reserved_gpus)
  std::unordered_map<int64_t, AttemptDetail> details_;           // jobs with a running attempt
  std::unordered_map<int64_t, nlohmann::json> attempt_records_;  // per job: one object per ended attempt
  AgentRegistry agents_;
  int64_t epoch_ = 0;
  size_t nodes_at_start_ = 0;  // set by Start
  int32_t port_salt_ = 0;      // MasterPort's per-cluster shift
  std::string job_token_key_;

  const ServerOptions& options_;
  const Authorizer authz_;
  const Clock& clock_;
  store::Store& store_;
  NodeWaits waits_;                             // thread-safe; its lock nests with no other
  std::unique_ptr<store::StoreWriter> writer_;  // thread-safe
  ServerMetrics* metrics_ = nullptr;            // thread-safe
  uint64_t last_ticket_ = 0;                    // of the last batch handed to writer_

  core::ClusterState state_;
  lifecycle::NodeLiveness liveness_;
  lifecycle::JobLifecycle lifecycle_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  // Decayed GPU usage per queue, charged before every cycle (and to the
  // metrics), kept in the store across restarts.
  FairShareLedger fairshare_;
  // Every job's stored row; the one place rows are written (job_table.h).
  JobTable jobs_;
  JobWatch watch_;         // thread-safe
  LiveSettings settings_;  // thread-safe
  // The queues in force and where each comes from (the file, the API), and
  // a reload that came before Start (server/queue_admin.h).
  QueueAdmin queue_admin_;
  IdempotencyTable idempotency_;
  // Why each pending job waits, as of the last cycle (server/pending_reasons.h).
  PendingReasons reasons_;
  std::unordered_map<int64_t, ArrayTask> array_task_of_;  // job -> its place in an array
  Time last_prune_;
  CyclePacer pacer_;  // when the next cycle is due, and whether anything changed since the last
  StragglerDetector stragglers_;

  bool manual_ = false;  // RunManually
  // The loop's thread and task queue; last, so it stops first.
  LoopExecutor loop_;
};

}  // namespace muster::server
