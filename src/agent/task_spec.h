// TaskSpec: everything needed to launch one replica of a job on this node,
// and TaskResult: how it ended. Both go into the task's journal as JSON, so
// the task shim (a separate process) and an agent restarted after a crash
// read the same facts.
//
// A task's key (proto::TaskKey, "j<job>.a<attempt>.r<replica>") also names
// the task's journal, log and cgroup.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "proto/agent_protocol.h"

namespace muster::agent {

// A task that runs in a container (the job named an image): how the shim
// runs it with Podman (agent/container_command.h).
struct ContainerSpec {
  std::string image;
  std::string name;             // the container's name, unique to this agent and task
  std::string podman;           // its absolute path (root_exec.h); the shim refuses any other
  std::string containers_conf;  // CONTAINERS_CONF for Podman; empty: its defaults
  std::string runtime;          // --runtime; empty: Podman's default
  std::string cgroup_parent;    // the task's group (CgroupDriver::PathOf); empty: Podman's default
  std::string auth_file;        // registry credentials for the pull; empty: none
  struct Mount {
    std::string host, container;
    bool read_only = false;
  };
  std::vector<Mount> mounts;
  // --device values: "HOST[:CONTAINER]" device files, or CDI names
  // ("nvidia.com/gpu=GPU-...").
  std::vector<std::string> devices;
};

struct TaskSpec {
  std::string key;
  int64_t job = 0;                // whose checkpoints `resume` lists
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  // argv is {"/bin/sh", "-c", SCRIPT[, $0, ARGS...]}, the job's script. A SCRIPT that
  // starts with "#!" is run as a file instead, so that its interpreter is
  // the one it names (as sbatch does): the shim puts it in a memory file
  // (memfd) and executes /proc/self/fd/N, and falls back to argv if the
  // kernel refuses; ARGS follow either way.
  bool script = false;
  std::map<std::string, std::string> env;  // the whole environment
  std::string working_dir;                 // empty: the user's home, else /
  // The identity to run as; run_as false keeps the agent's own.
  bool run_as = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string log_path;  // stdout and stderr, interleaved
  // The job's own files that also get them (the spec's stdout and stderr),
  // opened as the task's user; relative: to working_dir. stderr_path
  // empty: errors go to stdout_path too. Both empty: the log only.
  std::string stdout_path, stderr_path;
  int64_t log_max_bytes = 64LL << 20;     // then rotated to log_path + ".1"
  std::vector<std::string> cgroup_procs;  // cgroup.procs files the shim joins
  // The agent's lease file (its deadline in ms since the epoch, rewritten in
  // place at every sync). Past the deadline the shim stops the task itself:
  // its stop signal, the grace period, then SIGKILL ("fenced"). Empty: none.
  std::string lease_file;
  // A directory of the task's own, mounted on /tmp in a mount namespace of
  // the task's (needs a root shim); empty: the node's /tmp.
  std::string private_tmp;
  int32_t stop_signal = 15;
  int64_t grace_ms = 30'000;
  // Checkpoints to resume from, newest first. Before starting the payload
  // the shim verifies them in order (checkpoint/manifest.h) and passes the
  // first sound one as MUSTER_RESUME_FROM (and MUSTER_RESUME_STEP); it
  // records its choice in the journal as
  // {"resumed":{"seq":S,"skipped":[{"seq":..,"reason":..}]}} (seq 0: none).
  std::vector<proto::ResumeCandidate> resume;
  // Set: the payload runs in this container, started by Podman as root;
  // run_as names the user inside it.
  std::optional<ContainerSpec> container;
};

std::string TaskSpecToJson(const TaskSpec& spec);
StatusOr<TaskSpec> TaskSpecFromJson(const std::string& text);

// Takes the task's identity when it runs as another user (`run_as`): its
// supplementary groups, group and user, in that order. Returns the name of
// the call that failed (errno says why), or nullptr. Async-signal-safe: for
// a child between fork and exec.
const char* TakeTaskIdentity(const TaskSpec& spec);

// How a task ended.
struct TaskResult {
  int32_t exit_code = -1;      // when it exited; -1 when it was killed by a signal
  int32_t signal = 0;          // the signal that killed it, else 0
  bool oom = false;            // the cgroup's OOM killer killed a process
  std::string stop_reason;     // why the agent stopped it ("timeout", "stop"), else empty
  std::string message;         // for a launch failure, what went wrong
  bool launch_failed = false;  // it could not start (an image that cannot be pulled): retrying will not help
  int64_t end_ms = 0;
  bool Succeeded() const { return exit_code == 0 && signal == 0 && !oom && stop_reason.empty(); }
};

std::string TaskResultToJson(const TaskResult& r);
StatusOr<TaskResult> TaskResultFromJson(const std::string& text);

// The shim's own report of the payload's exit: {"exitCode":N} or {"signal":N},
// with "fenced":true when the shim stopped it because the lease ran out. A
// container's exit also says "oom":true when the kernel's OOM killer ended
// it, and a container that could not start says {"launchError":"why"}.
std::string ShimStatusJson(int wait_status, bool fenced);

// A task's journal: one file per task, one JSON object per line, appended
// by the agent and the shim and never rewritten. The first line is
// {"spec": TaskSpec, "meta": ...}; later lines add {"pid":...},
// {"stop":...}, the shim's {"exitCode"|"signal":...} and {"result":...}.
// One file per task keeps a node starting hundreds of short tasks from
// creating (and deleting) thousands of small files. Nothing is fsync'ed:
// the journal must survive the agent, not the machine (a machine crash
// ends its tasks too, and the server then counts them as lost).
//
// CreateJournal fails if the file exists (a task never starts twice).
// AppendJournal writes one line with O_APPEND (one write(2): lines of
// different writers do not interleave). ReadJournal returns the complete
// lines that parse; a torn last line is skipped.
Status CreateJournal(const std::string& path, const std::string& first_line);
Status AppendJournal(const std::string& path, const std::string& line);
std::vector<std::string> ReadJournal(const std::string& path);

}  // namespace muster::agent
