#include "store/sqlite/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace muster::store {

StatusOr<StoreLock> StoreLock::Acquire(const std::string& db_path) {
  const std::string path = db_path + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status(StatusCode::kUnavailable, "cannot open " + path + ": " + std::strerror(errno));
  StoreLock lock(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK)
      return Status(StatusCode::kUnavailable, "cannot lock " + path + ": " + std::strerror(errno));
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return FailedPrecondition("store " + db_path + " is in use by another process" +
                              (holder.empty() ? "" : " (pid " + holder + ")") +
                              ": one muster server at a time on a store");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return Status(StatusCode::kUnavailable, "cannot write " + path + ": " + std::strerror(errno));
  }
  return lock;
}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace muster::store
