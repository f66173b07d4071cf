// Whole reads and writes on a file descriptor, retried on EINTR and short
// counts. Async-signal-safe (only read and write): usable in a child between
// fork and exec.
#pragma once

#include <cstddef>

namespace muster {

// Writes all `n` bytes; false (errno set) on an error or a zero write.
bool WriteFull(int fd, const void* buf, size_t n);
// Reads exactly `n` bytes; false on an error (errno set) or end of file.
bool ReadFull(int fd, void* buf, size_t n);

}  // namespace muster
