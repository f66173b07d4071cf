// CoalescingVfs: an SQLite VFS over the platform's that writes each
// transaction's write-ahead-log frames with one pwrite per 64 KiB instead
// of two per frame.
//
// Why: SQLite appends a WAL frame as two writes (a 24-byte header, then the
// page); a submit's commit touches a dozen pages, so it made some 30 write
// system calls before its fdatasync, and on a virtual machine each is
// microseconds of CPU and of the commit's wall time, which every client
// waiting for that commit sees.
//
// How: writes to a file opened as a WAL (SQLITE_OPEN_WAL) that continue the
// previous one are kept in a buffer; the buffer goes to the file, in one
// write at its offset (64 KiB at a time), before anything that could observe the file or
// depends on its content: xSync (SQLite syncs the WAL before a commit is
// visible to readers or acknowledged), xRead, xFileSize, xTruncate, xClose,
// a write elsewhere in the file, or 4 MiB of buffered frames. Every other
// file (the database, its shared-memory index, journals) is the platform
// VFS's own, untouched. What reaches the disk, and when it is synced, is
// exactly what SQLite asked for: only the number of write calls changes.
//
// Precondition: synchronous=FULL (or EXTRA), as the store sets it. SQLite
// publishes a commit to other connections right after it syncs the WAL; with
// NORMAL it publishes without a sync, and a reader would look for frames
// still in the writer's buffer (a short read, "disk I/O error").
//
// Register once per process; open connections with vfs name kCoalescingVfs.
#pragma once

namespace muster::store {

inline constexpr const char kCoalescingVfs[] = "muster-coalescing";

// Registers the VFS (not as the default); idempotent and thread-safe.
// Returns an SQLite result code (SQLITE_OK).
int RegisterCoalescingVfs();

}  // namespace muster::store
