#include "common/service_notify.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace muster {
namespace {

// A datagram socket bound to `name` (a path, or '@' for an abstract name),
// as systemd's is.
class Listener {
 public:
  explicit Listener(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.data(), name.size());
    if (name[0] == '@') addr.sun_path[0] = '\0';
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr),
                    static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())) == 0;
  }
  ~Listener() { ::close(fd_); }
  bool bound() const { return bound_; }
  std::string Receive() {
    char buf[512];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    return n < 0 ? "<nothing>" : std::string(buf, static_cast<size_t>(n));
  }

 private:
  int fd_ = -1;
  bool bound_ = false;
};

TEST(ServiceNotify, WithoutTheVariableNothingIsSentAndAllIsWell) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_TRUE(NotifyServiceManager("READY=1").ok());
}

TEST(ServiceNotify, AStateReachesASocketByPath) {
  const std::string path = (std::filesystem::temp_directory_path() / ("notify-" + std::to_string(::getpid()))).string();
  std::filesystem::remove(path);
  Listener listener(path);
  ASSERT_TRUE(listener.bound());
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  ASSERT_TRUE(NotifyServiceManager("READY=1\nSTATUS=serving").ok());
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_EQ(listener.Receive(), "READY=1\nSTATUS=serving");
  std::filesystem::remove(path);
}

TEST(ServiceNotify, AStateReachesAnAbstractSocket) {
  const std::string name = "@muster-notify-test-" + std::to_string(::getpid());
  Listener listener(name);
  ASSERT_TRUE(listener.bound());
  ASSERT_TRUE(NotifyServiceManagerAt(name, "STOPPING=1").ok());
  EXPECT_EQ(listener.Receive(), "STOPPING=1");
}

TEST(ServiceNotify, ABadOrAbsentSocketIsAnErrorNamingIt) {
  const Status relative = NotifyServiceManagerAt("run/notify", "READY=1");
  EXPECT_EQ(relative.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(relative.message().find("run/notify"), std::string::npos);
  const Status absent = NotifyServiceManagerAt("/nonexistent/notify", "READY=1");
  EXPECT_EQ(absent.code(), StatusCode::kUnavailable);
  EXPECT_NE(absent.message().find("/nonexistent/notify"), std::string::npos);
}

}  // namespace
}  // namespace muster
