// StoreLock: one process at a time on a store file. SQLite itself would let
// a second server open the same file, and two servers each holding the
// cluster in memory overwrite each other's jobs (both hand out the same ids).
//
// The lock is an exclusive flock(2) on "<store>.lock", held while the
// StoreLock lives (the kernel releases it when the process dies, kill -9
// included); the file holds the holder's pid, for the message a second
// process gets. flock locks are independent of the POSIX record locks
// SQLite takes on the database file, so they do not disturb each other.
#pragma once

#include <string>

#include "common/status.h"

namespace muster::store {

class StoreLock {
 public:
  // Takes the lock for the store at `db_path`, or kFailedPrecondition naming
  // the file (and the holder's pid) when another process holds it.
  static StatusOr<StoreLock> Acquire(const std::string& db_path);
  StoreLock(StoreLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  StoreLock& operator=(StoreLock&&) = delete;
  StoreLock(const StoreLock&) = delete;
  ~StoreLock();

 private:
  explicit StoreLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace muster::store
