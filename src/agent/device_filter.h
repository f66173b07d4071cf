// Which device files a task may open, enforced by the kernel: a task given
// GPUs 2 and 3 cannot open /dev/nvidia0 even with CUDA_VISIBLE_DEVICES
// unset, or with a device node it made itself (the check is on the
// device's numbers, not its path).
//
// The rule is a deny list of character devices (major, minor): the other
// GPUs of the node (NVIDIA's major 195, each GPU's minor number). Every
// other device keeps the access it had (/dev/null, nvidiactl, nvidia-uvm).
//   cgroup v1: "c 195:N rwm" lines in the task group's devices.deny.
//   cgroup v2: a BPF_PROG_TYPE_CGROUP_DEVICE program attached to the task's
//   group (cgroup v2 has no devices controller), built here from a few
//   instructions: no compiler or libbpf needed on the node.
//
// Thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace muster::agent {

// NVIDIA's character device major number (/dev/nvidia0 is 195:0).
inline constexpr int32_t kNvidiaMajor = 195;

struct DeviceId {
  int32_t major = 0;
  int32_t minor = 0;
  bool operator==(const DeviceId&) const = default;
};

// The v1 devices.deny lines for `denied` ("c 195:3 rwm").
std::vector<std::string> DevicesDenyLines(const std::vector<DeviceId>& denied);

// Loads a device program denying `denied` (character devices) and
// attaching it to the cgroup v2 directory `cgroup_dir` (with
// BPF_F_ALLOW_MULTI, beside programs of the groups above). The program
// lives as long as the group.
Status AttachDeviceFilter(const std::string& cgroup_dir, const std::vector<DeviceId>& denied);

}  // namespace muster::agent
