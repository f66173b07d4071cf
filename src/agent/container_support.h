// Whether this node can run container jobs, and how their GPUs reach them.
//
// Podman: the agent's `--podman` (an absolute path, or a bare name searched
// in root_exec.h's kRootPath, never in any other PATH; default "podman";
// "none" turns containers off) must answer `podman version`. GPUs: a container
// gets exactly its task's GPUs, by one of
//   - CDI (the Container Device Interface), for GPUs found through NVML: a
//     CDI spec for "nvidia.com/gpu" in /etc/cdi or /var/run/cdi, generated
//     at start with `nvidia-ctk cdi generate` where the NVIDIA Container
//     Toolkit is installed and no spec exists. The spec brings the device
//     files and the driver's libraries; devices are named by UUID when the
//     spec has UUID names, else by index.
//   - device files, for fake GPUs that name one ("device" in the fake GPU
//     file): mapped to /dev/nvidia<minor> in the container.
// A node that can run containers but not give them GPUs says why; the
// server shows it with the node, and the agent refuses a GPU container
// job there with that reason.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/task_spec.h"
#include "common/status.h"
#include "gpu/gpu.h"
#include "proto/agent_protocol.h"

namespace muster::agent {

struct ContainerSupport {
  bool available = false;  // Podman answers
  std::string podman;      // its binary, an absolute path when available
  std::string version;     // "4.3.1"
  bool gpus = false;       // GPUs can be given to containers
  bool cdi = false;        // by CDI (else by device files)
  bool cdi_uuid_names = false;
  std::string note;  // why not (no Podman; no way to give GPUs)
  // "podman 4.3.1; GPUs by CDI" / "podman 4.3.1; GPUs as device files" /
  // "podman 4.3.1; no GPU containers"; "" when unavailable.
  std::string Describe() const;
  // The node features this gives (core/node.h): "containers", and
  // "gpu-containers" when GPUs can be given to them; the scheduler places
  // container jobs by these.
  std::vector<std::string> Features() const;
};

// Looks at the machine (see above), asking Podman with the OCI runtime
// `runtime` (empty: Podman's default), as the agent will run containers.
// `cdi_dirs` is for tests.
ContainerSupport DetectContainers(const std::string& podman, const std::string& containers_conf,
                                  const std::string& runtime, const gpu::GpuInventory& inventory,
                                  const std::vector<std::string>& cdi_dirs = {"/etc/cdi", "/var/run/cdi"});

// The --device values that give a container the GPUs `gpus` (indices into
// `inventory`).
std::vector<std::string> ContainerGpuDevices(const ContainerSupport& support, const gpu::GpuInventory& inventory,
                                             const std::vector<int32_t>& gpus);

// What the agent adds to an assignment to make its container.
struct ContainerSettings {
  std::string name;             // the container's (ContainerName)
  std::string containers_conf;  // the agent's --containers-conf
  std::string runtime;          // its --container-runtime
  std::string ca_file;          // the server's CA (--ca), "" for none
  std::string auth_file;        // where a registry login goes for the pull
};

// The container task `t` runs in on this node: its image and mounts, its
// checkpoint directory (from `env`) and the CA file at the same paths as on
// the node, and its GPUs' devices. The job's registry login, when it has
// one, is written to settings.auth_file (root's alone; the shim removes it
// after the pull); otherwise auth_file stays empty.
StatusOr<ContainerSpec> TaskContainer(const ContainerSupport& support, const gpu::GpuInventory& inventory,
                                      const proto::TaskAssignment& t, const std::map<std::string, std::string>& env,
                                      const ContainerSettings& settings);

}  // namespace muster::agent
