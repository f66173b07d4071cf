#include "common/service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace muster {

Status NotifyServiceManagerAt(const std::string& socket_name, std::string_view state) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract names ('@' for the leading NUL) and paths; both must fit.
  if (socket_name.empty() || socket_name.size() >= sizeof(addr.sun_path) ||
      (socket_name[0] != '/' && socket_name[0] != '@')) {
    return InvalidArgument("NOTIFY_SOCKET \"" + socket_name + "\" is neither a path nor an abstract name");
  }
  std::memcpy(addr.sun_path, socket_name.data(), socket_name.size());
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_name.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(std::string("NOTIFY_SOCKET: socket: ") + std::strerror(errno));
  ssize_t sent;
  do {
    sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  } while (sent < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (sent < 0) return Unavailable("NOTIFY_SOCKET " + socket_name + ": " + std::strerror(err));
  return Status::Ok();
}

Status NotifyServiceManager(std::string_view state) {
  const char* name = std::getenv("NOTIFY_SOCKET");
  if (name == nullptr || *name == '\0') return Status::Ok();
  return NotifyServiceManagerAt(name, state);
}

}  // namespace muster
