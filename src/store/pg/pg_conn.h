// PgConn: one libpq connection to PostgreSQL, with errors as Status.
//
// Errors keep PostgreSQL's own message and map its SQLSTATE to a code:
// unique_violation (23505) -> kAlreadyExists, a fenced write (MU001, see
// pg_schema.cc) -> Fenced() (store.h), a lost or
// refused connection -> kUnavailable, anything else -> kInternal. Messages
// name the server (host:port/database), never the password.
//
// Parameters are sent as text; PgParams builds them. Not thread-safe: one
// thread uses a connection at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

namespace muster::store {

class PgParams {
 public:
  PgParams& Add(const std::string& v);
  PgParams& Add(int64_t v);
  PgParams& Add(const std::optional<int64_t>& v);
  PgParams& AddNull();
  int size() const { return static_cast<int>(values_.size()); }
  // For libpq: pointers into the values (nullptr for NULL), valid while this lives.
  std::vector<const char*> Pointers() const;

 private:
  std::vector<std::optional<std::string>> values_;
};

// The rows of a query, read by column index.
class PgRows {
 public:
  PgRows() = default;
  explicit PgRows(PGresult* r);
  PgRows(PgRows&&) noexcept;
  PgRows& operator=(PgRows&&) noexcept;
  ~PgRows();

  int size() const;
  bool IsNull(int row, int col) const;
  std::string Text(int row, int col) const;
  int64_t Int(int row, int col) const;  // 0 for NULL
  std::optional<int64_t> OptInt(int row, int col) const;

 private:
  PGresult* r_ = nullptr;
};

class PgConn {
 public:
  // Connects (libpq connection string or URL, multi-host included), with
  // `connect_timeout_s` per host unless the string sets its own.
  static StatusOr<PgConn> Connect(const std::string& conninfo, int connect_timeout_s = 5);
  PgConn() = default;
  PgConn(PgConn&&) noexcept;
  PgConn& operator=(PgConn&&) noexcept;
  ~PgConn();

  // Runs one or more statements without parameters or results.
  Status Exec(const std::string& sql);
  // Runs one statement with parameters.
  StatusOr<PgRows> Query(const std::string& sql, const PgParams& params = PgParams());
  // The same, given up after `timeout` (kUnavailable; the connection is
  // then closed): for a caller that must not wait on a database that went
  // silent, which no TCP timeout notices while a proxy keeps the
  // connection open.
  StatusOr<PgRows> QueryWithin(const std::string& sql, const PgParams& params, std::chrono::milliseconds timeout);
  // Runs the statements in one implicit transaction and one round trip
  // (libpq's pipeline mode): all take effect, durably, or none does.
  Status ExecAtomically(const std::vector<std::pair<std::string, PgParams>>& statements);

  // True while the connection is usable; a broken one must be replaced.
  bool ok() const;
  // "host:port/database" of the server this connection reached.
  const std::string& where() const { return where_; }
  PGconn* raw() { return conn_; }

 private:
  explicit PgConn(PGconn* c);
  Status Error(const PGresult* r, const std::string& what) const;
  // The rows of a finished query, or its error (the result is freed).
  StatusOr<PgRows> Rows(PGresult* r) const;
  // Closes the connection: ok() is false from now on.
  void Drop();

  PGconn* conn_ = nullptr;
  std::string where_;
};

// The server a connection string names, for messages: its hosts, ports and
// database, without user or password.
std::string DescribeConnInfo(const std::string& conninfo);

}  // namespace muster::store
