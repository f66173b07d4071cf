// A thin RAII layer over the SQLite C API that turns result codes into
// Status values. Nothing here knows Muster's schema.
//
// Thread-safety: a Db (connection) and its Stmts are used by one thread at a
// time; callers serialize access.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::store {

class Stmt;

class Db {
 public:
  // Opens (creating if absent) the database at `path`.
  static StatusOr<Db> Open(const std::string& path, bool read_only = false);
  Db(Db&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  ~Db();

  // Runs one or more statements without results.
  Status Exec(const std::string& sql);
  StatusOr<Stmt> Prepare(std::string_view sql);
  // The error for result code `rc`, naming the file.
  Status Error(int rc, std::string_view what) const;
  int64_t LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }
  const std::string& path() const { return path_; }
  sqlite3* raw() const { return db_; }

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Stmt {
 public:
  Stmt(Stmt&& o) noexcept : st_(o.st_), db_(o.db_) { o.st_ = nullptr; }
  Stmt(const Stmt&) = delete;
  ~Stmt();

  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, std::string_view v);
  Stmt& Bind(int i, const std::optional<int64_t>& v);
  // Steps once: true with a row, false when done.
  StatusOr<bool> Step();
  // Steps to completion (for writes); the first error wins.
  Status Run();
  void Reset();

  int64_t Int(int col) const { return sqlite3_column_int64(st_, col); }
  std::optional<int64_t> OptInt(int col) const;
  std::string Text(int col) const;

 private:
  friend class Db;
  Stmt(sqlite3_stmt* st, const Db* db) : st_(st), db_(db) {}
  sqlite3_stmt* st_;
  const Db* db_;
  int bind_rc_ = SQLITE_OK;
};

}  // namespace muster::store
