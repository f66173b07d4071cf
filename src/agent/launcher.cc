#include "agent/launcher.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "agent/task_shim.h"
#include "common/fd_io.h"

namespace muster::agent {

int OpenPidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

namespace {

// fork(), but the child starts in the cgroup whose directory is `cgroup_fd`
// (CLONE_INTO_CGROUP, Linux 5.7, cgroup v2). -1 with errno when the kernel
// cannot; the caller forks instead. The child goes on like a fork()'s: the
// launcher is single-threaded, so no lock is held at the clone; glibc's
// cached thread id stays the launcher's, which the shim never relies on
// (getpid and raise ask the kernel); its own fork() sets its children's.
pid_t ForkIntoCgroup(int cgroup_fd) {
  clone_args args{};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(cgroup_fd);
  return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
}

// The launcher's answer: the pid (negative: -errno) and whether the shim was
// created in its cgroup; the pidfd rides along (SCM_RIGHTS) when valid.
struct Answer {
  int32_t pid = 0;
  int32_t in_cgroup = 0;
};

void Reply(int sock, int32_t pid, int pidfd, bool in_cgroup = false) {
  Answer answer{pid, in_cgroup ? 1 : 0};
  msghdr msg{};
  iovec iov{&answer, sizeof answer};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (pidfd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
  }
  while (::sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

// The launcher process: one request at a time, "dir\0log\0cgroup\0" framed
// by a 4-byte length.
[[noreturn]] void Serve(int sock) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::signal(SIGCHLD, SIG_IGN);  // shims are reaped at once
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  while (true) {
    uint32_t len = 0;
    if (!ReadFull(sock, &len, sizeof len) || len > (1u << 16)) ::_exit(0);
    std::vector<char> buf(len);
    if (!ReadFull(sock, buf.data(), len)) ::_exit(0);
    buf.push_back('\0');
    buf.push_back('\0');
    const std::string dir(buf.data());
    const std::string log(buf.data() + dir.size() + 1);
    const std::string cgroup(buf.data() + dir.size() + log.size() + 2);
    int gate[2];
    if (::pipe2(gate, O_CLOEXEC) != 0) {
      Reply(sock, -errno, -1);
      continue;
    }
    pid_t child = -1;
    std::string placed;  // the cgroup the child was created in
    if (!cgroup.empty()) {
      const int cgroup_fd = ::open(cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (cgroup_fd >= 0) {
        child = ForkIntoCgroup(cgroup_fd);
        ::close(cgroup_fd);
        if (child >= 0) placed = cgroup;
      }
    }
    if (child < 0) child = ::fork();
    if (child < 0) {
      Reply(sock, -errno, -1);
      ::close(gate[0]);
      ::close(gate[1]);
      continue;
    }
    if (child == 0) {
      ::close(gate[1]);
      char go = 0;
      const bool open = ReadFull(gate[0], &go, 1);
      ::close(gate[0]);
      if (!open) ::_exit(1);
      ::close(sock);
      ::prctl(PR_SET_PDEATHSIG, 0);
      ::signal(SIGCHLD, SIG_DFL);
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
      ::setsid();
      const int null_fd = ::open("/dev/null", O_RDONLY);
      if (null_fd >= 0) ::dup2(null_fd, 0);
      const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (log_fd >= 0) {
        ::dup2(log_fd, 1);
        ::dup2(log_fd, 2);
      }
      ::close_range(3, ~0U, 0);
      ::_exit(RunTaskShim(dir, placed));
    }
    ::close(gate[0]);
    const int pidfd = OpenPidfd(child);
    Reply(sock, pidfd >= 0 ? child : -errno, pidfd, !placed.empty());
    if (pidfd >= 0) {
      ::close(pidfd);
      const char go = 1;
      WriteFull(gate[1], &go, 1);
    } else {
      ::kill(child, SIGKILL);
    }
    ::close(gate[1]);
  }
}

}  // namespace

StatusOr<std::unique_ptr<Launcher>> Launcher::Start() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Internal(std::string("socketpair: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    Serve(fds[1]);
  }
  ::close(fds[1]);
  std::unique_ptr<Launcher> l(new Launcher());
  l->socket_ = fds[0];
  l->pid_ = pid;
  return l;
}

Launcher::~Launcher() {
  if (socket_ >= 0) ::close(socket_);  // the launcher sees EOF and exits
  if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
}

StatusOr<Launcher::Launched> Launcher::Launch(const std::string& task_dir, const std::string& log_path,
                                              const std::string& cgroup_dir) {
  std::string request(4, '\0');
  request += task_dir;
  request.push_back('\0');
  request += log_path;
  request.push_back('\0');
  request += cgroup_dir;
  request.push_back('\0');
  const uint32_t len = static_cast<uint32_t>(request.size() - 4);
  std::memcpy(request.data(), &len, 4);
  if (!WriteFull(socket_, request.data(), request.size())) {
    return Status(StatusCode::kUnavailable, std::string("the task launcher is gone: ") + std::strerror(errno));
  }
  Answer answer;
  msghdr msg{};
  iovec iov{&answer, sizeof answer};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(socket_, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof answer))
    return Status(StatusCode::kUnavailable, "the task launcher did not answer");
  if (answer.pid <= 0)
    return Internal(std::string("the task launcher could not start the shim: ") + std::strerror(-answer.pid));
  Launched out;
  out.pid = answer.pid;
  out.in_cgroup = answer.in_cgroup != 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&out.pidfd, CMSG_DATA(c), sizeof(int));
  }
  if (out.pidfd < 0) return Internal("the task launcher sent no pidfd");
  return out;
}

}  // namespace muster::agent
