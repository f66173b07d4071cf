#include "store/sqlite/high_water.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace muster::store {

StatusOr<HighWater> HighWater::Open(const std::string& db_path) {
  const std::string path = db_path + "-hwm";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status(StatusCode::kUnavailable, "cannot open " + path + ": " + std::strerror(errno));
  char text[64] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  int64_t recorded = 0;
  if (n > 0) {
    const char* end = text + n;
    while (end > text && (end[-1] == '\n' || end[-1] == ' ')) --end;
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text, end, v);
    if (ec == std::errc() && ptr == end && v > 0) recorded = v;
  }
  return HighWater(path, fd, recorded);
}

HighWater::~HighWater() {
  if (fd_ >= 0) ::close(fd_);
}

Status HighWater::Check(const std::string& db_path, int64_t store_max_job_id) const {
  if (store_max_job_id >= recorded_) return Status::Ok();
  return DataLoss("store " + db_path + " holds jobs up to " + std::to_string(store_max_job_id) + ", but job " +
                  std::to_string(recorded_) + " was acknowledged (recorded in " + path_ + "): its write-ahead log " +
                  db_path +
                  "-wal is missing or damaged, or the file is an older copy. Put back the -wal file it was "
                  "running with, or restore a backup; to start from what the store holds (losing those jobs), "
                  "remove " +
                  path_);
}

void HighWater::Record(int64_t job_id) {
  if (job_id <= recorded_ || fd_ < 0) return;
  // Fixed width, written in place: one write, no file that shrinks.
  char text[32];
  const int n = std::snprintf(text, sizeof text, "%020lld\n", static_cast<long long>(job_id));
  if (::pwrite(fd_, text, static_cast<size_t>(n), 0) == n) recorded_ = job_id;
}

}  // namespace muster::store
