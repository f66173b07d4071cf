// Launcher: starts task shims cheaply, from a small single-threaded process.
//
// Starting a shim by exec'ing the muster binary costs several milliseconds
// of dynamic linking per task; on a node starting hundreds of short tasks
// that is most of the work. The launcher is forked from the agent once, at
// start, before the agent has threads; for each task it forks a child that
// runs the shim (task_shim.h) directly, with no exec. Forking from a
// single-threaded process is safe; forking from the threaded agent is not.
//
// The child is held at a gate until the launcher has opened a pidfd for it;
// the launcher sends the pid and the pidfd to the agent (SCM_RIGHTS), then
// opens the gate. So the agent's pidfd always refers to that very shim, and
// the agent learns of its exit by polling the pidfd, with no race against pid
// reuse.
//
// Given the task's cgroup directory (cgroup v2), the launcher creates the
// shim inside that group (clone3 with CLONE_INTO_CGROUP) instead of the shim
// moving itself there: moving a process takes the kernel's cgroup
// threadgroup lock for writing, which waits for an RCU grace period (15 to
// 25 ms measured) unless the hierarchy is mounted with favordynmods. Where
// clone3 cannot (an older kernel, cgroup v1), the shim is forked and joins
// its groups itself, as before. Shims are the launcher's children, reaped by it; they outlive the
// launcher and the agent (a new agent adopts them). The launcher exits when
// the agent does (PR_SET_PDEATHSIG) or closes its socket.
//
// Thread-safety: Launch() from one thread at a time.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace muster::agent {

// pidfd_open(2): a descriptor that becomes readable when `pid` exits; -1
// with errno on failure.
int OpenPidfd(pid_t pid);

class Launcher {
 public:
  // Forks the launcher. Call before the process starts any thread.
  static StatusOr<std::unique_ptr<Launcher>> Start();
  ~Launcher();

  struct Launched {
    pid_t pid = 0;
    int pidfd = -1;          // owned by the caller
    bool in_cgroup = false;  // created in `cgroup_dir`
  };
  // Starts the shim for `task_dir` with stdout and stderr appended to
  // `log_path`, in a new session; inside the cgroup v2 directory
  // `cgroup_dir` when it is not empty and the kernel allows. kUnavailable:
  // the launcher process is gone (the executor then spawns shims itself).
  StatusOr<Launched> Launch(const std::string& task_dir, const std::string& log_path,
                            const std::string& cgroup_dir = "");
  // The launcher process.
  pid_t pid() const { return pid_; }

 private:
  Launcher() = default;
  int socket_ = -1;
  pid_t pid_ = 0;
};

}  // namespace muster::agent
