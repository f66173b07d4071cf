#include "agent/task_shim.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/cgroup.h"
#include "agent/container_command.h"
#include "agent/container_task.h"
#include "agent/executor.h"
#include "agent/launcher.h"
#include "agent/resume_check.h"
#include "agent/task_beacon.h"
#include "agent/task_spec.h"
#include "common/fd_io.h"

namespace muster::agent {

namespace {

// Signals the shim never acts on: the stop signal goes to every process of
// the task, the shim included. Blocked, not ignored: the payload child
// inherits the mask, so a stop signal that arrives between fork and exec
// stays pending and is delivered once the child unblocks it (an ignored one
// would be lost, and the task would only die at the end of its grace).
constexpr int kIgnored[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};

// The log file with size-based rotation to path.1.
class Log {
 public:
  Log(std::string path, int64_t max_bytes) : path_(std::move(path)), max_(max_bytes) { Open(); }
  ~Log() {
    if (fd_ >= 0) ::close(fd_);
  }
  void Write(const char* data, size_t n) {
    while (n > 0 && fd_ >= 0) {
      if (max_ > 0 && size_ >= max_) {
        ::close(fd_);
        ::rename(path_.c_str(), (path_ + ".1").c_str());
        Open();
        continue;
      }
      const size_t room = max_ > 0 ? static_cast<size_t>(max_ - size_) : n;
      const size_t part = std::min(n, room);
      (void)WriteFull(fd_, data, part);
      size_ += static_cast<int64_t>(part);
      data += part;
      n -= part;
    }
  }

 private:
  void Open() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    struct stat st {};
    size_ = (fd_ >= 0 && ::fstat(fd_, &st) == 0) ? st.st_size : 0;
  }
  std::string path_;
  int64_t max_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// The job's own output files (TaskSpec::stdout_path, stderr_path), opened
// by the payload child once it is the task's user, so that the user's
// permissions decide where they may be written; the shim writes through
// the descriptors it receives. Opened for appending: a job's attempts
// follow each other in one file.
struct OutputFiles {
  int out = -1, err = -1;  // err -1: errors go to out
};

// Sends the open files over `sock` (SCM_RIGHTS): byte 'o' and/or 'e', one
// descriptor each.
void SendOutputFiles(int sock, const OutputFiles& f) {
  char tags[2];
  int fds[2];
  size_t n = 0;
  if (f.out >= 0) tags[n] = 'o', fds[n++] = f.out;
  if (f.err >= 0) tags[n] = 'e', fds[n++] = f.err;
  if (n == 0) return;
  iovec iov{tags, n};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(n * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds, n * sizeof(int));
  (void)::sendmsg(sock, &msg, MSG_NOSIGNAL);
}

// What the payload child sent; nothing when it closed the socket first (it
// could not open a file and said so in the log, or exec'd).
OutputFiles ReceiveOutputFiles(int sock) {
  OutputFiles f;
  char tags[2] = {};
  iovec iov{tags, sizeof tags};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return f;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int fds[2] = {-1, -1};
    std::memcpy(fds, CMSG_DATA(c), std::min<size_t>(count, 2) * sizeof(int));
    for (size_t i = 0; i < count && i < 2 && i < static_cast<size_t>(got); ++i) {
      (tags[i] == 'e' ? f.err : f.out) = fds[i];
    }
  }
  return f;
}

// In the payload child, as the task's user in its working directory: opens
// the job's output files and sends them to the shim. `fail` does not return.
template <typename Fail>
void OpenOutputFiles(const TaskSpec& spec, int files_sock, Fail fail) {
  OutputFiles files;
  for (auto [path, fd] : {std::pair{&spec.stdout_path, &files.out}, std::pair{&spec.stderr_path, &files.err}}) {
    if (path->empty()) continue;
    *fd = ::open(path->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_CLOEXEC, 0644);
    if (*fd < 0) {
      const int err = errno;
      const std::string what = "cannot open the job's " + std::string(fd == &files.out ? "stdout" : "stderr") +
                               " file " + *path + " as its user";
      errno = err;
      fail(what.c_str());
    }
  }
  SendOutputFiles(files_sock, files);
  for (int fd : {files.out, files.err, files_sock}) {
    if (fd >= 0) ::close(fd);
  }
}

// The deadline in the agent's lease file (ms since the epoch); 0 when the
// file holds none, with `absent` set when it does not exist; -1 when it
// cannot be read.
long long ReadLeaseDeadline(const std::string& file, bool& absent) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  absent = fd < 0 && errno == ENOENT;
  char text[32] = {};
  const ssize_t got = fd >= 0 ? ::pread(fd, text, sizeof text - 1, 0) : -1;
  if (fd >= 0) ::close(fd);
  if (fd < 0 && !absent) return -1;
  return got > 0 ? std::atoll(text) : 0;
}

long long WallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The agent's lease has run out (or its file is gone): it may have lost
// the server, which may start the job elsewhere.
bool LeaseRunOut(const TaskSpec& spec) {
  if (spec.lease_file.empty()) return false;
  bool absent = false;
  const long long deadline = ReadLeaseDeadline(spec.lease_file, absent);
  return absent || (deadline > 0 && WallMillis() > deadline);
}

// The agent asked the task to stop (a "stop" line in its journal).
bool StopRequested(const std::string& journal) {
  for (const std::string& line : ReadJournal(journal)) {
    if (line.rfind("{\"stop\"", 0) == 0) return true;
  }
  return false;
}

// An eventfd that becomes readable when the memory group `dir` (cgroup v1)
// or one below it runs out of memory; -1 where there is none (v2 counts
// OOM kills of descendants in the group's own memory.events).
int WatchOom(const std::string& dir) {
  if (dir.empty()) return -1;
  const int control = ::open((dir + "/memory.oom_control").c_str(), O_RDONLY | O_CLOEXEC);
  if (control < 0) return -1;
  const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int events = ::open((dir + "/cgroup.event_control").c_str(), O_WRONLY | O_CLOEXEC);
  const std::string line = std::to_string(efd) + " " + std::to_string(control);
  const bool ok =
      efd >= 0 && events >= 0 && ::write(events, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  if (events >= 0) ::close(events);
  ::close(control);
  if (!ok && efd >= 0) ::close(efd);
  return ok ? efd : -1;
}

// In a child after fork: default signal handling, nothing blocked, stdin
// from /dev/null, stdout and stderr to the given descriptors.
void ChildStdio(int out_fd, int err_fd) {
  for (int sig : kIgnored) ::signal(sig, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
}

// Says "muster: WHAT: strerror(errno)" on stderr and exits 127.
[[noreturn]] void FailChild(const char* what) {
  const char* err = std::strerror(errno);
  (void)WriteFull(2, "muster: ", 8);
  (void)WriteFull(2, what, std::strlen(what));
  (void)WriteFull(2, ": ", 2);
  (void)WriteFull(2, err, std::strlen(err));
  (void)WriteFull(2, "\n", 1);
  ::_exit(127);
}

// Takes the task's identity, no_new_privs and its working directory.
void BecomeTaskUser(const TaskSpec& spec) {
  if (const char* failed = TakeTaskIdentity(spec)) FailChild(failed);
  // Nothing it runs gains privileges (setuid binaries, file capabilities).
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) FailChild("cannot set no_new_privs");
  if (!spec.working_dir.empty() && ::chdir(spec.working_dir.c_str()) != 0) {
    const int err = errno;
    const std::string what = "cannot enter the working directory " + spec.working_dir;
    errno = err;
    FailChild(what.c_str());
  }
}

// The payload child of a container task: Podman runs as root (it makes the
// container; the container's processes run as the task's user), so the
// job's output files are opened by a child of its own that becomes the user.
[[noreturn]] void ExecPodman(const TaskSpec& spec, const std::vector<char*>& argv, const std::vector<char*>& envp,
                             int out_fd, int err_fd, int files_sock) {
  ChildStdio(out_fd, err_fd);
  if (files_sock >= 0) {
    const pid_t opener = ::fork();
    if (opener == 0) {
      BecomeTaskUser(spec);
      OpenOutputFiles(spec, files_sock, FailChild);
      ::_exit(0);
    }
    int status = 0;
    if (opener < 0) FailChild("cannot fork");
    while (::waitpid(opener, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ::_exit(127);
    ::close(files_sock);
  }
  // Podman by the absolute path the agent resolved (root_exec.h), never
  // searched for in a PATH.
  ::execve(argv[0], argv.data(), envp.data());
  FailChild(argv[0]);
}

// In the payload child, after fork: only async-signal-safe calls until exec,
// but for setenv of the job's PATH once it is the job's user (the shim is
// single-threaded, so the child's heap is whole).
// `script_argv`: /proc/self/fd/N of the job's script with a #! line, then
// the script's arguments, or null; `interpreter`: that line, for the
// message when it cannot run.
// `err_fd`: where its stderr goes (out_fd for both); `files_sock`: where to
// send its output files once opened as its user (-1: it has none).
// `search_path`: the job's PATH, in which argv[0] is looked up once the
// child is the job's user (null: the shim's own); set in this child only,
// a single-threaded process's copy, never in the root shim.
[[noreturn]] void ExecPayload(const TaskSpec& spec, const std::vector<char*>& argv, const std::vector<char*>& envp,
                              int out_fd, int err_fd, int files_sock, const std::vector<char*>* script_argv,
                              const char* interpreter, const char* search_path) {
  ChildStdio(out_fd, err_fd);
  const auto fail = FailChild;
  // Its own /tmp: a mount namespace of its own (changes do not reach the
  // node), the task's directory bound over /tmp.
  if (!spec.private_tmp.empty()) {
    if (::unshare(CLONE_NEWNS) != 0) fail("cannot make a mount namespace for the private /tmp");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) fail("cannot make / a slave mount");
    if (::mount(spec.private_tmp.c_str(), "/tmp", nullptr, MS_BIND, nullptr) != 0)
      fail("cannot mount the private /tmp");
  }
  BecomeTaskUser(spec);
  if (files_sock >= 0) OpenOutputFiles(spec, files_sock, fail);
  if (search_path != nullptr) ::setenv("PATH", search_path, 1);
  if (script_argv != nullptr) {
    ::execve((*script_argv)[0], script_argv->data(), envp.data());
    // Refused for being a memory file (vm.memfd_noexec, a security module):
    // sh runs it, the #! line being a comment to it. Any other failure (the
    // interpreter is missing) fails the job, as sbatch's would.
    if (errno != EACCES && errno != EPERM) fail(interpreter);
  }
  ::execvpe(argv[0], argv.data(), envp.data());
  fail(argv[0]);
  ::_exit(127);
}

// Verifies the candidates newest first; the first sound one is where the
// job resumes. Each verdict goes to the task's log, the choice to the
// journal (the agent reports it to the server).
void ChooseCheckpoint(const TaskSpec& spec, const std::string& journal, Log& log,
                      std::map<std::string, std::string>& env) {
  nlohmann::json skipped = nlohmann::json::array();
  int64_t chosen = 0;
  const std::vector<Status> verdicts = CheckResumeCandidates(spec);
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const proto::ResumeCandidate& c = spec.resume[i];
    const Status& v = verdicts[i];
    std::string line;
    if (v.ok()) {
      chosen = c.seq;
      env["MUSTER_RESUME_FROM"] = c.location;
      env["MUSTER_RESUME_STEP"] = std::to_string(c.step);
      line = "muster: resuming from checkpoint " + std::to_string(c.seq) + " (step " + std::to_string(c.step) +
             ") at " + c.location + "\n";
    } else {
      skipped.push_back({{"seq", c.seq}, {"reason", v.message().substr(0, 1024)}});
      line = "muster: checkpoint " + std::to_string(c.seq) + " (step " + std::to_string(c.step) + ") at " + c.location +
             " failed verification: " + v.message() + "; skipped\n";
    }
    log.Write(line.data(), line.size());
  }
  if (!chosen) {
    const std::string line = "muster: no checkpoint passed verification; starting from the beginning\n";
    log.Write(line.data(), line.size());
  }
  (void)AppendJournal(journal, nlohmann::json({{"resumed", {{"seq", chosen}, {"skipped", skipped}}}}).dump());
}

}  // namespace

int RunTaskShim(const std::string& journal, const std::string& placed_in) {
  const std::vector<std::string> lines = ReadJournal(journal);
  if (lines.empty()) {
    std::fprintf(stderr, "muster task-shim: %s has no task spec\n", journal.c_str());
    return 1;
  }
  auto parsed = TaskSpecFromJson(lines.front());
  if (!parsed.ok()) {
    std::fprintf(stderr, "muster task-shim: %s\n", parsed.status().ToString().c_str());
    return 1;
  }
  const TaskSpec spec = std::move(*parsed);
  ::setsid();
  sigset_t blocked;
  sigemptyset(&blocked);
  for (int sig : kIgnored) sigaddset(&blocked, sig);
  sigprocmask(SIG_BLOCK, &blocked, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  Log log(spec.log_path, spec.log_max_bytes);
  for (const std::string& procs : spec.cgroup_procs) {
    if (!placed_in.empty() && procs == placed_in + "/cgroup.procs") continue;  // born there
    const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    const std::string pid = std::to_string(::getpid());
    if (fd < 0 || ::write(fd, pid.data(), pid.size()) < 0) {
      const std::string msg = "muster: cannot join cgroup " + procs + ": " + std::strerror(errno) + "\n";
      log.Write(msg.data(), msg.size());
    }
    if (fd >= 0) ::close(fd);
  }

  // The task's group in the first hierarchy (a container's groups are below it).
  std::string task_group;
  if (!spec.cgroup_procs.empty()) {
    std::filesystem::path dir = std::filesystem::path(spec.cgroup_procs.front()).parent_path();
    if (dir.filename() == "supervisor") dir = dir.parent_path();
    task_group = dir.string();
  }
  // cgroup v1 counts an OOM kill in the victim's own group, which for a
  // container is the runtime's, gone with the container. An eventfd on the
  // task group's memory.oom_control hears of an OOM anywhere below it.
  const int oom_fd = spec.container ? WatchOom(task_group) : -1;
  std::map<std::string, std::string> env = spec.env;
  if (!spec.resume.empty()) ChooseCheckpoint(spec, journal, log, env);
  // A Slurm-style job's step counter (srun numbers its steps by it,
  // cli/srun_command.h): a memory file the script and its descendants
  // inherit, gone with the task's last process.
  if (!spec.container && env.count("MUSTER_STEP_HOSTS")) {
    const int fd = ::memfd_create("muster-steps", 0);
    if (fd >= 0) env["MUSTER_STEP_COUNTER_FD"] = std::to_string(fd);
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  // PATH lookup of argv[0] uses the task's PATH, in the payload child once
  // it is the task's user (ExecPayload); the shim's own stays the agent's.
  auto path = spec.env.find("PATH");
  const char* search_path = path != spec.env.end() ? path->second.c_str() : nullptr;

  // Recorded before the payload exists: an agent that dies between
  // starting this shim and writing its pid must not leave a running task
  // that the next agent takes for one that never started. The beacon tells
  // the agent the same where the journal cannot (task_beacon.h).
  const pid_t self = ::getpid();
  const int64_t self_start = ProcessStartTime(self);
  const std::filesystem::path journal_path(journal);
  const int beacon = BindTaskBeacon(TaskBeaconScope(journal_path.parent_path().string()), journal_path.stem().string(),
                                    self, self_start);
  if (beacon < 0) {
    const std::string msg = std::string("muster: cannot bind the task's beacon: ") + std::strerror(errno) + "\n";
    log.Write(msg.data(), msg.size());
  }
  (void)AppendJournal(journal, nlohmann::json({{"pid", self}, {"startTime", self_start}}).dump());

  // A container task: the image first, then `podman run` as the payload.
  std::vector<std::string> podman_env;
  if (spec.container) {
    const LogWriter write = [&](const std::string& text) { log.Write(text.data(), text.size()); };
    // Podman is root's: by the absolute path the agent resolved, with an
    // environment of the agent's allowlist (root_exec.h); the job's
    // variables reach the container through the env file only.
    StatusOr<std::string> env_text = ContainerEnvFile(env);
    if (env_text.ok() && (spec.container->podman.empty() || spec.container->podman.front() != '/')) {
      env_text = InvalidArgument("Podman must be named by an absolute path, not \"" + spec.container->podman + "\"");
    }
    if (!env_text.ok()) {
      write("muster: " + env_text.status().message() + "\n");
      (void)AppendJournal(journal,
                          nlohmann::json({{"exitCode", 125}, {"launchError", env_text.status().message()}}).dump());
      return 0;
    }
    podman_env = PodmanEnvironment(*spec.container);
    const bool ready = EnsureImage(*spec.container, podman_env, journal, write,
                                   [&] { return StopRequested(journal) || LeaseRunOut(spec); });
    if (!spec.container->auth_file.empty()) ::unlink(spec.container->auth_file.c_str());  // the login served its pull
    if (!ready) return 0;
    // The agent may have lost the server during a long pull: start nothing.
    if (LeaseRunOut(spec)) {
      write("muster: the agent's lease ran out before the container started; not starting it (fenced)\n");
      (void)AppendJournal(journal, "{\"signal\":9,\"fenced\":true}");
      return 0;
    }
    const std::string env_file = journal + ".env";
    if (Status st = WritePrivateFile(env_file, *env_text, 0600, 0, 0); !st.ok()) {
      write("muster: " + st.message() + "\n");
      (void)AppendJournal(journal, nlohmann::json({{"exitCode", 125}, {"launchError", st.message()}}).dump());
      return 0;
    }
    TaskSpec run = spec;
    std::vector<std::string> command;
    // A script with a #! line: a file of the task user's, mounted read-only
    // and run by the kernel inside the container with the interpreter it names.
    if (spec.script && spec.argv[2].rfind("#!", 0) == 0) {
      const std::string script_file = journal + ".script";
      if (Status st =
              WritePrivateFile(script_file, spec.argv[2], 0500, spec.run_as ? spec.uid : 0, spec.run_as ? spec.gid : 0);
          !st.ok()) {
        write("muster: " + st.message() + "\n");
        (void)AppendJournal(journal, nlohmann::json({{"exitCode", 125}, {"launchError", st.message()}}).dump());
        return 0;
      }
      run.container->mounts.push_back({script_file, "/.muster/script", true});
      command = {"/.muster/script"};
      for (size_t i = 4; i < spec.argv.size(); ++i) command.push_back(spec.argv[i]);
    }
    args = PodmanRunArgv(run, env_file, command);
    argv.clear();
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    envp.clear();
    for (std::string& v : podman_env) envp.push_back(v.data());
    envp.push_back(nullptr);
  }

  // A script with a #! line runs as a file: the kernel starts the
  // interpreter it names, which reads the script from /proc/self/fd/N (so
  // that descriptor is inherited, not close-on-exec).
  std::string script_path, interpreter;
  std::vector<char*> script_argv;
  if (spec.script && spec.argv[2].rfind("#!", 0) == 0 && !spec.container) {
    interpreter = "cannot run the script's " + spec.argv[2].substr(0, spec.argv[2].find('\n')) + " line";
    const int fd = ::memfd_create("muster-job-script", 0);
    if (fd >= 0 && WriteFull(fd, spec.argv[2].data(), spec.argv[2].size())) {
      script_path = "/proc/self/fd/" + std::to_string(fd);
      // The script's arguments follow its $0 (sh -c SCRIPT NAME ARGS...).
      script_argv.push_back(script_path.data());
      for (size_t i = 4; i < spec.argv.size(); ++i) script_argv.push_back(const_cast<char*>(spec.argv[i].c_str()));
      script_argv.push_back(nullptr);
    } else {
      const std::string msg = std::string("muster: cannot hold the script in memory (") + std::strerror(errno) +
                              "); running it with /bin/sh\n";
      log.Write(msg.data(), msg.size());
    }
  }

  // The private /tmp: made here (as root), the task's user's alone; removed
  // when the task ends.
  if (!spec.private_tmp.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(spec.private_tmp, ec);  // a leftover of an earlier shim of this task
    if (::mkdir(spec.private_tmp.c_str(), 0700) != 0 ||
        (spec.run_as && ::chown(spec.private_tmp.c_str(), spec.uid, spec.gid) != 0)) {
      const std::string msg =
          "muster: cannot make the private /tmp " + spec.private_tmp + ": " + std::strerror(errno) + "\n";
      log.Write(msg.data(), msg.size());
      (void)AppendJournal(journal, "{\"exitCode\":127}");
      return 0;
    }
  }
  // The payload's output: one pipe, or one each for stdout and stderr when
  // its errors have a file of their own.
  const bool files = !spec.stdout_path.empty() || !spec.stderr_path.empty();
  const bool separate = !spec.stderr_path.empty();
  int pipe_fds[2], err_fds[2] = {-1, -1}, sock_fds[2] = {-1, -1};
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return 1;
  if (separate && ::pipe2(err_fds, O_CLOEXEC) != 0) return 1;
  if (files && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock_fds) != 0) return 1;
  const pid_t child = ::fork();
  if (child < 0) {
    const std::string msg = std::string("muster: fork failed: ") + std::strerror(errno) + "\n";
    log.Write(msg.data(), msg.size());
    (void)AppendJournal(journal, "{\"exitCode\":127}");
    return 0;
  }
  if (child == 0 && spec.container) {
    ExecPodman(spec, argv, envp, pipe_fds[1], separate ? err_fds[1] : pipe_fds[1], sock_fds[1]);
  }
  if (child == 0) {
    ExecPayload(spec, argv, envp, pipe_fds[1], separate ? err_fds[1] : pipe_fds[1], sock_fds[1],
                script_path.empty() ? nullptr : &script_argv, interpreter.c_str(), search_path);
  }
  ::close(pipe_fds[1]);
  OutputFiles out_files;
  if (separate) ::close(err_fds[1]);
  if (files) {
    ::close(sock_fds[1]);
    out_files = ReceiveOutputFiles(sock_fds[0]);
    ::close(sock_fds[0]);
  }
  bool file_failed = false;  // said once in the log
  // What the payload wrote to its stdout (both, unless `separate`) or its
  // stderr: to the log, and to the file for it.
  std::string tail;  // the end of the output: Podman's last words, when it fails
  const auto copy = [&](bool stderr_stream, const char* data, size_t n) {
    log.Write(data, n);
    if (spec.container) {
      tail.append(data, n);
      if (tail.size() > 8192) tail.erase(0, tail.size() - 4096);
    }
    const int fd = stderr_stream ? out_files.err : out_files.out;
    if (fd >= 0 && !WriteFull(fd, data, n) && !file_failed) {
      file_failed = true;
      const std::string msg = std::string("muster: cannot write the job's ") + (stderr_stream ? "stderr" : "stdout") +
                              " file: " + std::strerror(errno) + "; its output goes on in this log\n";
      log.Write(msg.data(), msg.size());
    }
  };
  // A stop that came before the payload existed signalled nobody (the
  // executor signals the task's processes, not the shim). It writes the
  // journal first, so a stop the payload missed is in the journal now:
  // pass its signal on (blocked in the child until it can act on it).
  for (const std::string& line : ReadJournal(journal)) {
    if (line.find("\"stop\"") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("stop") && j.contains("killAtMs")) {
      ::kill(child, spec.stop_signal);
      break;
    }
  }

  // Copy output until the payload has exited and the pipe is drained (or a
  // second after exit, when a leftover background process keeps it open).
  // Once a second, check the agent's lease: past it, fence the task. The
  // payload's exit wakes the wait through a pidfd (its pipe's end comes a
  // moment before the exit can be reaped); without pidfds, a short poll.
  const int child_fd = OpenPidfd(child);
  char buf[65536];
  int wait_status = 0;
  bool exited = false, eof = false, err_eof = !separate, fencing = false;
  int lease_missing = 0;  // checks in a row that found no lease file, or no deadline in it
  const auto now = [] { return std::chrono::steady_clock::now(); };
  auto exited_at = now(), last_lease_check = now(), kill_at = now();
  // Milliseconds until `t`, at least 0.
  const auto until = [&](std::chrono::steady_clock::time_point t) {
    return static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(t - now()).count()));
  };
  while (true) {
    int timeout_ms = 1000;
    if (exited) {
      timeout_ms =
          until(fencing ? std::max(exited_at + std::chrono::seconds(1), kill_at) : exited_at + std::chrono::seconds(1));
    } else {
      if (child_fd < 0) timeout_ms = eof ? 5 : 100;
      if (fencing) timeout_ms = std::min(timeout_ms, until(kill_at));
    }
    pollfd fds[4] = {{eof ? -1 : pipe_fds[0], POLLIN, 0},
                     {exited ? -1 : child_fd, POLLIN, 0},
                     {err_eof ? -1 : err_fds[0], POLLIN, 0},
                     {beacon, POLLIN, 0}};
    ::poll(fds, 4, timeout_ms);
    if (fds[3].revents & POLLIN) AcceptOnBeacon(beacon);  // an agent checked it (task_beacon.h)
    if (!eof && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
      if (n > 0) copy(false, buf, static_cast<size_t>(n));
      if (n == 0) eof = true;  // every writer is gone
    }
    if (!err_eof && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(err_fds[0], buf, sizeof buf);
      if (n > 0) copy(true, buf, static_cast<size_t>(n));
      if (n == 0) err_eof = true;
    }
    if (!exited && ::waitpid(child, &wait_status, WNOHANG) == child) {
      exited = true;
      exited_at = now();
    }
    // Fenced, what the payload left behind keeps its grace too.
    if (exited &&
        ((eof && err_eof) || (now() - exited_at >= std::chrono::seconds(1) && (!fencing || now() >= kill_at)))) {
      break;
    }
    if (exited || spec.lease_file.empty() || now() - last_lease_check < std::chrono::seconds(1)) continue;
    last_lease_check = now();
    if (!fencing) {
      bool absent = false;
      const long long deadline = ReadLeaseDeadline(spec.lease_file, absent);
      // The agent writes its lease file before it starts any task, never
      // removes it, and rewrites the deadline in place. Missing, or holding
      // no deadline, at two checks in a row (its state was removed or
      // damaged, a crash emptied it): no agent will renew it, so it counts
      // as run out. (An unreadable file is left to the deadline last read.)
      lease_missing = absent || deadline == 0 ? lease_missing + 1 : 0;
      const long long wall = WallMillis();
      if ((deadline > 0 && wall > deadline) || lease_missing >= 2) {
        // The agent has not renewed its lease: it is gone or cut off, and
        // the server may start this job elsewhere. Stop it ourselves.
        const std::string msg = lease_missing >= 2 ? "muster: the agent's lease file " + spec.lease_file +
                                                         " is gone or holds no deadline; stopping the task (fenced)\n"
                                                   : "muster: the agent's lease ran out; stopping the task (fenced)\n";
        log.Write(msg.data(), msg.size());
        fencing = true;
        ::kill(-::getpgrp(), spec.stop_signal);  // the shim blocks it
        // A container's processes are elsewhere: in its group, below the task's.
        if (spec.container && !task_group.empty()) SignalGroupTree(task_group, spec.stop_signal, true);
        kill_at = now() + std::chrono::milliseconds(spec.grace_ms);
      }
    } else if (now() >= kill_at) {
      (void)AppendJournal(journal, "{\"signal\":9,\"fenced\":true}");
      if (!task_group.empty()) SignalGroupTree(task_group, SIGKILL, false);  // a container's too
      for (const std::string& procs : spec.cgroup_procs) {
        std::ifstream in(procs);
        pid_t pid = 0;
        while (in >> pid) {
          if (pid != ::getpid()) ::kill(pid, SIGKILL);
        }
      }
      ::kill(-::getpgrp(), SIGKILL);  // and the shim with its group
    }
  }
  ::close(pipe_fds[0]);
  for (int fd : {err_fds[0], out_files.out, out_files.err}) {
    if (fd >= 0) ::close(fd);
  }
  if (child_fd >= 0) ::close(child_fd);
  // Fenced: however the payload ended (on the stop signal, or before the
  // SIGKILL), it ended because the agent lost the server, not by itself.
  if (spec.container) {
    const LogWriter write = [&](const std::string& text) { log.Write(text.data(), text.size()); };
    uint64_t ooms = 0;
    const bool oom = oom_fd >= 0 && ::read(oom_fd, &ooms, sizeof ooms) == sizeof ooms && ooms > 0;
    (void)AppendJournal(journal, FinishContainer(*spec.container, podman_env, wait_status, fencing, oom, tail, write));
    ::unlink((journal + ".env").c_str());
    ::unlink((journal + ".script").c_str());
  } else {
    (void)AppendJournal(journal, ShimStatusJson(wait_status, fencing));
  }
  if (!spec.private_tmp.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(spec.private_tmp, ec);  // symlinks in it are removed, never followed
  }
  // Fenced, no agent may be left to clear the task's process group: a
  // process the payload left (one that ignored the stop signal) would run
  // on beside the copy the server starts elsewhere. The shim ends with it.
  if (fencing) ::kill(-::getpgrp(), SIGKILL);
  return 0;
}

}  // namespace muster::agent
