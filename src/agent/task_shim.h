// The task shim: `muster task-shim JOURNAL`, the parent process of one task.
//
// The agent starts the shim for every task instead of the task itself
// (through the launcher, or by exec). The shim reads the task's spec from
// the first line of its journal (task_spec.h), becomes the leader of a new
// session, joins the task's cgroups, appends its own pid and start time to
// the journal, and starts the payload with the task's
// identity, working directory and environment, its stdout and stderr going
// to one pipe. It copies that output into the task's log, rotating it at the
// size limit, and when the payload ends appends {"exitCode":N} or
// {"signal":N} to the journal.
//
// Because the shim, not the agent, waits for the payload, a task keeps
// running and its exit status is kept when the agent dies or restarts: a new
// agent adopts it by reading the files. The shim blocks the signals the
// agent sends to the task (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2,
// SIGQUIT) so it outlives a graceful stop; the payload gets them with their
// default actions restored, including one sent before it had started.
//
// With resume candidates in its spec, the shim first verifies them (see
// TaskSpec::resume) and passes the first intact one to the payload.
//
// Once a second the shim reads the agent's lease file (TaskSpec::lease_file).
// When the deadline there has passed, or the file is missing or holds no
// deadline at two checks in a row, it fences the task: the stop signal, then SIGKILL after the
// grace. For its whole life it holds the task's beacon (task_beacon.h).
#pragma once

#include <string>

namespace muster::agent {

// Runs the shim; returns the shim's exit code (0 once the exit status is
// written, 1 when the spec cannot be read). `placed_in`: the cgroup
// directory the launcher created this process in; it joins the others.
int RunTaskShim(const std::string& journal, const std::string& placed_in = "");

}  // namespace muster::agent
