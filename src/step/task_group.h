// TaskGroup: the tasks of one step on one node, as child processes of the
// caller (srun on the first node, the step host on the others).
//
// Each task runs the step's argv (argv[0] looked up in the task's own
// PATH, as a shell would) in the step's directory, with its environment,
// stdin from /dev/null, and its stdout and stderr on pipes the owner reads
// through Service(). Tasks stay in the caller's process group and cgroup:
// whatever stops or fences the node's replica (its agent signals the
// group, kills the cgroup) reaches them too.
//
// A task that cannot be started (no such command, not executable, no such
// directory) says why on its stderr and exits 2, as Slurm's would.
//
// Thread-safety: none; one thread drives a group.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

struct pollfd;

namespace muster::step {

class TaskGroup {
 public:
  struct Task {
    int32_t id = 0;
    std::map<std::string, std::string> env;
  };
  // Kills (SIGKILL) and reaps the tasks still running.
  ~TaskGroup();
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  // `label`: how its failures to start name the tasks' node ("n3").
  static StatusOr<std::unique_ptr<TaskGroup>> Start(const std::vector<std::string>& argv, const std::string& cwd,
                                                    const std::vector<Task>& tasks, const std::string& label);

  // The pipes still open, to poll for input.
  void AddPollFds(std::vector<pollfd>& fds) const;
  // Reads what the pipes hold and reaps tasks that ended: `output(task,
  // stream (1 or 2), bytes)`, and `exited(task, status)` once per task
  // (status: the exit code, or 128 + the signal). A task's remaining output
  // is read before its exit is reported.
  using OutputFn = std::function<void(int32_t task, int stream, std::string_view bytes)>;
  using ExitFn = std::function<void(int32_t task, int32_t status)>;
  void Service(const OutputFn& output, const ExitFn& exited);
  // Sends `signal` to every task still running.
  void Signal(int signal);
  // Every task's exit was reported.
  bool Done() const;
  size_t size() const { return tasks_.size(); }

 private:
  struct Running {
    int32_t id = 0;
    pid_t pid = -1;
    int out = -1, err = -1;  // -1 once at end of file
    bool reaped = false, reported = false;
    int32_t status = 0;
  };
  TaskGroup() = default;
  std::vector<Running> tasks_;
};

}  // namespace muster::step
