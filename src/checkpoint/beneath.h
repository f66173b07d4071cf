// Files beneath a directory, reached without following symbolic links.
//
// Checkpoint directories are written by jobs and read and deleted by the
// agent's task shim and the server, which may run as root. A path resolved
// by name twice (once to check, once to act) lets the job swap a component
// for a link in between and point the second step anywhere. These helpers
// resolve a directory once, to a file descriptor, and do everything else
// relative to it, refusing links in every component.
//
// Thread-safety: free functions; safe from any thread.
#pragma once

#include <unistd.h>

#include <string>

#include "common/status.h"

namespace muster::checkpoint {

// Closes a descriptor when it goes out of scope (-1: nothing).
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens `rel` (relative, components separated by '/', none empty, "." or
// "..") under the directory `dirfd`, for reading, only if no component is a
// symbolic link and the file is a regular one (not a FIFO, which would block,
// nor a device). Returns the descriptor, which the caller closes. Errors, with
// `shown` naming the file: NotFound when it does not exist, DataLoss for a
// link or a file that is not regular, Internal otherwise.
StatusOr<int> OpenRegularBeneath(int dirfd, const std::string& rel, const std::string& shown);

// Deletes everything inside the directory `dirfd`, never following a link
// (a link is removed, not what it points to). `shown` names it in errors.
Status RemoveContentsBeneath(int dirfd, const std::string& shown);

}  // namespace muster::checkpoint
