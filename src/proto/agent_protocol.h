// The agent protocol: one level-triggered sync, POST /v1/agent/sync.
//
// The agent sends its whole observed state (SyncRequest): the node, its
// GPUs and their health, and every task it knows, running or ended and not
// yet acknowledged. The server answers with the whole desired state
// (SyncResponse): the tasks that should run on the node, the results it has
// recorded (the agent may forget those tasks), the lease and the leader's
// epoch. Because every message carries everything, a lost message changes
// nothing: the next sync repairs it.
//
// Nudge: a request with `waitMs` > 0 and the `version` of the last desired
// state the agent received is held by the server until the node's desired
// state changes (a job is bound there or stopped) or `waitMs` passes, then
// answered. An agent that reported a change (a task ended) is answered at
// once. So a job starts tens of milliseconds after it is bound.
//
// Fencing: every task carries job id, attempt and the epoch of the leader
// that launched it. An agent ignores a response from an older epoch than
// one it has seen; a task the server no longer lists is stopped.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace muster::proto {

struct GpuReport {
  int32_t index = 0;
  std::string uuid;
  std::string name;
  int64_t memory_bytes = 0;
  int32_t numa_node = -1;
  int32_t nvlinks = 0;
  bool healthy = true;
  std::string health;  // why not healthy ("XID 79")
};

struct HealthEventReport {
  std::string uuid;
  int64_t xid = 0;
  std::string kind;
  bool fatal = true;
  int64_t time_ms = 0;
};

// A checkpoint a task may resume from (newest first in an assignment).
struct ResumeCandidate {
  int64_t seq = 0;
  int64_t step = 0;
  std::string location;
  std::string manifest_sha256;
};

// A candidate that failed verification before launch, and why.
struct SkippedCheckpoint {
  int64_t seq = 0;
  std::string reason;
};

struct TaskReport {
  int64_t job = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
  bool running = true;
  int64_t start_ms = 0;
  // Its mean GPU utilization so far, 0..1 (agent/utilization_meter.h); -1:
  // unknown (no GPU, or no sample yet).
  double gpu_utilization = -1;
  // When ended:
  int32_t exit_code = -1;
  int32_t signal = 0;
  bool oom = false;
  // "timeout", "stop", "fenced", "launch" (could not start), "node" (could
  // not start for a fault of the node's: a GPU it was given is gone),
  // "agent-exit", or empty
  std::string stop_reason;
  std::string message;
  int64_t end_ms = 0;
  // The checkpoint verification before launch, once done (when the task
  // had candidates): the one it resumed from (0: none passed) and those
  // skipped as damaged.
  bool resume_known = false;
  int64_t resumed_seq = 0;
  std::vector<SkippedCheckpoint> skipped;
  // A container task's image on the node: "pulling", "pulled" (pull_ms: how
  // long it took; -1: it was there already), or empty (not a container, or
  // not known yet).
  std::string image_state;
  int64_t pull_ms = -1;
};

// An admin's pre-pull of an image on this node (agent/image_puller.h):
// "waiting", "pulling", "pulled" (ms: how long it took) or "failed"
// (message: why).
struct ImagePullReport {
  std::string image;
  std::string state;
  std::string message;
  int64_t ms = 0;
};

struct SyncRequest {
  std::string node;
  // Which agent this is, stable across its restarts (kept in its state
  // directory): the server refuses a second live agent for one node.
  std::string agent_id;
  std::string agent_version;
  std::string address;   // where the node's tasks reach each other (MASTER_ADDR)
  int32_t log_port = 0;  // the agent's log server, 0 = none
  // The log server speaks TLS with a certificate of the agent's own making
  // whose key has this pin (http/tls.h); "": plain HTTP.
  std::string log_tls_pin;
  std::string gpu_type;
  std::string gpu_source;  // "nvml", "fake", "none"
  std::string gpu_note;
  std::vector<GpuReport> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::map<std::string, std::string> labels;  // leaf, spine, zone, rack
  std::string cgroups;                        // what the agent enforces
  // Container jobs: "podman 4.3.1; GPUs by CDI" (or "...; no GPU containers:
  // why"), or "" when the node runs none (and why, in containers_note).
  std::string containers;
  std::string containers_note;
  // What the node can do, for jobs that require it: "containers",
  // "gpu-containers" (core/node.h).
  std::vector<std::string> features;
  std::vector<HealthEventReport> health_events;  // since the last acknowledged sync
  std::vector<TaskReport> tasks;
  std::vector<ImagePullReport> pulls;  // the pre-pulls the last answer asked for
  // The cloud gave notice that it reclaims this node (agent/reclaim_watcher.h):
  // the time left before it does, when the request was built (at least 1;
  // 0: no notice), and where the notice came from.
  int64_t reclaim_in_ms = 0;
  std::string reclaim_source;
  // Grows whenever the agent's observed tasks change. The server ignores the
  // task list of a request older than one it has processed (an agent has
  // two syncs in flight: a waiting one and a report), so a stale snapshot
  // never makes a running task look lost.
  int64_t report_seq = 0;
  int64_t epoch = 0;    // the highest epoch this agent has seen
  int64_t version = 0;  // the desired-state version it last received
  // The desired-state version it had applied when it built `tasks`: every
  // task that state asked for, started or refused, is in the list. (The
  // server ends a stopped replica the agent never started once this has
  // passed the stop.)
  int64_t reports_version = 0;
  int64_t wait_ms = 0;  // hold the answer until something changes, at most this long
};

struct TaskAssignment {
  int64_t job = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
  int64_t epoch = 0;
  std::string user;
  std::vector<std::string> argv;
  // The job gave a script: argv is {"/bin/sh", "-c", SCRIPT} (then $0 and
  // the script's arguments, if it has some), and the node runs SCRIPT with
  // the interpreter its #! line names, if it has one, with those arguments.
  bool script = false;
  std::string image;  // a container image, when the job names one
  struct Mount {
    std::string host_path, container_path;
    bool read_only = false;
  };
  std::vector<Mount> mounts;  // the job's, into its container
  // The login its node pulls the image with (server/registry_credentials.h);
  // empty registry: none.
  struct RegistryAuth {
    std::string registry, username, password;
  };
  RegistryAuth registry_auth;
  std::map<std::string, std::string> env;  // job env and Muster/torchrun/Slurm variables
  std::string working_dir;
  // The job's stdout and stderr files, expanded for this replica (relative:
  // to working_dir); empty: only the node's log.
  std::string stdout_path, stderr_path;
  std::vector<int32_t> gpus;  // device indices on this node; the agent maps them to UUIDs
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t time_limit_ms = 0;  // 0 = none
  int32_t stop_signal = 15;   // the job's checkpoint signal (SIGUSR1 = 10, SIGTERM = 15)
  int64_t grace_ms = 30'000;
  // The job's limit signal (api::LimitSignal): `limit_signal` (0: none),
  // sent limit_signal_before_ms before time_limit_ms to the task's
  // processes that limit_signal_to names ("all", "batch", "steps";
  // agent/executor.h, Executor::Signal). Once per task.
  int32_t limit_signal = 0;
  int64_t limit_signal_before_ms = 0;
  std::string limit_signal_to;
  // The job's committed checkpoints, newest first: the first that passes
  // verification on the node becomes MUSTER_RESUME_FROM.
  std::vector<ResumeCandidate> resume;
};

struct TaskRef {
  int64_t job = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
};

// A stop whose grace period is shorter than its assignment's (the victim
// of an interactive job's preemption): its replicas on the node get at most
// `grace_ms` between the stop signal and SIGKILL.
struct GraceCut {
  int64_t job = 0;
  int32_t attempt = 0;
  int64_t grace_ms = 0;
};

// A signal a user sent to a running job (scancel --signal, muster signal):
// for a replica's task on this node, to the processes `to` names (as
// TaskAssignment::limit_signal_to). `seq` grows per job: the agent
// delivers each (job, attempt, replica, seq) once, and the server lists it
// for a minute.
struct SignalOrder {
  int64_t job = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
  int64_t seq = 0;
  int32_t signal = 0;
  std::string to;
};

struct SyncResponse {
  int64_t epoch = 0;
  int64_t version = 0;
  int64_t lease_ms = 60'000;          // stop every task if no sync succeeds for this long
  std::vector<TaskAssignment> tasks;  // should run on this node
  // Tasks already encoded with ToJson(TaskAssignment), sent after `tasks`:
  // the server encodes each assignment once, not at every sync. Parsing
  // puts them into `tasks`.
  std::vector<std::shared_ptr<const std::string>> encoded_tasks;
  std::vector<TaskRef> recorded;       // ended tasks the server has recorded
  std::vector<std::string> pulls;      // images an admin wants pulled on this node (muster image pull)
  int32_t health_events_recorded = 0;  // how many of the request's health events were stored
  // The node is being reclaimed (a notice from its agent or an operator):
  // the time left, at least 1; 0: not. Stops end by then: a stopping
  // task's grace is cut to it.
  int64_t reclaim_in_ms = 0;
  std::vector<GraceCut> grace_cuts;  // stops of tasks here, no longer listed, with a shorter grace
  std::vector<SignalOrder> signals;  // signals for tasks here
};

// The key of one attempt of one replica, "j<job>.a<attempt>.r<replica>":
// how agent and server name a task (its journal, log and cgroup).
std::string TaskKey(int64_t job, int32_t attempt, int32_t replica);

std::string ToJson(const SyncRequest& r);
std::string ToJson(const SyncResponse& r);
std::string ToJson(const TaskAssignment& t);
// An assignment's resume candidates alone, in the same form (the agent's
// task spec keeps them so).
std::string ToJson(const std::vector<ResumeCandidate>& candidates);
// Errors name the field ("tasks[2].job: must be an integer").
StatusOr<SyncRequest> ParseSyncRequest(const std::string& text);
StatusOr<SyncResponse> ParseSyncResponse(const std::string& text);
StatusOr<std::vector<ResumeCandidate>> ParseResumeCandidates(const std::string& text);

}  // namespace muster::proto
