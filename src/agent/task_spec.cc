#include "agent/task_spec.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace muster::agent {

using nlohmann::json;

std::string TaskSpecToJson(const TaskSpec& s) {
  json j = {{"key", s.key},
            {"job", s.job},
            {"argv", s.argv},
            {"script", s.script},
            {"env", s.env},
            {"workingDir", s.working_dir},
            {"runAs", s.run_as},
            {"uid", s.uid},
            {"gid", s.gid},
            {"groups", s.groups},
            {"log", s.log_path},
            {"stdout", s.stdout_path},
            {"stderr", s.stderr_path},
            {"logMaxBytes", s.log_max_bytes},
            {"cgroupProcs", s.cgroup_procs},
            {"leaseFile", s.lease_file},
            {"privateTmp", s.private_tmp},
            {"stopSignal", s.stop_signal},
            {"graceMs", s.grace_ms}};
  j["resume"] = json::parse(proto::ToJson(s.resume));
  if (s.container) {
    const ContainerSpec& c = *s.container;
    json mounts = json::array();
    for (const ContainerSpec::Mount& m : c.mounts) {
      mounts.push_back({{"host", m.host}, {"container", m.container}, {"readOnly", m.read_only}});
    }
    j["container"] = {{"image", c.image},        {"name", c.name},
                      {"podman", c.podman},      {"containersConf", c.containers_conf},
                      {"runtime", c.runtime},    {"cgroupParent", c.cgroup_parent},
                      {"authFile", c.auth_file}, {"mounts", mounts},
                      {"devices", c.devices}};
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<TaskSpec> TaskSpecFromJson(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument("task spec: not a JSON object");
  try {
    TaskSpec s;
    s.key = j.at("key").get<std::string>();
    s.job = j.value("job", int64_t{0});
    s.argv = j.at("argv").get<std::vector<std::string>>();
    s.script = j.value("script", false) && s.argv.size() >= 3;
    s.env = j.at("env").get<std::map<std::string, std::string>>();
    s.working_dir = j.value("workingDir", "");
    s.run_as = j.value("runAs", false);
    s.uid = j.value("uid", 0u);
    s.gid = j.value("gid", 0u);
    s.groups = j.value("groups", std::vector<gid_t>{});
    s.log_path = j.at("log").get<std::string>();
    s.stdout_path = j.value("stdout", "");
    s.stderr_path = j.value("stderr", "");
    s.log_max_bytes = j.value("logMaxBytes", int64_t{64} << 20);
    s.cgroup_procs = j.value("cgroupProcs", std::vector<std::string>{});
    s.lease_file = j.value("leaseFile", "");
    s.private_tmp = j.value("privateTmp", "");
    s.stop_signal = j.value("stopSignal", 15);
    s.grace_ms = j.value("graceMs", int64_t{30'000});
    if (j.contains("resume")) {
      auto resume = proto::ParseResumeCandidates(j["resume"].dump());
      if (!resume.ok()) return InvalidArgument("task spec: " + resume.status().message());
      s.resume = std::move(*resume);
    }
    if (j.contains("container")) {
      const json& cj = j["container"];
      ContainerSpec c;
      c.image = cj.at("image").get<std::string>();
      c.name = cj.at("name").get<std::string>();
      c.podman = cj.value("podman", "");
      c.containers_conf = cj.value("containersConf", "");
      c.runtime = cj.value("runtime", "");
      c.cgroup_parent = cj.value("cgroupParent", "");
      c.auth_file = cj.value("authFile", "");
      for (const json& m : cj.value("mounts", json::array())) {
        c.mounts.push_back(
            {m.at("host").get<std::string>(), m.at("container").get<std::string>(), m.value("readOnly", false)});
      }
      c.devices = cj.value("devices", std::vector<std::string>{});
      s.container = std::move(c);
    }
    if (s.argv.empty()) return InvalidArgument("task spec: argv is empty");
    return s;
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("task spec: ") + e.what());
  }
}

std::string TaskResultToJson(const TaskResult& r) {
  json j = {{"exitCode", r.exit_code},     {"signal", r.signal},   {"oom", r.oom},
            {"stopReason", r.stop_reason}, {"message", r.message}, {"endMs", r.end_ms}};
  if (r.launch_failed) j["launchFailed"] = true;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<TaskResult> TaskResultFromJson(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument("task result: not a JSON object");
  TaskResult r;
  r.exit_code = j.value("exitCode", -1);
  r.signal = j.value("signal", 0);
  r.oom = j.value("oom", false);
  r.stop_reason = j.value("stopReason", "");
  r.message = j.value("message", "");
  r.end_ms = j.value("endMs", int64_t{0});
  r.launch_failed = j.value("launchFailed", false);
  return r;
}

std::string ShimStatusJson(int wait_status, bool fenced) {
  json s =
      WIFSIGNALED(wait_status) ? json{{"signal", WTERMSIG(wait_status)}} : json{{"exitCode", WEXITSTATUS(wait_status)}};
  if (fenced) s["fenced"] = true;
  return s.dump();
}

namespace {

Status WriteLine(const std::string& path, const std::string& line, int flags) {
  const int fd = ::open(path.c_str(), flags | O_WRONLY | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return Status(StatusCode::kAlreadyExists, path + " exists");
    return Internal("cannot open " + path + ": " + std::strerror(errno));
  }
  std::string text = line;
  text.push_back('\n');
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return Internal("cannot write " + path + ": " + std::strerror(err));
  return Status::Ok();
}

}  // namespace

Status CreateJournal(const std::string& path, const std::string& first_line) {
  return WriteLine(path, first_line, O_CREAT | O_EXCL);
}

Status AppendJournal(const std::string& path, const std::string& line) { return WriteLine(path, line, 0); }

std::vector<std::string> ReadJournal(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline: a line still being written, or torn
    if (json::accept(line)) lines.push_back(line);
  }
  return lines;
}

const char* TakeTaskIdentity(const TaskSpec& spec) {
  if (!spec.run_as) return nullptr;
  if (::setgroups(spec.groups.size(), spec.groups.data()) != 0) return "setgroups";
  if (::setgid(spec.gid) != 0) return "setgid";
  if (::setuid(spec.uid) != 0) return "setuid";
  return nullptr;
}

}  // namespace muster::agent
