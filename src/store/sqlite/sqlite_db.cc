#include "store/sqlite/sqlite_db.h"

#include "store/sqlite/coalescing_vfs.h"

namespace muster::store {

StatusOr<Db> Db::Open(const std::string& path, bool read_only) {
  sqlite3* db = nullptr;
  const int flags =
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
  // Writes to the WAL are coalesced (coalescing_vfs.h); the platform VFS otherwise.
  const char* vfs = RegisterCoalescingVfs() == SQLITE_OK ? kCoalescingVfs : nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, vfs);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status(StatusCode::kUnavailable, "cannot open store " + path + ": " + msg);
  }
  sqlite3_extended_result_codes(db, 1);
  return Db(db, path);
}

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}

Db::~Db() { sqlite3_close(db_); }

Status Db::Error(int rc, std::string_view what) const {
  const std::string msg = "store " + path_ + ": " + std::string(what) + ": " + sqlite3_errmsg(db_);
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLoss(msg);
    case SQLITE_CONSTRAINT:
      return Status(StatusCode::kAlreadyExists, msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
      return Status(StatusCode::kUnavailable, msg);
    default:
      return Internal(msg);
  }
}

Status Db::Exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return Error(rc, "exec");
  return Status::Ok();
}

StatusOr<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* st = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &st, nullptr);
  if (rc != SQLITE_OK) return Error(rc, "prepare");
  return Stmt(st, this);
}

Stmt::~Stmt() { sqlite3_finalize(st_); }

Stmt& Stmt::Bind(int i, int64_t v) {
  const int rc = sqlite3_bind_int64(st_, i, v);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::Bind(int i, std::string_view v) {
  const int rc = sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::Bind(int i, const std::optional<int64_t>& v) {
  const int rc = v ? sqlite3_bind_int64(st_, i, *v) : sqlite3_bind_null(st_, i);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

StatusOr<bool> Stmt::Step() {
  if (bind_rc_ != SQLITE_OK) return db_->Error(bind_rc_, "bind");
  const int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(rc, "step");
}

Status Stmt::Run() {
  while (true) {
    auto row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
  }
}

void Stmt::Reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
  bind_rc_ = SQLITE_OK;
}

std::optional<int64_t> Stmt::OptInt(int col) const {
  if (sqlite3_column_type(st_, col) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(st_, col);
}

std::string Stmt::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(st_, col))) : std::string();
}

}  // namespace muster::store
