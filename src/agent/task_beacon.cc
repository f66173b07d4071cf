#include "agent/task_beacon.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace muster::agent {

namespace {

constexpr char kPrefix[] = "muster-task/";

// "muster-task/<scope>/<key>/<pid>/<start>", without the leading NUL.
std::string BeaconName(const std::string& scope, const std::string& key, pid_t pid, int64_t start_time) {
  return kPrefix + scope + "/" + key + "/" + std::to_string(pid) + "/" + std::to_string(start_time);
}

}  // namespace

std::string TaskBeaconScope(const std::string& tasks_dir) {
  char* real = ::realpath(tasks_dir.c_str(), nullptr);
  if (real == nullptr) return "";
  // FNV-1a, 64 bits: stable across builds, so a newer agent finds the
  // beacons of shims an older one started.
  uint64_t h = 14695981039346656037ull;
  for (const char* p = real; *p; ++p) {
    h ^= static_cast<unsigned char>(*p);
    h *= 1099511628211ull;
  }
  ::free(real);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

int BindTaskBeacon(const std::string& scope, const std::string& key, pid_t pid, int64_t start_time) {
  const std::string name = BeaconName(scope, key, pid, start_time);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (scope.empty() || name.size() + 1 > sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  // listen() records this process's credentials for VerifyTaskBeacon.
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

void AcceptOnBeacon(int fd) {
  for (int c; (c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) ::close(c);
}

bool VerifyTaskBeacon(const std::string& scope, const TaskBeacon& b, uid_t uid, bool check_cgroup, std::string* why) {
  const auto no = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  const std::string name = BeaconName(scope, b.key, b.pid, b.start_time);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof addr.sun_path) return no("its name is too long");
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return no(std::string("no socket: ") + std::strerror(errno));
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ucred cred{};
  socklen_t cred_len = sizeof cred;
  const bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0;
  const int err = errno;
  const bool known = connected && ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0;
  ::close(fd);
  if (!connected) return no(std::string("it does not answer (") + std::strerror(err) + ")");
  if (!known) return no("its owner cannot be read");
  if (cred.pid != b.pid || cred.uid != uid) {
    return no("it was bound by pid " + std::to_string(cred.pid) + " of uid " + std::to_string(cred.uid) +
              ", not by the shim it names");
  }
  if (!check_cgroup) return true;
  // "0::/muster/n1.x/jobs/KEY/supervisor" (v2), "4:memory:/muster/.../KEY" (v1).
  std::ifstream groups("/proc/" + std::to_string(b.pid) + "/cgroup");
  for (std::string line; std::getline(groups, line);) {
    const std::string part = "/" + b.key;
    for (size_t at = line.find(part); at != std::string::npos; at = line.find(part, at + 1)) {
      const size_t end = at + part.size();
      if (end == line.size() || line[end] == '/') return true;
    }
  }
  return no("its process is not in the task's cgroup");
}

std::vector<TaskBeacon> ListTaskBeacons(const std::string& scope, const std::string& proc_net_unix) {
  std::vector<TaskBeacon> out;
  if (scope.empty()) return out;
  const std::string wanted = std::string("@") + kPrefix + scope + "/";
  std::ifstream in(proc_net_unix);
  std::string line;
  while (std::getline(in, line)) {
    // The path is the last column; abstract names start with '@'.
    const size_t at = line.find(wanted);
    if (at == std::string::npos) continue;
    std::istringstream rest(line.substr(at + wanted.size()));
    std::string key, pid, start;
    if (!std::getline(rest, key, '/') || !std::getline(rest, pid, '/') || !std::getline(rest, start)) continue;
    TaskBeacon b;
    b.key = key;
    char* end = nullptr;
    b.pid = static_cast<pid_t>(std::strtol(pid.c_str(), &end, 10));
    if (end == pid.c_str() || *end != '\0' || b.pid <= 1) continue;
    b.start_time = std::strtoll(start.c_str(), &end, 10);
    if (end == start.c_str() || *end != '\0') continue;
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace muster::agent
