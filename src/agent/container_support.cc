#include "agent/container_support.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/container_command.h"
#include "agent/container_task.h"
#include "agent/root_exec.h"

namespace muster::agent {

namespace fs = std::filesystem;

namespace {

// The text of the CDI specs in `dirs` that name the kind nvidia.com/gpu.
std::string NvidiaCdiSpecs(const std::vector<std::string>& dirs) {
  std::string text;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".yaml" && ext != ".json") continue;
      std::ifstream in(e.path());
      std::ostringstream s;
      s << in.rdbuf();
      if (s.str().find("nvidia.com/gpu") != std::string::npos) text += s.str();
    }
  }
  return text;
}

}  // namespace

std::string ContainerSupport::Describe() const {
  if (!available) return "";
  std::string out = "podman " + version;
  if (!gpus) return out + "; no GPU containers";
  return out + (cdi ? "; GPUs by CDI" : "; GPUs as device files");
}

std::vector<std::string> ContainerSupport::Features() const {
  if (!available) return {};
  if (!gpus) return {"containers"};
  return {"containers", "gpu-containers"};
}

ContainerSupport DetectContainers(const std::string& podman, const std::string& containers_conf,
                                  const std::string& runtime, const gpu::GpuInventory& inventory,
                                  const std::vector<std::string>& cdi_dirs) {
  ContainerSupport s;
  if (podman == "none") {
    s.note = "containers are turned off (--podman none)";
    return s;
  }
  // Run as root: by an absolute path, found once here, never in a job's PATH.
  StatusOr<std::string> found = FindRootProgram(podman.empty() ? "podman" : podman, "--podman");
  if (!found.ok()) {
    s.podman = podman.empty() ? "podman" : podman;
    s.note = "Podman does not run (" + found.status().message() + "); install Debian's podman or give --podman";
    return s;
  }
  s.podman = *found;
  std::vector<std::string> argv = {s.podman};
  if (!runtime.empty()) argv.insert(argv.end(), {"--runtime", runtime});
  argv.insert(argv.end(), {"version", "--format", "{{.Client.Version}}"});
  std::vector<std::string> extra;
  if (!containers_conf.empty()) extra.push_back("CONTAINERS_CONF=" + containers_conf);
  auto [code, out] = RunRootCommand(argv, extra);
  if (code != 0) {
    std::string why = out.substr(0, out.find('\n'));
    s.note = "Podman does not run (" + s.podman + ": " + (why.empty() ? "exit " + std::to_string(code) : why) +
             "); install Debian's podman or give --podman";
    return s;
  }
  s.available = true;
  s.version = out.substr(0, out.find_first_of("\r\n"));
  if (inventory.gpus.empty()) return s;
  if (inventory.source == "fake") {
    for (const gpu::GpuDevice& g : inventory.gpus) {
      if (g.device.empty()) {
        s.note = "fake GPU " + std::to_string(g.index) + " has no \"device\" file to give a container";
        return s;
      }
    }
    s.gpus = true;
    return s;
  }
  std::string specs = NvidiaCdiSpecs(cdi_dirs);
  if (specs.empty()) {
    StatusOr<std::string> ctk_path = FindRootProgram("nvidia-ctk", "the NVIDIA Container Toolkit");
    const int ctk = ctk_path.ok() ? RunRootCommand({*ctk_path, "cdi", "generate", "--device-name-strategy=uuid",
                                                    "--output=/var/run/cdi/nvidia.yaml"})
                                        .first
                                  : -1;
    if (ctk != 0) {
      s.note =
          "no CDI spec for nvidia.com/gpu in /etc/cdi or /var/run/cdi, and the NVIDIA Container Toolkit "
          "(nvidia-ctk) could not make one: install it, or run `nvidia-ctk cdi generate`";
      return s;
    }
    specs = NvidiaCdiSpecs(cdi_dirs);
  }
  s.gpus = true;
  s.cdi = true;
  s.cdi_uuid_names = specs.find("GPU-") != std::string::npos;
  return s;
}

std::vector<std::string> ContainerGpuDevices(const ContainerSupport& support, const gpu::GpuInventory& inventory,
                                             const std::vector<int32_t>& gpus) {
  std::vector<std::string> out;
  for (int32_t idx : gpus) {
    if (idx < 0 || idx >= static_cast<int32_t>(inventory.gpus.size())) continue;
    const gpu::GpuDevice& g = inventory.gpus[idx];
    if (support.cdi) {
      out.push_back("nvidia.com/gpu=" + (support.cdi_uuid_names ? g.uuid : std::to_string(g.index)));
    } else if (!g.device.empty()) {
      out.push_back(g.device + ":/dev/nvidia" + std::to_string(g.minor >= 0 ? g.minor : g.index));
    }
  }
  return out;
}

StatusOr<ContainerSpec> TaskContainer(const ContainerSupport& support, const gpu::GpuInventory& inventory,
                                      const proto::TaskAssignment& t, const std::map<std::string, std::string>& env,
                                      const ContainerSettings& settings) {
  ContainerSpec c;
  c.image = t.image;
  c.name = settings.name;
  c.podman = support.podman;
  c.containers_conf = settings.containers_conf;
  c.runtime = settings.runtime;
  for (const proto::TaskAssignment::Mount& m : t.mounts)
    c.mounts.push_back({m.host_path, m.container_path, m.read_only});
  // Where the job reads and writes what Muster gives it: its checkpoints
  // and the server's CA, at the same paths as on the node.
  const auto ckpt = env.find("MUSTER_CHECKPOINT_DIR");
  if (ckpt != env.end() && !ckpt->second.empty()) c.mounts.push_back({ckpt->second, ckpt->second, false});
  if (!settings.ca_file.empty()) {
    const std::string ca = fs::absolute(settings.ca_file).string();
    c.mounts.push_back({ca, ca, true});
  }
  c.devices = ContainerGpuDevices(support, inventory, t.gpus);
  if (!t.registry_auth.registry.empty()) {
    const std::string text =
        RegistryAuthFile(t.registry_auth.registry, t.registry_auth.username, t.registry_auth.password);
    if (Status st = WritePrivateFile(settings.auth_file, text, 0600, 0, 0); !st.ok()) {
      return Internal("cannot write the registry login for the job's image: " + st.message());
    }
    c.auth_file = settings.auth_file;
  }
  return c;
}

}  // namespace muster::agent
