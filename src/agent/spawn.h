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

// Runs argv (argv[0] an absolute path: nothing is looked up in a PATH) with
// the environment `env` ("NAME=VALUE" strings; empty: the agent's own, for
// the agent's own binary), its stdout and stderr appended to `output`
// (created with mode 600), or to /dev/null when `output` is empty.
// `new_session`: in a session of its own. Other programs run as root take
// root_exec.h's RootEnvironment().
StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const std::string& output = "", bool new_session = false);

}  // namespace muster::agent
