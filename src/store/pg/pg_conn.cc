#include "store/pg/pg_conn.h"

#include <libpq-fe.h>

#include <poll.h>

#include <cstdlib>
#include <cstring>

#include "store/store.h"

namespace muster::store {
namespace {

// The message libpq or the server gave, on one line.
std::string OneLine(const char* text) {
  std::string s = text != nullptr ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

}  // namespace

PgParams& PgParams::Add(const std::string& v) {
  values_.emplace_back(v);
  return *this;
}
PgParams& PgParams::Add(int64_t v) {
  values_.emplace_back(std::to_string(v));
  return *this;
}
PgParams& PgParams::Add(const std::optional<int64_t>& v) { return v ? Add(*v) : AddNull(); }
PgParams& PgParams::AddNull() {
  values_.emplace_back(std::nullopt);
  return *this;
}
std::vector<const char*> PgParams::Pointers() const {
  std::vector<const char*> p;
  p.reserve(values_.size());
  for (const auto& v : values_) p.push_back(v ? v->c_str() : nullptr);
  return p;
}

PgRows::PgRows(PGresult* r) : r_(r) {}
PgRows::PgRows(PgRows&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
PgRows& PgRows::operator=(PgRows&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}
PgRows::~PgRows() {
  if (r_ != nullptr) PQclear(r_);
}
int PgRows::size() const { return r_ != nullptr ? PQntuples(r_) : 0; }
bool PgRows::IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string PgRows::Text(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}
int64_t PgRows::Int(int row, int col) const {
  return IsNull(row, col) ? 0 : std::strtoll(PQgetvalue(r_, row, col), nullptr, 10);
}
std::optional<int64_t> PgRows::OptInt(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Int(row, col);
}

std::string DescribeConnInfo(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &error);
  if (opts == nullptr) {
    const std::string why = OneLine(error);
    PQfreemem(error);
    return "postgres (unreadable connection string: " + why + ")";
  }
  std::string host = "localhost", port = "5432", db;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr || *o->val == '\0') continue;
    if (std::strcmp(o->keyword, "host") == 0 || (std::strcmp(o->keyword, "hostaddr") == 0 && host == "localhost")) {
      host = o->val;
    }
    if (std::strcmp(o->keyword, "port") == 0) port = o->val;
    if (std::strcmp(o->keyword, "dbname") == 0) db = o->val;
  }
  PQconninfoFree(opts);
  return "postgres " + host + ":" + port + (db.empty() ? "" : "/" + db);
}

StatusOr<PgConn> PgConn::Connect(const std::string& conninfo, int connect_timeout_s) {
  // Ours first: the connection string's own settings, expanded from
  // "dbname" last, override them. Keepalives notice a server that vanished
  // without closing the connection (a lost machine or network) in about
  // ten seconds instead of the system's two hours. Of several hosts, the
  // one that takes writes (after a failover of the database, the promoted
  // replica), unless the string says otherwise.
  const std::string timeout = std::to_string(connect_timeout_s);
  const char* keys[] = {"connect_timeout",  "keepalives",
                        "keepalives_idle",  "keepalives_interval",
                        "keepalives_count", "tcp_user_timeout",
                        "application_name", "target_session_attrs",
                        "dbname",           nullptr};
  const char* values[] = {timeout.c_str(),  "1",    "5", "2", "3", "10000", "muster", "read-write",
                          conninfo.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (c == nullptr) return Unavailable("cannot connect to " + DescribeConnInfo(conninfo) + ": out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why = OneLine(PQerrorMessage(c));
    PQfinish(c);
    return Unavailable("cannot connect to " + DescribeConnInfo(conninfo) + ": " + why);
  }
  return PgConn(c);
}

PgConn::PgConn(PGconn* c) : conn_(c) {
  const char* db = PQdb(c);
  where_ = std::string(PQhost(c)) + ":" + PQport(c) + "/" + (db != nullptr ? db : "");
  PQsetNoticeProcessor(
      c, [](void*, const char*) {}, nullptr);  // NOTICEs (IF NOT EXISTS...) are not errors
}
PgConn::PgConn(PgConn&& o) noexcept : conn_(o.conn_), where_(std::move(o.where_)) { o.conn_ = nullptr; }
PgConn& PgConn::operator=(PgConn&& o) noexcept {
  if (this != &o) {
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = o.conn_;
    where_ = std::move(o.where_);
    o.conn_ = nullptr;
  }
  return *this;
}
PgConn::~PgConn() {
  if (conn_ != nullptr) PQfinish(conn_);
}

bool PgConn::ok() const { return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK; }

Status PgConn::Error(const PGresult* r, const std::string& what) const {
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = OneLine(r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
  if (message.empty()) message = OneLine(PQerrorMessage(conn_));
  const std::string text = "postgres " + where_ + ": " + what + ": " + message;
  const std::string code = state != nullptr ? state : "";
  if (code == "MU001") return Fenced(message);
  if (code == "23505") return Status(StatusCode::kAlreadyExists, text);
  // Class 08: the connection; 57P0x: the server shutting down or starting;
  // 25006: a read-only server (a replica, or a primary demoted under us);
  // 40001/40P01: a conflict worth retrying.
  if (code.empty() || code.rfind("08", 0) == 0 || code.rfind("57P0", 0) == 0 || code == "25006" || code == "40001" ||
      code == "40P01" || !ok()) {
    return Unavailable(text);
  }
  return Internal(text);
}

Status PgConn::Exec(const std::string& sql) {
  PGresult* r = PQexec(conn_, sql.c_str());
  const ExecStatusType st = PQresultStatus(r);
  Status s = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? Status::Ok() : Error(r, "query failed");
  PQclear(r);
  return s;
}

StatusOr<PgRows> PgConn::Query(const std::string& sql, const PgParams& params) {
  const std::vector<const char*> p = params.Pointers();
  return Rows(PQexecParams(conn_, sql.c_str(), params.size(), nullptr, p.data(), nullptr, nullptr, 0));
}

StatusOr<PgRows> PgConn::Rows(PGresult* r) const {
  const ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    Status s = Error(r, "query failed");
    PQclear(r);
    return s;
  }
  return PgRows(r);
}

void PgConn::Drop() {
  PQfinish(conn_);
  conn_ = nullptr;
}

StatusOr<PgRows> PgConn::QueryWithin(const std::string& sql, const PgParams& params,
                                     std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  auto gone = [&](const std::string& what) -> Status {
    const Status s = Unavailable("postgres " + where_ + ": " + what);
    Drop();
    return s;
  };
  // Waits until the socket is ready for `events`, or the deadline.
  auto wait = [&](short events) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{PQsocket(conn_), events, 0};
    return ::poll(&p, 1, static_cast<int>(left)) > 0;
  };
  const std::vector<const char*> p = params.Pointers();
  if (PQsetnonblocking(conn_, 1) != 0 ||
      PQsendQueryParams(conn_, sql.c_str(), params.size(), nullptr, p.data(), nullptr, nullptr, 0) != 1) {
    return gone("cannot send a query: " + OneLine(PQerrorMessage(conn_)));
  }
  for (int flushed = PQflush(conn_); flushed != 0; flushed = PQflush(conn_)) {
    if (flushed < 0 || !wait(POLLOUT)) return gone("no answer within " + std::to_string(timeout.count()) + " ms");
  }
  while (PQisBusy(conn_)) {
    if (!wait(POLLIN)) return gone("no answer within " + std::to_string(timeout.count()) + " ms");
    if (PQconsumeInput(conn_) != 1) return gone("the connection ended: " + OneLine(PQerrorMessage(conn_)));
  }
  PGresult* last = nullptr;
  for (PGresult* r = PQgetResult(conn_); r != nullptr; r = PQgetResult(conn_)) {
    if (last != nullptr) PQclear(last);
    last = r;
  }
  PQsetnonblocking(conn_, 0);
  return Rows(last);
}

Status PgConn::ExecAtomically(const std::vector<std::pair<std::string, PgParams>>& statements) {
  if (PQenterPipelineMode(conn_) != 1) return Error(nullptr, "cannot start a pipeline");
  Status first_error;
  bool sent = true;
  for (const auto& [sql, params] : statements) {
    const std::vector<const char*> p = params.Pointers();
    if (PQsendQueryParams(conn_, sql.c_str(), params.size(), nullptr, p.data(), nullptr, nullptr, 0) != 1) {
      sent = false;
      break;
    }
  }
  if (!sent || PQpipelineSync(conn_) != 1) {
    first_error = Error(nullptr, "cannot send a commit");
    // Nothing was synced: the server runs none of it. The connection is
    // not reusable in this state.
    Drop();
    return first_error;
  }
  // Each statement's results end with a null; the sync ends the pipeline.
  // The commit happened only if the sync arrives with no error before it.
  bool synced = false;
  for (size_t i = 0; i <= statements.size() && !synced;) {
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) {
      if (!ok()) break;  // the connection is gone
      ++i;
      continue;
    }
    const ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_PIPELINE_SYNC) {
      synced = true;
    } else if (st == PGRES_FATAL_ERROR && first_error.ok()) {
      first_error = Error(r, "commit failed");
    }
    PQclear(r);
  }
  if (!synced) {
    Status lost = Unavailable("postgres " + where_ + ": the connection ended during a commit (" +
                              OneLine(PQerrorMessage(conn_)) + "); whether it committed is unknown");
    Drop();
    return lost;
  }
  PQexitPipelineMode(conn_);
  return first_error;
}

}  // namespace muster::store
