#include "agent/container_task.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/container_command.h"
#include "agent/root_exec.h"
#include "common/fd_io.h"

namespace muster::agent {

namespace {

std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \r\n\t");
  if (end == std::string::npos) return {};
  const size_t start = text.rfind('\n', end);
  std::string line =
      text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
  if (line.rfind("Error: ", 0) == 0) line.erase(0, 7);
  return line.substr(0, 1024);
}

}  // namespace

Status WritePrivateFile(const std::string& path, const std::string& text, mode_t mode, uid_t uid, gid_t gid) {
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot create " + path + ": " + std::strerror(errno));
  const bool ok = WriteFull(fd, text.data(), text.size()) && ::fchown(fd, uid, gid) == 0 && ::fchmod(fd, mode) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return Internal("cannot write " + path + ": " + std::strerror(err));
  return Status::Ok();
}

std::vector<std::string> PodmanEnvironment(const ContainerSpec& c) {
  if (c.containers_conf.empty()) return RootEnvironment();
  return RootEnvironment({"CONTAINERS_CONF=" + c.containers_conf});
}

bool EnsureImage(const ContainerSpec& c, const std::vector<std::string>& env, const std::string& journal,
                 const LogWriter& log, const std::function<bool()>& abort) {
  const int exists = RunRootProgram(
      PodmanImageExistsArgv(c), env, [](const std::string&) {}, abort);
  if (exists >= 0 && WIFEXITED(exists) && WEXITSTATUS(exists) == 0) {
    (void)AppendJournal(journal, nlohmann::json({{"pulled", c.image}, {"cached", true}}).dump());
    return true;
  }
  (void)AppendJournal(journal, nlohmann::json({{"pulling", c.image}}).dump());
  log("muster: pulling image " + c.image + "\n");
  const auto start = std::chrono::steady_clock::now();
  std::string output;
  const int pulled = RunRootProgram(
      PodmanPullArgv(c), env,
      [&](const std::string& text) {
        log(text);
        output += text;
        if (output.size() > 8192) output.erase(0, output.size() - 4096);
      },
      abort);
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (pulled >= 0 && WIFEXITED(pulled) && WEXITSTATUS(pulled) == 0) {
    (void)AppendJournal(journal, nlohmann::json({{"pulled", c.image}, {"ms", ms}}).dump());
    std::ostringstream line;
    line << "muster: pulled image " << c.image << " in " << ms / 1000.0 << " s\n";
    log(line.str());
    return true;
  }
  if (pulled >= 0 && WIFSIGNALED(pulled)) {
    // Stopped (or fenced) while pulling: the stop's end, not the image's.
    (void)AppendJournal(journal, ShimStatusJson(pulled, false));
    return false;
  }
  std::string why = LastLine(output);
  if (why.empty())
    why = pulled < 0 ? std::strerror(errno) : "podman pull exited " + std::to_string(WEXITSTATUS(pulled));
  (void)AppendJournal(
      journal,
      nlohmann::json({{"exitCode", 125}, {"launchError", "cannot pull image " + c.image + ": " + why}}).dump());
  return false;
}

std::string FinishContainer(const ContainerSpec& c, const std::vector<std::string>& env, int wait_status, bool fenced,
                            bool oom_seen, const std::string& output_tail, const LogWriter& log) {
  nlohmann::json s;
  if (WIFSIGNALED(wait_status)) {
    s = {{"signal", WTERMSIG(wait_status)}};  // Podman itself was killed
  } else {
    const ContainerExit e = ClassifyPodmanExit(WEXITSTATUS(wait_status));
    std::string inspected;
    const int st = RunRootProgram(PodmanInspectArgv(c), env, [&](const std::string& t) { inspected += t; }, {});
    int exit_code = 0;
    std::string oom;
    long long started = 0;
    const bool known = st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
                       static_cast<bool>(std::istringstream(inspected) >> exit_code >> oom >> started);
    if (e.maybe_launch && (!known || started <= 0)) {
      const std::string why = LastLine(output_tail);
      s = {{"exitCode", e.exit_code},
           {"launchError", "the container could not be started: " +
                               (why.empty() ? "podman exited " + std::to_string(e.exit_code) : why)}};
    } else if (e.signal != 0) {
      s = {{"signal", e.signal}};
    } else {
      s = {{"exitCode", e.exit_code}};
    }
    if (known && oom == "true") s["oom"] = true;
  }
  if (oom_seen) s["oom"] = true;
  const int rm = RunRootProgram(PodmanRemoveArgv(c), env, log, {});
  if (rm >= 0 && WIFEXITED(rm) && WEXITSTATUS(rm) == 0) s["removed"] = true;
  if (fenced) s["fenced"] = true;
  return s.dump();
}

}  // namespace muster::agent
