// Directories the agent keeps as root: its state directory (journals with
// the jobs' environments, logs, the node's token, the lease), and the
// directory of Slurm command links put first on every job's PATH.
//
// A directory that another user could have made, or could replace, is
// theirs: whatever they put in it runs in other users' jobs, or is read by
// root. So before the agent uses one it makes it, or checks the one there:
//   1. Every ancestor of its canonical path is owned by root or by the
//      agent's user, and is writable by no one else unless it is sticky
//      (/tmp, /var/tmp: others may add names there, but not replace ours).
//   2. The directory itself is a directory (a link is refused) owned by the
//      agent's user; missing, it is made. Then its mode is set to `mode`.
// A directory that fails is refused, naming it and why: the agent does not
// start.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/status.h"

namespace muster::agent {

// Makes `dir` (and its missing parents, mode 0755) or checks it as above,
// for the user `uid`, and sets its mode to `mode`. `what` names it in the
// error ("the state directory"). FailedPrecondition when it fails.
Status MakeOwnedDirectory(const std::string& dir, mode_t mode, uid_t uid, const std::string& what);

}  // namespace muster::agent
