// Cgroups: one control group per task, with the job's memory, CPU and pids
// limits, on cgroup v2 (one unified hierarchy) and on cgroup v1 (one
// hierarchy per controller, as on this project's CI machine).
//
// Devices: a task may not open the device files of GPUs it was not given
// (v1: the devices controller; v2: a BPF device program; device_filter.h).
//
// Every task group lives under one parent group per agent (the agent uses
// "muster/<node>.<tag>", the tag a hash of its state directory's path) so an
// agent can list what it left behind after a restart without touching
// another agent's tasks on the same machine, whatever its node name.
// Names are plain ("j12.a1.r0"); the driver maps them to directories:
//   v2: <mount>/muster/<node>.<tag>/j12.a1.r0
//   v1: <mount>/memory/muster/<node>.<tag>/j12.a1.r0, <mount>/cpu/..., <mount>/pids/..., <mount>/devices/...
//
// A controller the machine does not offer (v2 without "memory" enabled for
// the parent, a v1 hierarchy not mounted) is left out: Create() says which
// limits are enforced, and the agent reports it. Without write access to the
// hierarchy (no root) Detect() fails and the agent runs tasks without
// cgroups, saying so.
//
// Out of memory is read from the kernel's OOM-kill counter of the group:
// v2 `memory.events` "oom_kill", v1 `memory.oom_control` "oom_kill".
//
// A container task (agent/container_command.h) has groups of its own below
// the task's: Podman puts the container in <task>/libpod-<id> and conmon in
// <task>/conmon, in every hierarchy the machine mounts (v1: blkio, cpuset,
// freezer, ... too). The task's limits bind them all; Processes, KillAll
// and Remove work on the whole subtree, in every hierarchy; SignalContainer
// reaches the container's processes alone. On v2 a group with processes
// cannot hand controllers to children, so the shim of a container task
// lives in <task>/supervisor.
//
// Thread-safety: none; the agent's executor owns the driver.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/device_filter.h"
#include "common/status.h"

namespace muster::agent {

struct CgroupLimits {
  int64_t memory_bytes = 0;  // 0 = no limit
  int64_t cpu_milli = 0;     // 0 = no limit; 1500 = 1.5 CPUs of quota
  int64_t pids = 0;          // 0 = no limit
  // Character devices the task may not open (the node's other GPUs):
  // v1 devices.deny, v2 a BPF device program (agent/device_filter.h).
  std::vector<DeviceId> denied_devices;
};

// Sends `sig` to the processes of the container groups (libpod-*, not
// conmon's) below the group directory `dir`, or with `containers_only` false
// to every process in `dir` and below but the caller. For the shim, which
// knows its groups' directories but has no driver.
void SignalGroupTree(const std::string& dir, int sig, bool containers_only);

// Where an agent makes its task groups (--cgroup-root), as a path below
// each hierarchy's mount point, without leading or trailing slashes:
//   "muster" (the default), or any such path: that group, made if missing.
//   "self": below the agent's own group, which a systemd unit with
//   Delegate=yes hands it: "<own>/jobs" (not "tasks": v1 has a file of
//   that name in every group). On v2 the agent first moves itself into
//   "<own>/agent", because a v2 group holding processes cannot hand
//   controllers to its children; on v1 (no such rule) it stays. The version
//   is chosen as CgroupDriver::Detect chooses it; on v1 the memory
//   hierarchy's own path is the base for every hierarchy.
// Errors: "self" when the agent's group is the root (not started by systemd
// with delegation) or it cannot move; a path with ".." or empty parts.
// `proc_cgroup` and `mounts_file` are for tests.
StatusOr<std::string> ResolveCgroupRoot(const std::string& root, const std::string& proc_cgroup = "/proc/self/cgroup",
                                        const std::string& mounts_file = "/proc/self/mounts");

class CgroupDriver {
 public:
  // Reads /proc/self/mounts and picks v2 when the unified hierarchy has the
  // memory controller, else v1 when its memory hierarchy is mounted, else v2
  // without limits. `mounts_file` is for tests.
  static StatusOr<std::unique_ptr<CgroupDriver>> Detect(const std::string& parent = "muster",
                                                        const std::string& mounts_file = "/proc/self/mounts");

  ~CgroupDriver();
  CgroupDriver(const CgroupDriver&) = delete;
  CgroupDriver& operator=(const CgroupDriver&) = delete;

  int version() const { return version_; }
  // "v1 (memory, cpu, pids, devices)" or "v2 (memory, cpu, pids, devices)": what is enforced;
  // on v1 without favordynmods, a word on what that costs each start.
  std::string Describe() const;

  // Creates the group with its limits (an existing group of that name is
  // reused, its processes untouched) and returns the cgroup.procs files a
  // process writes its pid to, to join it. On v1 the group exists in the
  // memory hierarchy always, in cpu and pids only when it has a limit there.
  // `nested`: the task will have groups below its own (a container task);
  // on v2 the returned file is then <task>/supervisor's.
  StatusOr<std::vector<std::string>> Create(const std::string& name, const CgroupLimits& limits, bool nested = false);
  // The processes in the group and the groups below it; empty when it does
  // not exist.
  std::vector<pid_t> Processes(const std::string& name) const;
  // The cgroup path Podman takes as --cgroup-parent ("/muster/n1.ab12/j1.a1.r0").
  std::string PathOf(const std::string& name) const { return "/" + parent_ + "/" + name; }
  // Sends `sig` to the processes of the containers below the group (its
  // libpod-* groups; not conmon's, not the shim's or Podman's own).
  void SignalContainer(const std::string& name, int sig) const;
  // How many processes the kernel's OOM killer killed in the group.
  int64_t OomKills(const std::string& name) const;
  // Sends `sig` to every process in the group except `spare` (0: none).
  void Signal(const std::string& name, int sig, pid_t spare = 0) const;
  // SIGKILLs everything in the group until it is empty (a few seconds at
  // most); true when it is empty.
  bool KillAll(const std::string& name) const;
  // Removes the group and the groups below it, in every hierarchy (they
  // must be empty). A missing group is fine. An
  // emptied group can stay busy for a moment while the kernel reaps its
  // processes: then kUnavailable, and the caller tries again later.
  Status Remove(const std::string& name);
  // The task groups that exist under the parent.
  std::vector<std::string> List() const;
  // Bounds the processes of every task together (the parent group's
  // pids.max), so that tasks leave the node room for its own.
  Status LimitAllPids(int64_t pids);

 private:
  CgroupDriver() = default;
  // The v2 driver over the unified hierarchy at `unified_mount`.
  static StatusOr<std::unique_ptr<CgroupDriver>> ForV2(const std::string& unified_mount, const std::string& parent);
  // The directories of group `name`, one per hierarchy ("" = the parent).
  std::vector<std::string> Dirs(const std::string& name) const;
  std::string MemoryDir(const std::string& name) const;
  std::string ProcsDir(const std::string& name) const;

  int version_ = 2;
  std::string parent_;
  std::string unified_;  // v2 mount
  // v1 hierarchies in use; for v2 the single unified one.
  struct Hierarchy {
    std::string controller;  // "memory", "cpu", "pids", "devices", or "" (v2)
    std::string mount;
  };
  std::vector<Hierarchy> hierarchies_;
  // v1: the other hierarchies (blkio, cpuset, freezer, systemd, the unified
  // one), where only Podman makes groups, for Remove to clear.
  std::vector<std::string> other_mounts_;
  bool has_memory_ = false, has_cpu_ = false, has_pids_ = false, has_devices_ = false;
  bool favordynmods_ = false;  // v1: a hierarchy is mounted with it (moves need no grace period)
};

}  // namespace muster::agent
