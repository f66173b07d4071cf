// The task shim's part of a container task (task_shim.h): getting the image,
// the environment Podman itself runs with, and how the container ended.
//
// The image: `podman image exists` (the journal gets {"pulled":IMAGE,
// "cached":true}), else `podman pull` with its output in the task's log.
// The journal gets {"pulling":IMAGE} before the pull and
// {"pulled":IMAGE,"ms":N} after it (the agent reports both; the server puts
// them in the job's events), or the shim's end {"exitCode":125,
// "launchError":"cannot pull image ...: why"}: an image that cannot be
// pulled is the job's error, which retrying will not mend.
//
// How it ended: `podman inspect` says whether it started at all, and
// whether the kernel's OOM killer ended it (as does the shim's own watch of
// the task's group, `oom_seen`: cgroup v1 counts the kill in the
// container's group, gone with it); then `podman rm` removes it, and the
// shim's end says {"removed":true}.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "agent/task_spec.h"

namespace muster::agent {

using LogWriter = std::function<void(const std::string&)>;

// The environment Podman runs with: a root exec's (root_exec.h), with
// CONTAINERS_CONF from the spec when it names one. Nothing of the job's.
std::vector<std::string> PodmanEnvironment(const ContainerSpec& c);

// Writes `text` to `path` as a new file (a leftover is replaced, a link is
// never followed) owned by uid:gid with `mode`.
Status WritePrivateFile(const std::string& path, const std::string& text, mode_t mode, uid_t uid, gid_t gid);

// Makes the image present on the node (see above). Returns true when it is;
// false once the shim's end is in the journal.
bool EnsureImage(const ContainerSpec& c, const std::vector<std::string>& env, const std::string& journal,
                 const LogWriter& log, const std::function<bool()>& abort);

// The shim's end for a container whose `podman run` ended with
// `wait_status`: inspects and removes the container, and returns the JSON
// line for the journal (ShimStatusJson's, with "oom", "removed" and, when
// Podman could not start it, "launchError" with the last line of
// `output_tail`, the end of what it printed).
std::string FinishContainer(const ContainerSpec& c, const std::vector<std::string>& env, int wait_status, bool fenced,
                            bool oom_seen, const std::string& output_tail, const LogWriter& log);

}  // namespace muster::agent
