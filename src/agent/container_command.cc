#include "agent/container_command.h"

#include <nlohmann/json.hpp>

namespace muster::agent {

std::vector<std::string> PodmanCommand(const ContainerSpec& c) {
  std::vector<std::string> out = {c.podman};
  if (!c.runtime.empty()) out.insert(out.end(), {"--runtime", c.runtime});
  // A path for --cgroup-parent is the cgroupfs manager's vocabulary (the
  // systemd one takes slice names).
  if (!c.cgroup_parent.empty()) out.insert(out.end(), {"--cgroup-manager", "cgroupfs"});
  return out;
}

std::vector<std::string> PodmanRunArgv(const TaskSpec& spec, const std::string& env_file,
                                       const std::vector<std::string>& argv) {
  const ContainerSpec& c = *spec.container;
  std::vector<std::string> out = PodmanCommand(c);
  out.insert(out.end(), {"run", "--name", c.name, "--pull", "never", "--pid", "host", "--network", "host", "--ipc",
                         "host", "--cap-drop", "all", "--security-opt", "no-new-privileges", "--log-driver", "none"});
  if (!c.cgroup_parent.empty()) out.insert(out.end(), {"--cgroup-parent", c.cgroup_parent});
  if (spec.run_as) {
    out.insert(out.end(), {"--user", std::to_string(spec.uid) + ":" + std::to_string(spec.gid)});
    for (gid_t g : spec.groups) {
      if (g != spec.gid) out.insert(out.end(), {"--group-add", std::to_string(g)});
    }
  }
  out.insert(out.end(), {"--env-file", env_file});
  if (!spec.working_dir.empty()) {
    out.insert(out.end(), {"--workdir", spec.working_dir, "--volume", spec.working_dir + ":" + spec.working_dir});
  }
  for (const ContainerSpec::Mount& m : c.mounts) {
    out.insert(out.end(), {"--volume", m.host + ":" + m.container + (m.read_only ? ":ro" : "")});
  }
  for (const std::string& d : c.devices) out.insert(out.end(), {"--device", d});
  out.push_back(c.image);
  const std::vector<std::string>& command = argv.empty() ? spec.argv : argv;
  out.insert(out.end(), command.begin(), command.end());
  return out;
}

std::vector<std::string> PodmanImageExistsArgv(const ContainerSpec& c) {
  std::vector<std::string> out = PodmanCommand(c);
  out.insert(out.end(), {"image", "exists", c.image});
  return out;
}

std::vector<std::string> PodmanPullArgv(const ContainerSpec& c) {
  std::vector<std::string> out = PodmanCommand(c);
  out.push_back("pull");
  if (!c.auth_file.empty()) out.insert(out.end(), {"--authfile", c.auth_file});
  out.push_back(c.image);
  return out;
}

std::vector<std::string> PodmanInspectArgv(const ContainerSpec& c) {
  std::vector<std::string> out = PodmanCommand(c);
  out.insert(out.end(), {"inspect", "--type", "container", "--format",
                         "{{.State.ExitCode}} {{.State.OOMKilled}} {{.State.StartedAt.Unix}}", c.name});
  return out;
}

std::vector<std::string> PodmanRemoveArgv(const ContainerSpec& c) {
  std::vector<std::string> out = PodmanCommand(c);
  out.insert(out.end(), {"rm", "--force", "--ignore", "--time", "0", c.name});
  return out;
}

StatusOr<std::string> ContainerEnvFile(const std::map<std::string, std::string>& env) {
  std::string text;
  for (const auto& [k, v] : env) {
    if (v.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
      return InvalidArgument(
          "the job's variable " + k +
              " holds a line break or NUL, which an --env-file cannot carry (the server refuses such "
              "values at submit)",
          "env." + k);
    }
    text += k + "=" + v + "\n";
  }
  return text;
}

std::string RegistryAuthFile(const std::string& registry, const std::string& username, const std::string& password) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string in = username + ":" + password;
  std::string b64;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<uint8_t>(in[i + 2]);
    b64 += kAlphabet[(v >> 18) & 63];
    b64 += kAlphabet[(v >> 12) & 63];
    b64 += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    b64 += i + 2 < in.size() ? kAlphabet[v & 63] : '=';
  }
  return nlohmann::json({{"auths", {{registry, {{"auth", b64}}}}}}).dump();
}

std::string ContainerName(const std::string& prefix, const std::string& key) {
  std::string out = prefix;
  for (char ch : key) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '.' || ch == '-';
    out.push_back(ok ? ch : '_');
  }
  return out;
}

ContainerExit ClassifyPodmanExit(int code) {
  ContainerExit e;
  if (code >= 125 && code <= 127) {
    e.maybe_launch = true;
    e.exit_code = code;
  } else if (code > 128 && code <= 128 + 64) {
    e.signal = code - 128;
    e.exit_code = -1;
  } else {
    e.exit_code = code;
  }
  return e;
}

}  // namespace muster::agent
