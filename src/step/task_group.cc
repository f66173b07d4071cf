#include "step/task_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fd_io.h"
#include "step/step_wire.h"

namespace muster::step {
namespace {

// argv[0] as execvp would find it, searched in the task's PATH (not the
// caller's); as given when it has a slash or nothing on PATH is executable.
std::string Resolve(const std::string& name, const std::map<std::string, std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  auto path = env.find("PATH");
  const std::string dirs = path != env.end() ? path->second : "/usr/local/bin:/usr/bin:/bin";
  size_t at = 0;
  for (;;) {
    const size_t colon = dirs.find(':', at);
    std::string dir = dirs.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) return name;
    at = colon + 1;
  }
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

StatusOr<std::unique_ptr<TaskGroup>> TaskGroup::Start(const std::vector<std::string>& argv, const std::string& cwd,
                                                      const std::vector<Task>& tasks, const std::string& label) {
  if (argv.empty()) return InvalidArgument("no command to run");
  std::unique_ptr<TaskGroup> group(new TaskGroup());
  for (const Task& t : tasks) {
    // Everything the child needs is made before fork: the caller may have
    // threads, so the child only calls async-signal-safe functions.
    const std::string path = Resolve(argv[0], t.env);
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : t.env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (std::string& a : argv_copy) args.push_back(a.data());
    args.push_back(nullptr);
    const std::string cannot_cd =
        "srun: error: " + label + ": task " + std::to_string(t.id) + ": cannot enter " + cwd + ": ";
    const std::string cannot_run =
        "srun: error: " + label + ": task " + std::to_string(t.id) + ": cannot run " + argv[0] + ": ";
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(out[0]);
      ::close(out[1]);
      return Internal(std::string("pipe: ") + std::strerror(errno));
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
      return Internal(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      // The caller's signal handlers and mask are not the task's.
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) ::dup2(null, 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      auto fail = [&](const std::string& what) {
        const char* why = std::strerror(errno);
        WriteFull(2, what.data(), what.size());
        WriteFull(2, why, std::strlen(why));
        WriteFull(2, "\n", 1);
        ::_exit(2);
      };
      if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) fail(cannot_cd);
      ::execve(path.c_str(), args.data(), envp.data());
      fail(cannot_run);
    }
    ::close(out[1]);
    ::close(err[1]);
    group->tasks_.push_back({t.id, pid, out[0], err[0]});
  }
  return group;
}

TaskGroup::~TaskGroup() {
  for (Running& t : tasks_) {
    if (!t.reaped) {
      ::kill(t.pid, SIGKILL);
      int status = 0;
      while (::waitpid(t.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    CloseFd(t.out);
    CloseFd(t.err);
  }
}

void TaskGroup::AddPollFds(std::vector<pollfd>& fds) const {
  for (const Running& t : tasks_) {
    for (int fd : {t.out, t.err}) {
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
  }
}

void TaskGroup::Service(const OutputFn& output, const ExitFn& exited) {
  char buf[16 * 1024];
  for (Running& t : tasks_) {
    if (!t.reaped) {
      int status = 0;
      const pid_t r = ::waitpid(t.pid, &status, WNOHANG);
      if (r == t.pid) {
        t.reaped = true;
        t.status = StatusOfWait(status);
      }
    }
    for (int stream : {1, 2}) {
      int& fd = stream == 1 ? t.out : t.err;
      // Once the task has ended, its pipe is read to its end, or as far as
      // it holds now: a process it left behind may keep it open.
      for (int rounds = 0; fd >= 0 && rounds < 64; ++rounds) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) break;
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          CloseFd(fd);
          break;
        }
        output(t.id, stream, std::string_view(buf, static_cast<size_t>(n)));
      }
    }
    if (t.reaped && !t.reported) {
      t.reported = true;
      CloseFd(t.out);
      CloseFd(t.err);
      exited(t.id, t.status);
    }
  }
}

void TaskGroup::Signal(int signal) {
  for (const Running& t : tasks_) {
    if (!t.reaped) ::kill(t.pid, signal);
  }
}

bool TaskGroup::Done() const {
  for (const Running& t : tasks_) {
    if (!t.reported) return false;
  }
  return true;
}

}  // namespace muster::step
