// Task beacons: how an agent finds its running task shims without their
// journals.
//
// The executor learns which tasks run from their journals (task_spec.h). A
// journal that was damaged or deleted while the agent was down would hide
// a task that still runs: the agent would report it gone, the server would
// start the job again, and two copies would run. So each shim also holds a
// beacon for as long as it lives: an abstract unix socket (no file, gone
// with the process) whose name carries the agent's state directory, the
// task key, and the shim's pid and start time. At start the executor lists
// the beacons of its state directory (/proc/net/unix) and so finds every
// live shim, whatever its journal says.
//
// Anyone on the node can bind an abstract name, so a name proves nothing:
// a user's process could bind one naming another user's pid, and an agent
// that believed it would SIGKILL that pid as root. The shim listens on its
// beacon (accepting and closing what connects), and the agent believes a
// beacon only once VerifyTaskBeacon has proven it is its shim's: the
// kernel's record of who listened (SO_PEERCRED) names the pid the beacon
// claims and the agent's own user, and that process is in the task's
// cgroup. Abstract names belong to a network namespace; the shim and its
// agent share one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace muster::agent {

struct TaskBeacon {
  std::string key;
  pid_t pid = 0;
  int64_t start_time = 0;  // the shim's start time in /proc ticks
};

// A stable tag of a directory: a hash of its canonical path (16 hex
// digits); empty if the path cannot be resolved. The beacons of an agent's
// tasks are scoped by its tasks/ directory's tag (the agent also tags its
// cgroup parent with its state directory's).
std::string TaskBeaconScope(const std::string& tasks_dir);

// Binds this process's beacon for task `key` and listens on it; returns the
// socket (non-blocking, close-on-exec, to keep for the process's lifetime;
// AcceptOnBeacon clears what connects) or -1 when it cannot (the error is
// for the caller to report: the task runs without a beacon).
int BindTaskBeacon(const std::string& scope, const std::string& key, pid_t pid, int64_t start_time);

// Accepts and closes the connections waiting on beacon `fd` (the agent's
// checks).
void AcceptOnBeacon(int fd);

// Whether beacon `b` of `scope` was bound by the process it names, running
// as `uid` (the agent's own user): SO_PEERCRED of a connection to it, and,
// with `check_cgroup` (an agent with cgroups), that process in a group named
// `b.key` (the task's own) in /proc/PID/cgroup. `why` says why not. A shim of
// an agent from before beacons were listened on is never proven: it is
// neither adopted nor signalled through its beacon.
bool VerifyTaskBeacon(const std::string& scope, const TaskBeacon& b, uid_t uid, bool check_cgroup,
                      std::string* why = nullptr);

// The beacons bound in `scope` now. `proc_net_unix`: the table to read.
std::vector<TaskBeacon> ListTaskBeacons(const std::string& scope, const std::string& proc_net_unix = "/proc/net/unix");

}  // namespace muster::agent
