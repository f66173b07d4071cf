#include "shell/shell_session.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/fd_io.h"
#include "shell/shell_channel.h"
#include "shell/tcp.h"

namespace muster::shell {
namespace {

volatile sig_atomic_t g_resized = 0;
void OnWinch(int) { g_resized = 1; }

// Raw mode on a terminal for as long as it lives.
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (::tcgetattr(fd, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(fd, TCSAFLUSH, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(fd_, TCSAFLUSH, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

std::string WindowSize(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0) return EncodeSize(24, 80);
  return EncodeSize(ws.ws_row, ws.ws_col);
}

}  // namespace

StatusOr<int> RunSession(const SessionOptions& o) {
  ::signal(SIGPIPE, SIG_IGN);
  StatusOr<int> dialed = Dial(o.endpoint);
  if (!dialed.ok()) return Unavailable("the job's shell: " + dialed.status().message());
  const int fd = *dialed;
  ASSIGN_OR_RETURN(std::unique_ptr<ShellChannel> ch, ShellChannel::Connect(fd, o.key_hex, o.job));
  const bool tty = ::isatty(o.in_fd) == 1;
  const int size_fd = tty ? o.in_fd : o.out_fd;
  const char* term = std::getenv("TERM");
  RETURN_IF_ERROR(ch->Write('O', WindowSize(size_fd) + (term && *term ? term : "xterm")));
  struct sigaction sa {
  }, old_winch{};
  sa.sa_handler = OnWinch;
  ::sigaction(SIGWINCH, &sa, &old_winch);
  std::unique_ptr<RawTerminal> raw;
  if (tty) raw = std::make_unique<RawTerminal>(o.in_fd);
  bool input_open = true;
  char buf[16 * 1024];
  StatusOr<int> result = Unavailable("the shell's connection was lost");
  for (;;) {
    if (g_resized) {
      g_resized = 0;
      if (!ch->Write('W', WindowSize(size_fd)).ok()) break;
    }
    pollfd fds[2] = {{ch->fd(), POLLIN, 0}, {input_open ? o.in_fd : -1, POLLIN, 0}};
    const int ready = ch->Pending() ? 1 : ::poll(fds, 2, 500);
    if (ready < 0 && errno != EINTR) break;
    if (ch->Pending() || (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      auto f = ch->Read();
      if (!f.ok()) break;
      if (f->type == 'D' && !WriteFull(o.out_fd, f->data.data(), f->data.size())) break;
      if (f->type == 'X' && f->data.size() == 4) {
        uint32_t c = 0;
        for (char b : f->data) c = c << 8 | static_cast<unsigned char>(b);
        result = static_cast<int>(c);
        break;
      }
    }
    if (input_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(o.in_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        input_open = false;
        if (!ch->Write('E', "").ok()) break;
      } else if (!ch->Write('D', std::string(buf, static_cast<size_t>(n))).ok()) {
        break;
      }
    }
  }
  raw.reset();
  ::sigaction(SIGWINCH, &old_winch, nullptr);
  return result;
}

}  // namespace muster::shell
