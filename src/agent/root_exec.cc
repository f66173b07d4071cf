#include "agent/root_exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace muster::agent {

bool RootEnvironmentAllows(const std::string& name) {
  static const char* const kAllowed[] = {"HOME",
                                         "LANG",
                                         "LC_ALL",
                                         "TZ",
                                         "TMPDIR",
                                         "XDG_RUNTIME_DIR",
                                         "REGISTRY_AUTH_FILE",
                                         "CONTAINERS_CONF",
                                         "CONTAINERS_STORAGE_CONF",
                                         "CONTAINERS_REGISTRIES_CONF"};
  for (const char* allowed : kAllowed) {
    if (name == allowed) return true;
  }
  return false;
}

std::vector<std::string> RootEnvironment(const std::vector<std::string>& extra, char** from) {
  const auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> out = {std::string("PATH=") + kRootPath};
  for (char** e = from != nullptr ? from : environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    if (kv.find('=') != std::string::npos && RootEnvironmentAllows(name_of(kv))) out.push_back(kv);
  }
  for (const std::string& kv : extra) {
    const std::string name = name_of(kv);
    std::erase_if(out, [&](const std::string& have) { return name_of(have) == name; });
    out.push_back(kv);
  }
  return out;
}

StatusOr<std::string> FindRootProgram(const std::string& name, const std::string& what) {
  const auto runnable = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
  };
  if (name.empty()) return InvalidArgument(what + ": no program named");
  if (name.front() == '/') {
    if (!runnable(name)) return NotFound(what + ": " + name + " is not an executable file");
    return name;
  }
  if (name.find('/') != std::string::npos) {
    return InvalidArgument(what + ": give an absolute path or a bare name (searched in " + std::string(kRootPath) +
                           "), not the relative path " + name);
  }
  const std::string dirs = kRootPath;
  for (size_t at = 0; at <= dirs.size();) {
    const size_t colon = std::min(dirs.find(':', at), dirs.size());
    const std::string candidate = dirs.substr(at, colon - at) + "/" + name;
    if (runnable(candidate)) return candidate;
    at = colon + 1;
  }
  return NotFound(what + ": " + name + " is not in " + std::string(kRootPath));
}

int RunRootProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::function<void(const std::string&)>& output, const std::function<bool()>& abort) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    errno = EINVAL;
    return -1;
  }
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
    ::execve(a[0], a.data(), e.data());
    // The caller may be threaded (the agent): no locale lookup after fork.
    const char* err = ::strerrordesc_np(errno);
    (void)!::write(2, "muster: cannot run ", 19);
    (void)!::write(2, a[0], std::strlen(a[0]));
    (void)!::write(2, ": ", 2);
    (void)!::write(2, err, std::strlen(err));
    (void)!::write(2, "\n", 1);
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
        if (output) output(std::string(buf, static_cast<size_t>(n)));
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

std::pair<int, std::string> RunRootCommand(const std::vector<std::string>& argv,
                                           const std::vector<std::string>& extra) {
  std::string out;
  const int status = RunRootProgram(argv, RootEnvironment(extra), [&](const std::string& text) { out += text; });
  if (status < 0) return {-1, std::string(std::strerror(errno))};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace muster::agent
