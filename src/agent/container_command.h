// The Podman command lines of a container task, and what their exits mean.
//
// A task whose job names an image runs as
//   podman [--runtime R] [--cgroup-manager cgroupfs] run --name NAME --pull never
//     --pid host --network host --ipc host --cgroup-parent TASK_GROUP
//     --user UID:GID [--group-add G]... --cap-drop all --security-opt no-new-privileges
//     --env-file FILE [--env NAME]... -w DIR -v DIR:DIR [-v HOST:CTR[:ro]]...
//     [--device D]... --log-driver none IMAGE ARGV...
// started by the task shim, which stays its parent. The host's process,
// network and IPC namespaces are kept, as enroot and Apptainer keep them
// for HPC work: NCCL reaches the other nodes and the node's shared memory,
// and the task's processes are host processes, so the checkpoint signal,
// SIGTERM and SIGKILL reach every one of them as they reach a plain task's
// (no PID 1 that ignores signals). What the container adds is its root
// filesystem and its devices: only the task's GPUs (their device files, or
// the CDI devices of their UUIDs), and the mounts the job asks for.
//
// The container's group is created by Podman below the task's
// (--cgroup-parent, with the cgroupfs manager), so the task's memory, CPU
// and pids limits bind it, and the executor finds its processes there.
// Podman prints its own errors to stderr, into the task's log, and exits
// 125; a container killed by signal N exits 128+N.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/task_spec.h"

namespace muster::agent {

// `podman [global options]` for `c`.
std::vector<std::string> PodmanCommand(const ContainerSpec& c);

// The whole `podman run` line for `spec` (spec.container set): the
// environment from `env_file` (ContainerEnvFile) only; Podman's own
// environment (root_exec.h) never carries the job's. `argv` replaces
// spec.argv when not empty (a script given as a file).
std::vector<std::string> PodmanRunArgv(const TaskSpec& spec, const std::string& env_file,
                                       const std::vector<std::string>& argv = {});

// `podman image exists IMAGE` (exit 0: present), `podman pull IMAGE`,
// `podman inspect` of how the container ended ("<exitCode> <oomKilled>
// <startedAt>"), `podman rm -f NAME`.
std::vector<std::string> PodmanImageExistsArgv(const ContainerSpec& c);
std::vector<std::string> PodmanPullArgv(const ContainerSpec& c);
std::vector<std::string> PodmanInspectArgv(const ContainerSpec& c);
std::vector<std::string> PodmanRemoveArgv(const ContainerSpec& c);

// The text of an env file (NAME=VALUE lines) of `env`. InvalidArgument,
// naming the variable, when a value holds a line break or NUL: a file of
// lines cannot carry it, and no other way into a container exists.
StatusOr<std::string> ContainerEnvFile(const std::map<std::string, std::string>& env);

// The text of a containers-auth.json file (Podman's --authfile) holding one
// login: {"auths":{REGISTRY:{"auth":base64(USERNAME:PASSWORD)}}}.
std::string RegistryAuthFile(const std::string& registry, const std::string& username, const std::string& password);

// The name of task `key`'s container on an agent whose containers are
// named with `prefix` ("muster-<scope>-"): prefix + key, the key's
// characters being those Podman allows ([a-zA-Z0-9_.-]).
std::string ContainerName(const std::string& prefix, const std::string& key);

// What a `podman run` exit code says: `exit_code` of the container, or
// `signal` when it was killed (128+N). 125 (Podman failed), 126 (the
// runtime could not start the command) and 127 (no such command) are
// `maybe_launch`: Podman's, when the container never started (podman
// inspect tells), else the job's own exit code.
struct ContainerExit {
  int exit_code = 0;
  int signal = 0;
  bool maybe_launch = false;
};
ContainerExit ClassifyPodmanExit(int code);

}  // namespace muster::agent
