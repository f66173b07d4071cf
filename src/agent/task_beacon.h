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
// A beacon is bound, never listened on: nothing can connect to it. Abstract
// names belong to a network namespace; the shim and its agent share one.
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

// Binds this process's beacon for task `key`; returns the socket (close-on-
// exec, to keep for the process's lifetime) or -1 when it cannot (the
// error is for the caller to report: the task runs without a beacon).
int BindTaskBeacon(const std::string& scope, const std::string& key, pid_t pid, int64_t start_time);

// The beacons bound in `scope` now. `proc_net_unix`: the table to read.
std::vector<TaskBeacon> ListTaskBeacons(const std::string& scope,
                                        const std::string& proc_net_unix = "/proc/net/unix");

}  // namespace muster::agent
