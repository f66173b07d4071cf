// Before a task's payload starts, the shim checks the checkpoints it may
// resume from (newest first) and stops at the first sound one.
//
// The shim runs as root; the checkpoints are directories the job wrote.
// When the task runs as another user (`run_as`), the checks run in a child
// process with the task's identity, so they read only what the job itself
// could read: root's rights never reach into the job's files (on top of
// checkpoint/beneath.h, which refuses links and files that are not regular).
//
// Thread-safety: call from a single-threaded process (it may fork).
#pragma once

#include <vector>

#include "agent/task_spec.h"
#include "common/status.h"

namespace muster::agent {

// The verdict on spec.resume[i] at index i, up to and including the first
// sound one (OK; empty when the list is empty). A verdict from the child
// process is taken by position only, at most one per candidate.
std::vector<Status> CheckResumeCandidates(const TaskSpec& spec);

}  // namespace muster::agent
