#include "store/pg/pg_lease.h"

#include "store/store.h"

namespace muster::store {
namespace {

// The holder's session is still there. pid and start time together: a pid
// is reused. A role that may not see another's start time sees NULL, and
// then the pid alone decides.
constexpr const char* kHolderAlive =
    "EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = leader.pid AND "
    "(a.backend_start IS NULL OR a.backend_start = leader.backend_start))";

constexpr const char* kMySession =
    "pid = pg_backend_pid(), backend_start = (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())";

}  // namespace

StatusOr<std::unique_ptr<PgLease>> PgLease::Open(const std::string& conninfo) {
  auto lease = std::unique_ptr<PgLease>(new PgLease(conninfo));
  RETURN_IF_ERROR(lease->Conn().status());
  return lease;
}

StatusOr<PgConn*> PgLease::Conn() {
  if (!conn_.ok()) {
    ASSIGN_OR_RETURN(conn_, PgConn::Connect(conninfo_));
  }
  return &conn_;
}

StatusOr<PgRows> PgLease::Query(const std::string& sql, const PgParams& params) {
  ASSIGN_OR_RETURN(PgConn * conn, Conn());
  // Bounded: a leader must see its lease run out while the database is
  // silent, not wait on it.
  return conn->QueryWithin(sql, params, std::chrono::seconds(2));
}

StatusOr<std::optional<int64_t>> PgLease::TryAcquire(const std::string& id, const std::string& address,
                                                     Duration length) {
  ASSIGN_OR_RETURN(PgRows r,
                   Query(std::string("UPDATE leader SET epoch = epoch + 1, holder = $1, address = $2, ") + kMySession +
                             ", acquired_at = clock_timestamp(), "
                             "expires_at = clock_timestamp() + $3 * interval '1 millisecond' "
                             "WHERE id = 1 AND (expires_at <= clock_timestamp() OR NOT " +
                             kHolderAlive + ") RETURNING epoch",
                         PgParams().Add(id).Add(address).Add(length.millis())));
  if (r.size() == 0) return std::optional<int64_t>();
  return std::optional<int64_t>(r.Int(0, 0));
}

Status PgLease::Renew(int64_t epoch, Duration length) {
  // The session is recorded again: after a reconnect it is a new one.
  ASSIGN_OR_RETURN(PgRows r, Query(std::string("UPDATE leader SET expires_at = clock_timestamp() + $2 * interval "
                                               "'1 millisecond', ") +
                                       kMySession + " WHERE id = 1 AND epoch = $1 RETURNING epoch",
                                   PgParams().Add(epoch).Add(length.millis())));
  if (r.size() == 0) {
    return Fenced("the lease of epoch " + std::to_string(epoch) + " was taken by a newer leader");
  }
  return Status::Ok();
}

StatusOr<LeaseHolder> PgLease::Current() {
  ASSIGN_OR_RETURN(
      PgRows r, Query(std::string("SELECT epoch, holder, address, expires_at > clock_timestamp() AND ") + kHolderAlive +
                          ", CASE WHEN isfinite(expires_at) THEN GREATEST(0, (EXTRACT(EPOCH FROM "
                          "expires_at - clock_timestamp()) * 1000)::bigint) ELSE 0 END "
                          "FROM leader WHERE id = 1",
                      PgParams()));
  if (r.size() == 0) return DataLoss("the leader row of the store is missing");
  LeaseHolder h;
  h.epoch = r.Int(0, 0);
  h.id = r.Text(0, 1);
  h.address = r.Text(0, 2);
  h.valid = r.Text(0, 3) == "t";
  h.remaining = Duration::Millis(h.valid ? r.Int(0, 4) : 0);
  return h;
}

Status PgLease::Release(int64_t epoch) {
  return Query("UPDATE leader SET expires_at = '-infinity', pid = 0 WHERE id = 1 AND epoch = $1", PgParams().Add(epoch))
      .status();
}

}  // namespace muster::store
