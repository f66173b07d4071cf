// Root execs: how the agent, its task shims and its helpers start programs
// as root (Podman, nvidia-ctk), so that nothing a job's spec says reaches
// them.
//
// The boundary, by construction:
//   - The program is named by an absolute path. The agent resolves each one
//     once, at start, from its own configuration (`--podman`) or, for a bare
//     name, from the fixed system search path kRootPath; a job's PATH is
//     never searched for it. Running a relative name is refused.
//   - Its environment is built from an allowlist over the agent's own
//     environment (the operator's: systemd's unit, or the shell that started
//     it), with PATH always kRootPath. A job's variables never enter it: a
//     container's environment goes to Podman in an --env-file, read by
//     Podman as data, and a process job's reaches its payload only after the
//     shim's child has taken the job's user.
// docs/security.md lists every root exec and what of a job reaches each.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace muster::agent {

// The search path of programs run as root, and their PATH.
inline constexpr char kRootPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The names a root child may take from the agent's environment (its value
// there, when set): HOME, LANG, LC_ALL, TZ, TMPDIR, XDG_RUNTIME_DIR,
// REGISTRY_AUTH_FILE, CONTAINERS_CONF, CONTAINERS_STORAGE_CONF,
// CONTAINERS_REGISTRIES_CONF.
bool RootEnvironmentAllows(const std::string& name);

// "NAME=VALUE" strings for a root child: PATH=kRootPath, the allowed
// variables of `from` (a NULL-terminated environment; null: this process's
// own), then `extra` ("NAME=VALUE", replacing a variable of the same name).
std::vector<std::string> RootEnvironment(const std::vector<std::string>& extra = {}, char** from = nullptr);

// The absolute path of the program `name` (for the message: `what`, e.g.
// "--podman"). An absolute path stands as given; a bare name is searched in
// kRootPath; a relative path with a '/' is refused. NotFound when no
// executable regular file is there.
StatusOr<std::string> FindRootProgram(const std::string& name, const std::string& what);

// Runs `argv` (argv[0] an absolute path, else -1 with errno EINVAL) with
// exactly the environment `env`, stdin from /dev/null, its stdout and
// stderr to `output` as they come. Returns its wait status, or -1 when it
// could not be started. `abort`, asked once a second (may be empty),
// SIGKILLs it when it says so. Safe from a threaded process (fork then
// exec only).
int RunRootProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::function<void(const std::string&)>& output, const std::function<bool()>& abort = {});

// RunRootProgram with RootEnvironment(extra): {exit code (-1 unless it
// exited), everything it printed}.
std::pair<int, std::string> RunRootCommand(const std::vector<std::string>& argv,
                                           const std::vector<std::string>& extra = {});

}  // namespace muster::agent
