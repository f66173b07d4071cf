#include "store/sqlite/coalescing_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

namespace muster::store {
namespace {

constexpr size_t kMaxBuffered = 4 << 20;
// The platform VFS takes writes of under 128 KiB (unix: seekAndWrite masks
// the count to 17 bits): a flush goes in pieces of this size.
constexpr size_t kMaxWrite = 64 << 10;

sqlite3_vfs* Base(sqlite3_vfs* vfs) { return static_cast<sqlite3_vfs*>(vfs->pAppData); }

// A WAL file: our methods first, the platform's file right after.
struct WalFile {
  sqlite3_file base;     // pMethods = kWalMethods
  sqlite3_file* real;    // the platform VFS's file, in the same allocation
  std::string* pending;  // frames not yet written
  sqlite3_int64 pending_offset;
};

int Flush(WalFile* f) {
  const std::string& p = *f->pending;
  int rc = SQLITE_OK;
  for (size_t done = 0; done < p.size() && rc == SQLITE_OK; done += kMaxWrite) {
    const size_t n = std::min(kMaxWrite, p.size() - done);
    rc = f->real->pMethods->xWrite(f->real, p.data() + done, static_cast<int>(n),
                                   f->pending_offset + static_cast<sqlite3_int64>(done));
  }
  f->pending->clear();
  return rc;
}

WalFile* W(sqlite3_file* file) { return reinterpret_cast<WalFile*>(file); }

int Close(sqlite3_file* file) {
  WalFile* f = W(file);
  const int flushed = Flush(f);
  const int rc = f->real->pMethods->xClose(f->real);
  delete f->pending;
  f->pending = nullptr;
  return flushed != SQLITE_OK ? flushed : rc;
}

int Read(sqlite3_file* file, void* buf, int amount, sqlite3_int64 offset) {
  WalFile* f = W(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xRead(f->real, buf, amount, offset);
}

int Write(sqlite3_file* file, const void* buf, int amount, sqlite3_int64 offset) {
  WalFile* f = W(file);
  std::string& p = *f->pending;
  if (!p.empty() && offset != f->pending_offset + static_cast<sqlite3_int64>(p.size())) {
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  }
  if (p.empty()) f->pending_offset = offset;
  p.append(static_cast<const char*>(buf), static_cast<size_t>(amount));
  return p.size() >= kMaxBuffered ? Flush(f) : SQLITE_OK;
}

int Truncate(sqlite3_file* file, sqlite3_int64 size) {
  WalFile* f = W(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xTruncate(f->real, size);
}

int Sync(sqlite3_file* file, int flags) {
  WalFile* f = W(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xSync(f->real, flags);
}

int FileSize(sqlite3_file* file, sqlite3_int64* size) {
  WalFile* f = W(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xFileSize(f->real, size);
}

// The rest pass through to the platform's file.
int Lock(sqlite3_file* f, int level) { return W(f)->real->pMethods->xLock(W(f)->real, level); }
int Unlock(sqlite3_file* f, int level) { return W(f)->real->pMethods->xUnlock(W(f)->real, level); }
int CheckReservedLock(sqlite3_file* f, int* out) { return W(f)->real->pMethods->xCheckReservedLock(W(f)->real, out); }
int FileControl(sqlite3_file* f, int op, void* arg) {
  // Some controls read or change the file (size hints, persistent WAL, ...): flush first.
  if (int rc = Flush(W(f)); rc != SQLITE_OK) return rc;
  return W(f)->real->pMethods->xFileControl(W(f)->real, op, arg);
}
int SectorSize(sqlite3_file* f) { return W(f)->real->pMethods->xSectorSize(W(f)->real); }
int DeviceCharacteristics(sqlite3_file* f) { return W(f)->real->pMethods->xDeviceCharacteristics(W(f)->real); }

// A WAL file maps no shared memory and serves no fetches: version 1 methods.
const sqlite3_io_methods kWalMethods = {
    1,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

int Open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  sqlite3_vfs* base = Base(vfs);
  if (!(flags & SQLITE_OPEN_WAL)) {
    // Not a WAL: the platform's file, in the space we were given.
    return base->xOpen(base, name, file, flags, out_flags);
  }
  WalFile* f = W(file);
  std::memset(f, 0, sizeof *f);
  f->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + sizeof(WalFile));
  const int rc = base->xOpen(base, name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    // SQLite calls xClose only when pMethods is set; the platform file cleaned up after itself.
    f->base.pMethods = nullptr;
    return rc;
  }
  f->pending = new (std::nothrow) std::string();
  if (!f->pending) {
    f->real->pMethods->xClose(f->real);
    return SQLITE_NOMEM;
  }
  f->base.pMethods = &kWalMethods;
  return SQLITE_OK;
}

int Delete(sqlite3_vfs* v, const char* name, int sync_dir) { return Base(v)->xDelete(Base(v), name, sync_dir); }
int Access(sqlite3_vfs* v, const char* name, int flags, int* out) {
  return Base(v)->xAccess(Base(v), name, flags, out);
}
int FullPathname(sqlite3_vfs* v, const char* name, int n, char* out) {
  return Base(v)->xFullPathname(Base(v), name, n, out);
}
void* DlOpen(sqlite3_vfs* v, const char* name) { return Base(v)->xDlOpen(Base(v), name); }
void DlError(sqlite3_vfs* v, int n, char* out) { Base(v)->xDlError(Base(v), n, out); }
void (*DlSym(sqlite3_vfs* v, void* h, const char* sym))(void) { return Base(v)->xDlSym(Base(v), h, sym); }
void DlClose(sqlite3_vfs* v, void* h) { Base(v)->xDlClose(Base(v), h); }
int Randomness(sqlite3_vfs* v, int n, char* out) { return Base(v)->xRandomness(Base(v), n, out); }
int Sleep(sqlite3_vfs* v, int us) { return Base(v)->xSleep(Base(v), us); }
int CurrentTime(sqlite3_vfs* v, double* out) { return Base(v)->xCurrentTime(Base(v), out); }
int GetLastError(sqlite3_vfs* v, int n, char* out) { return Base(v)->xGetLastError(Base(v), n, out); }
int CurrentTimeInt64(sqlite3_vfs* v, sqlite3_int64* out) { return Base(v)->xCurrentTimeInt64(Base(v), out); }

}  // namespace

int RegisterCoalescingVfs() {
  static std::once_flag once;
  static int result = SQLITE_ERROR;
  std::call_once(once, [] {
    sqlite3_vfs* base = sqlite3_vfs_find(nullptr);
    if (!base || base->iVersion < 2) return;
    static sqlite3_vfs vfs;
    vfs.iVersion = 2;
    vfs.szOsFile = static_cast<int>(sizeof(WalFile)) + base->szOsFile;
    vfs.mxPathname = base->mxPathname;
    vfs.zName = kCoalescingVfs;
    vfs.pAppData = base;
    vfs.xOpen = Open;
    vfs.xDelete = Delete;
    vfs.xAccess = Access;
    vfs.xFullPathname = FullPathname;
    vfs.xDlOpen = DlOpen;
    vfs.xDlError = DlError;
    vfs.xDlSym = DlSym;
    vfs.xDlClose = DlClose;
    vfs.xRandomness = Randomness;
    vfs.xSleep = Sleep;
    vfs.xCurrentTime = CurrentTime;
    vfs.xGetLastError = GetLastError;
    vfs.xCurrentTimeInt64 = CurrentTimeInt64;
    result = sqlite3_vfs_register(&vfs, /*makeDflt=*/0);
  });
  return result;
}

}  // namespace muster::store
