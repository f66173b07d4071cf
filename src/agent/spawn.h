// Spawn: starts a helper command from the threaded agent (posix_spawn,
// vfork semantics: no copy of the agent's page tables), with default
// signal handling, nothing blocked, stdin from /dev/null and its output
// to a file. The caller reaps it (waitpid).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace muster::agent {

// Runs argv (argv[0] looked up in PATH) with the agent's environment; its
// stdout and stderr appended to `output` (created with mode 600), or to
// /dev/null when `output` is empty. `new_session`: in a session of its own.
StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& output = "", bool new_session = false);

}  // namespace muster::agent
