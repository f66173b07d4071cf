// HighWater: the highest job id a SQLite store has acknowledged, kept
// beside it in "<store>-hwm", so that a store that lost acknowledged jobs
// is refused at start instead of served.
//
// SQLite cannot tell that its write-ahead log is gone: a store whose -wal
// was deleted after a kill -9 (or that was replaced by an older copy, or
// deleted outright) opens cleanly, without the jobs committed since the
// last checkpoint, and the server would hand out their ids again. After
// every commit that adds a job, the store records the job's id here, after
// the commit is durable (so the record never runs ahead of the store); at
// open, a store whose largest job id is below the record is DataLoss.
//
// The record is written without fsync: it must outlive the process (kill
// -9), which the page cache ensures; after a power loss it may be older
// than the store (never newer), which only weakens the check. A record
// that does not parse (a file zeroed by a crash) counts as none.
//
// Thread-safety: Record() from the store's one writer at a time.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace muster::store {

class HighWater {
 public:
  // Opens (creating it if needed) the record of the store at `db_path`.
  static StatusOr<HighWater> Open(const std::string& db_path);
  HighWater(HighWater&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_), recorded_(o.recorded_) { o.fd_ = -1; }
  HighWater& operator=(HighWater&&) = delete;
  HighWater(const HighWater&) = delete;
  ~HighWater();

  // The job id recorded, 0 if none.
  int64_t recorded() const { return recorded_; }
  const std::string& path() const { return path_; }
  // DataLoss naming both files when the store's largest job id is below the record.
  Status Check(const std::string& db_path, int64_t store_max_job_id) const;
  // Records `job_id` if it is above the record.
  void Record(int64_t job_id);

 private:
  HighWater(std::string path, int fd, int64_t recorded) : path_(std::move(path)), fd_(fd), recorded_(recorded) {}
  std::string path_;
  int fd_;
  int64_t recorded_;
};

}  // namespace muster::store
