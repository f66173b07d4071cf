#include "shell/shell_relay.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>

#include "common/clock.h"
#include "shell/shell_channel.h"
#include "shell/tcp.h"

namespace muster::shell {
namespace {

volatile sig_atomic_t g_terminated = 0;
void OnTerm(int) { g_terminated = 1; }
// SIGCHLD wakes the relay's poll: the command's exit is seen at once.
int g_child_pipe[2] = {-1, -1};
void OnChild(int) {
  const int saved = errno;
  const char c = 0;
  (void)!::write(g_child_pipe[1], &c, 1);
  errno = saved;
}

int Fail(const std::string& what) {
  std::cerr << "muster shell-serve: " << what << "\n";
  return 1;
}

// The first connection that completes the handshake before `deadline`.
std::unique_ptr<ShellChannel> AcceptUser(int listen_fd, const RelayOptions& o, Time deadline) {
  SystemClock clock;
  while (!g_terminated) {
    const int64_t left = (deadline - clock.Now()).millis();
    if (left <= 0) return nullptr;
    pollfd p{listen_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000))) <= 0) continue;
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A peer that connects and says nothing does not hold the relay.
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    auto ch = ShellChannel::Accept(fd, o.key_hex, o.job);
    if (!ch.ok()) {
      std::cerr << "muster shell-serve: refused a connection: " << ch.status().message() << "\n";
      continue;
    }
    timeval none{0, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    return std::move(*ch);
  }
  return nullptr;
}

int StatusCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

// Writes all of it to the terminal (non-blocking: waits while it is full).
void WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      pollfd out{fd, POLLOUT, 0};
      if (::poll(&out, 1, 1000) < 0 && errno != EINTR) return;
      continue;
    }
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Hangs up the command's session and reaps it.
void HangUp(pid_t child) {
  ::kill(-child, SIGHUP);
  ::kill(-child, SIGCONT);
  for (int i = 0; i < 50; ++i) {
    if (::waitpid(child, nullptr, WNOHANG) == child) return;
    ::usleep(20'000);
  }
  ::kill(-child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace

int RunRelay(const RelayOptions& o) {
  struct sigaction sa {};
  sa.sa_handler = OnTerm;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  int port = 0;
  StatusOr<int> listening = ListenEverywhere(port, 4);
  if (!listening.ok()) return Fail(listening.status().message());
  const int listen_fd = *listening;
  const std::string host =
      o.advertise_host.find(':') != std::string::npos ? "[" + o.advertise_host + "]" : o.advertise_host;
  if (Status st = o.announce(host + ":" + std::to_string(port)); !st.ok()) {
    ::close(listen_fd);
    return Fail("cannot announce the shell: " + st.message());
  }
  std::unique_ptr<ShellChannel> ch = AcceptUser(listen_fd, o, SystemClock().Now() + o.accept_timeout);
  ::close(listen_fd);
  if (!ch) {
    if (g_terminated) return 143;
    std::cerr << "muster shell-serve: nobody connected within " << o.accept_timeout.ToString() << "\n";
    return 124;
  }
  // The client opens with the terminal's size and type.
  auto open = ch->Read();
  uint16_t rows = 24, cols = 80;
  if (!open.ok() || open->type != 'O' || !DecodeSize(open->data, rows, cols)) {
    return Fail("the client did not open a terminal");
  }
  const std::string term = open->data.size() > 4 ? open->data.substr(4) : "xterm";
  winsize ws{};
  ws.ws_row = rows;
  ws.ws_col = cols;
  int master = -1;
  const pid_t child = ::forkpty(&master, nullptr, nullptr, &ws);
  if (child < 0) {
    (void)ch->Write('X', std::string("\0\0\0\1", 4));
    return Fail(std::string("cannot open a terminal: ") + std::strerror(errno));
  }
  if (child == 0) {
    // A terminal's signals as a login gives them, whatever this process inherited.
    for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setenv("TERM", term.c_str(), 1);
    std::vector<std::string> argv = o.argv;
    if (argv.empty()) {
      const char* sh = std::getenv("SHELL");
      argv.push_back(sh && *sh ? sh : "/bin/sh");
    }
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "muster shell-serve: cannot run %s: %s\r\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);
  if (::pipe2(g_child_pipe, O_NONBLOCK | O_CLOEXEC) == 0) {
    struct sigaction chld {};
    chld.sa_handler = OnChild;
    chld.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    ::sigaction(SIGCHLD, &chld, nullptr);
  }
  char buf[16 * 1024];
  bool pty_open = true;
  // Once the client's input ended, the terminal gives end-of-file (^D) to
  // every read: written again each turn, since a ^D queued before the
  // command put the terminal in raw mode (a shell's line editor) is lost.
  bool input_ended = false;
  SystemClock clock;
  Time last_eof;
  auto drain = [&] {
    while (pty_open) {
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n > 0) {
        if (!ch->Write('D', std::string(buf, static_cast<size_t>(n))).ok()) return false;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
      pty_open = false;  // EIO: every holder of the terminal closed it
    }
    return true;
  };
  for (;;) {
    int wait_status = 0;
    if (::waitpid(child, &wait_status, WNOHANG) == child) {
      drain();
      const int code = StatusCode(wait_status);
      const uint32_t c = static_cast<uint32_t>(code);
      (void)ch->Write('X', std::string{static_cast<char>(c >> 24), static_cast<char>(c >> 16),
                                       static_cast<char>(c >> 8), static_cast<char>(c)});
      ::close(master);
      return code;
    }
    if (g_terminated) {
      (void)ch->Write('D', "\r\nmuster: the job is being stopped (cancelled, or at its time limit)\r\n");
      HangUp(child);
      return 143;
    }
    if (input_ended && clock.Now() - last_eof >= Duration::Millis(200)) {
      last_eof = clock.Now();
      const char eof = '\x04';
      (void)!::write(master, &eof, 1);  // dropped when the terminal is full: it is not reading
    }
    pollfd fds[3] = {{ch->fd(), POLLIN, 0}, {pty_open ? master : -1, POLLIN, 0}, {g_child_pipe[0], POLLIN, 0}};
    const int ready = ch->Pending() ? 1 : ::poll(fds, 3, 200);
    if (fds[2].revents & POLLIN) {
      char drained[64];
      while (::read(g_child_pipe[0], drained, sizeof drained) > 0) {
      }
    }
    if (ready < 0 && errno != EINTR) break;
    if (ch->Pending() || (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      auto f = ch->Read();
      if (!f.ok()) {
        HangUp(child);
        return 129;
      }
      if (f->type == 'D') {
        WriteAll(master, f->data.data(), f->data.size());
      } else if (f->type == 'W' && DecodeSize(f->data, rows, cols)) {
        ws.ws_row = rows;
        ws.ws_col = cols;
        ::ioctl(master, TIOCSWINSZ, &ws);
      } else if (f->type == 'E') {
        input_ended = true;
      }
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (!drain()) {
        HangUp(child);
        return 129;
      }
    }
  }
  HangUp(child);
  return 1;
}

}  // namespace muster::shell
