// Executor: starts, watches, stops and cleans up the tasks of one node.
//
// Each task gets a journal <state_dir>/tasks/<key>.jsonl (task_spec.h: its
// spec and meta, then its pid, a stop request, the shim's exit status and
// the result, one line each) and a log <state_dir>/logs/<key>.log and, where the machine allows, a cgroup named by its
// key. Start() launches the task shim (task_shim.h) as a child of the agent;
// the shim starts the payload.
//
// Stop(key, signal, grace, reason) sends `signal` to every process of the
// task but the shim, and after `grace` SIGKILLs the whole group. For a
// container task (TaskSpec::container) those are the container's processes
// (not Podman's, not conmon's); after the grace they are SIGKILLed, and the
// rest of the task 10 s later if its shim has not ended by then. Its
// container is removed after any ending (by the shim, else by the executor
// in the background), and at start those of no running task.
// Shims started by the launcher and adopted ones are watched through pidfds. Poll()
// Shims started by the launcher and adopted ones are watched through pidfds. Poll()
// notices ended tasks, classifies them (exit code, signal, OOM from the
// cgroup's counter, the stop reason: "timeout", "stop", "fenced"), kills
// leftovers, removes the cgroup and writes result.json.
//
// Recover() runs once at agent start: a task whose shim still runs is
// adopted (watched through a pidfd, after checking its start time; the shim
// records its own pid before it starts the payload, and holds a beacon
// (task_beacon.h) from then on, so a task whose agent died right after
// starting it is adopted too); a task whose shim is gone ends with the exit
// status the shim wrote, or as lost; a live shim whose journal is damaged
// or deleted is killed with its task (the server will run the job again);
// cgroups under the parent that belong to no task directory are emptied and
// removed. So an agent restart never starts a task twice and never leaves
// one behind.
//
// Forget(key) retires an ended task's journal once the server has recorded
// its result (the log stays). Retired journals are kept as spares in
// tasks/spare/ and reused by later tasks: a file written and renamed into
// place (atomically, never over an existing journal) instead of a new inode
// per task and a deletion a second later, which on ext4 made every file
// creation scan past the recently deleted inodes.
//
// Thread-safety: none; one agent thread owns the executor.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/cgroup.h"
#include "agent/task_beacon.h"
#include "agent/task_spec.h"
#include "common/clock.h"
#include "common/status.h"

namespace muster::agent {

class Launcher;

struct ExecutorOptions {
  std::string state_dir;    // tasks/ and logs/ live here
  std::string shim_binary;  // the muster binary ("/proc/self/exe" resolved)
  bool use_cgroups = true;  // false: no limits (a machine without cgroup access)
  // The parent of the task groups: this executor's alone (it removes what
  // it finds there and does not run).
  std::string cgroup_parent = "muster";
  // Starts shims without exec (launcher.h); null: posix_spawn of shim_binary.
  Launcher* launcher = nullptr;
  // Processes of all tasks together (the parent group's pids.max); 0: no bound.
  int64_t all_tasks_pids = 0;
  // `podman [global options]` for removing this executor's containers
  // (container_command.h), Podman by its absolute path (root_exec.h);
  // empty: the node runs no containers.
  std::vector<std::string> podman;
  // Every container of this executor's tasks is named with this prefix;
  // at start, those of no running task are removed.
  std::string container_prefix;
};

struct TaskStatus {
  std::string key;
  bool running = false;  // false: ended, `result` holds how
  int64_t start_ms = 0;
  std::optional<TaskResult> result;
  bool stopping = false;  // a stop was requested and it has not ended yet
  std::string meta;       // what the caller stored with it at Start
  // The shim's checkpoint choice, {"seq":S,"skipped":[...]}, once it has
  // verified the task's resume candidates; empty before (or without any).
  std::string resumed;
  // A container task's image: "pulling" while the shim pulls it, "pulled"
  // after (pull_ms: how long that took; -1: it was on the node already).
  std::string image_state;
  int64_t pull_ms = -1;
};

class Executor {
 public:
  Executor(ExecutorOptions options, const Clock& clock);
  ~Executor();

  // Sets up the state directory and cgroups, then recovers tasks left by an
  // earlier agent. Returns a line describing cgroup enforcement.
  StatusOr<std::string> Init();

  // Starts a task. The spec's cgroup_procs are filled in here. A key that
  // already exists (running or ended) is refused: a task never starts twice.
  // `meta` is kept with the task (meta.json) and returned by Tasks(), also
  // after a restart.
  Status Start(TaskSpec spec, const CgroupLimits& limits, const std::string& meta = "{}");
  // Asks a running task to stop; idempotent (the first deadline stands).
  void Stop(const std::string& key, int signal, Duration grace, const std::string& reason);
  // Sends `signal` to some processes of a running task, leaving it running
  // (a job's limit signal, a user's scancel --signal):
  //  - "all": every process but the shim (as Stop; of a container task,
  //    the container's);
  //  - "batch": the shim's child, the payload's main process (a batch
  //    script's shell); of a container task, the container's processes;
  //  - "steps": every srun in it, with kStepSignalValue queued, which each
  //    passes on to its step's tasks on every node (step/step_launch.h).
  // Returns how many processes it sent the signal to.
  int Signal(const std::string& key, int signal, const std::string& to);
  // Advances every task: reaps ended ones, escalates stops past their grace.
  void Poll();
  // Every task the executor knows, running or ended but not forgotten.
  std::vector<TaskStatus> Tasks() const;
  bool Has(const std::string& key) const { return tasks_.count(key) > 0; }
  // Descriptors that become readable when a running task's shim exits
  // (pidfds); tasks without one are noticed by Poll() alone.
  std::vector<int> ExitFds() const;
  // Drops an ended task's record and journal. Running tasks are kept.
  void Forget(const std::string& key);
  // Deletes the logs (and their rotated halves) not written for `keep` of
  // tasks the executor no longer knows; returns how many files went.
  int PruneLogs(Duration keep);

  std::string JournalPath(const std::string& key) const;
  std::string LogPath(const std::string& key) const;
  CgroupDriver* cgroups() { return cgroups_.get(); }

 private:
  struct Task {
    std::string key;
    pid_t pid = 0;          // the shim
    int64_t pid_start = 0;  // its start time in /proc ticks, against pid reuse
    bool child = false;     // our child (waitpid), else watched through its pidfd
    int pidfd = -1;         // readable once the shim has exited
    int64_t start_ms = 0;
    bool stopping = false;
    int64_t kill_at_ms = 0;  // SIGKILL everything at this time
    std::string stop_reason;
    std::string end_message;  // overrides the result's message
    std::optional<TaskResult> result;
    std::string meta = "{}";
    bool awaiting_resume = false;  // it has candidates and the shim's choice is not read yet
    int64_t journal_bytes = -1;    // its size when last read for that choice
    std::string resumed;
    std::string container;          // its container's name, for a container task
    bool container_killed = false;  // past its grace: its container's processes were SIGKILLed
    std::string image_state;        // TaskStatus::image_state
    int64_t pull_ms = -1;
    // The journal may still say something before the payload starts (the
    // checkpoint choice, the image's state).
    bool Watching() const { return awaiting_resume || (!container.empty() && image_state != "pulled"); }
  };
  // Reads what the shim said before starting the payload (the checkpoint
  // choice, the image's state) from the journal.
  void ReadShimNotes(Task& t);
  // Removes the containers of this executor that belong to no running task.
  void RemoveStrayContainers();
  // Removes one ended task's container, in the background.
  void RemoveContainerLater(const std::string& name);
  void Finish(Task& t, std::optional<int> wait_status);
  bool Alive(const Task& t) const;
  void Recover();
  // Kills a live shim (and its task) that no journal accounts for.
  void KillUnaccounted(const TaskBeacon& b, const std::string& why);
  // Creates the journal of task `key` with its first line: from a spare
  // when there is one. kAlreadyExists if the journal exists.
  Status CreateTaskJournal(const std::string& key, const std::string& first_line);
  std::string SparePath(const std::string& name) const;

  ExecutorOptions options_;
  const Clock& clock_;
  std::unique_ptr<CgroupDriver> cgroups_;
  std::map<std::string, Task> tasks_;
  std::vector<std::string> busy_cgroups_;  // emptied, to remove once the kernel lets go
  std::vector<std::string> spares_;        // names in tasks/spare/
  std::vector<pid_t> cleanups_;            // `podman rm` commands running in the background
  std::string beacon_scope_;               // task_beacon.h
  bool recycle_ = true;                    // false: this filesystem cannot rename without replacing
};

// The start time of process `pid` from /proc/<pid>/stat (0 if it is gone
// or a zombie).
int64_t ProcessStartTime(pid_t pid);

}  // namespace muster::agent
