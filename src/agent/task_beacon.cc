#include "agent/task_beacon.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
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
