// RunStep: srun's side of a step (step_wire.h). Starts the step's tasks on
// each of its nodes, the first node's as srun's own children (task_group.h)
// and the others' through their step hosts, relays their output to srun's
// stdout and stderr, passes srun's signals on, and waits for every task.
//
//  - Output: as it comes, or with `label` line by line, each line prefixed
//    with its task's id ("3: ...", srun -l).
//  - Signals srun gets (kStepSignals: HUP, INT, QUIT, TERM, USR1, USR2, ALRM,
//    CONT) go to every task.
//    Tasks on srun's own node share its process group, so a signal sent to
//    the whole group (the node's agent stopping the job, a terminal's ^C)
//    has reached them already: those (sent by an ancestor above srun's
//    parent, or by the kernel) go only to the other nodes. One the agent
//    queued with kStepSignalValue (a user's or a limit signal for the
//    steps) was sent to srun alone: it goes to every task.
//  - A step host that cannot be reached within `connect_timeout` (it may
//    still be starting), refuses the step or is lost mid-step fails the
//    step: its tasks count as exit 1, every other task is killed.
//  - `kill_on_bad_exit`: the first task to exit non-zero kills the rest.
//    `wait_after_first`: once the first task ends, the rest get this long.
//  - Each task that does not exit 0 is reported on stderr as Slurm does
//    ("srun: error: n2: task 3: Exited with exit code 1").
// Returns srun's exit status: the highest task status (exit code, or 128 +
// signal), as Slurm's srun.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/time.h"
#include "step/step_wire.h"

namespace muster::step {

struct StepNode {
  std::string name;
  std::string endpoint;  // empty: srun's own node
  LaunchRequest launch;
};

struct StepRun {
  int64_t job = 0;
  std::string key_hex;
  std::vector<StepNode> nodes;
  bool label = false;
  bool kill_on_bad_exit = false;
  Duration wait_after_first = Duration::Zero();  // zero: no limit
  Duration connect_timeout = Duration::Minutes(2);
};

int RunStep(const StepRun& run);

}  // namespace muster::step
