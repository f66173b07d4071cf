// PgLease: the LeaderLease on PostgreSQL, one row of the `leader` table
// (pg_schema.cc, migration 2).
//
// Why a lease row and not an advisory lock: the epoch it carries is what
// fences writes (muster_fence), and a row is replicated, so the epoch
// survives a failover of the database where a lock would vanish; its
// expiry bounds how long a leader cut off from the database can hold it
// (an advisory lock lasts as long as the server believes the session is
// alive); and it works through poolers that do not keep a session. The
// fast path of a lock is kept: the row names the holder's backend session,
// and a lease whose session has ended (its server died, its connection
// closed) is void at once.
//
// Every statement is one atomic UPDATE ... RETURNING on the row, so two
// standbys that try at once cannot both take it.
#pragma once

#include <memory>
#include <string>

#include "store/leader_lease.h"
#include "store/pg/pg_conn.h"

namespace muster::store {

class PgLease final : public LeaderLease {
 public:
  // Its own connection: renewals never wait behind the store's commits.
  static StatusOr<std::unique_ptr<PgLease>> Open(const std::string& conninfo);

  StatusOr<std::optional<int64_t>> TryAcquire(const std::string& id, const std::string& address,
                                              Duration length) override;
  Status Renew(int64_t epoch, Duration length) override;
  StatusOr<LeaseHolder> Current() override;
  Status Release(int64_t epoch) override;

 private:
  explicit PgLease(std::string conninfo) : conninfo_(std::move(conninfo)) {}
  // The connection, reconnected when it broke.
  StatusOr<PgConn*> Conn();
  StatusOr<PgRows> Query(const std::string& sql, const PgParams& params);

  const std::string conninfo_;
  PgConn conn_;
};

}  // namespace muster::store
