#include "agent/container_task.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/container_command.h"
#include "common/fd_io.h"

extern char** environ;

namespace muster::agent {

namespace {

std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \r\n\t");
  if (end == std::string::npos) return {};
  const size_t start = text.rfind('\n', end);
  std::string line = text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
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

std::vector<std::string> PodmanEnvironment(const ContainerSpec& c, const std::map<std::string, std::string>& job_env,
                                           const std::vector<std::string>& inherited) {
  std::vector<std::string> out;
  bool has_path = false;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    const bool keep = name == "PATH" || name == "HOME" || name == "XDG_RUNTIME_DIR" || name == "TMPDIR" ||
                      name == "REGISTRY_AUTH_FILE" || name.rfind("CONTAINERS_", 0) == 0;
    if (!keep || (name == "CONTAINERS_CONF" && !c.containers_conf.empty())) continue;
    has_path = has_path || name == "PATH";
    out.push_back(kv);
  }
  if (!has_path) out.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  if (!c.containers_conf.empty()) out.push_back("CONTAINERS_CONF=" + c.containers_conf);
  for (const std::string& name : inherited) {
    auto it = job_env.find(name);
    if (it != job_env.end()) out.push_back(name + "=" + it->second);
  }
  return out;
}

int RunPodman(const std::vector<std::string>& argv, const std::vector<std::string>& env, const LogWriter& log,
              const std::function<bool()>& abort) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  std::vector<std::string> args = argv, vars = env;
  std::vector<char*> a, e;
  for (std::string& s : args) a.push_back(s.data());
  a.push_back(nullptr);
  for (std::string& s : vars) e.push_back(s.data());
  e.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (child == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execvpe(a[0], a.data(), e.data());
    const std::string msg = std::string("muster: cannot run ") + a[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[16384];
  bool killed = false;
  while (true) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, 1000);
    if (ready > 0) {
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n > 0) {
        log(std::string(buf, static_cast<size_t>(n)));
        continue;
      }
      if (n == 0 || errno != EINTR) break;
    }
    if (!killed && abort && abort()) {
      ::kill(child, SIGKILL);
      killed = true;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

bool EnsureImage(const ContainerSpec& c, const std::vector<std::string>& env, const std::string& journal,
                 const LogWriter& log, const std::function<bool()>& abort) {
  const int exists = RunPodman(PodmanImageExistsArgv(c), env, [](const std::string&) {}, abort);
  if (exists >= 0 && WIFEXITED(exists) && WEXITSTATUS(exists) == 0) {
    (void)AppendJournal(journal, nlohmann::json({{"pulled", c.image}, {"cached", true}}).dump());
    return true;
  }
  (void)AppendJournal(journal, nlohmann::json({{"pulling", c.image}}).dump());
  log("muster: pulling image " + c.image + "\n");
  const auto start = std::chrono::steady_clock::now();
  std::string output;
  const int pulled = RunPodman(
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
  if (why.empty()) why = pulled < 0 ? std::strerror(errno) : "podman pull exited " + std::to_string(WEXITSTATUS(pulled));
  (void)AppendJournal(journal,
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
    const int st = RunPodman(PodmanInspectArgv(c), env, [&](const std::string& t) { inspected += t; }, {});
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
  const int rm = RunPodman(PodmanRemoveArgv(c), env, log, {});
  if (rm >= 0 && WIFEXITED(rm) && WEXITSTATUS(rm) == 0) s["removed"] = true;
  if (fenced) s["fenced"] = true;
  return s.dump();
}

}  // namespace muster::agent
