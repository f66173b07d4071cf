// Versioned schema of the PostgreSQL store. Append a migration; never edit
// one that has shipped. The pending ones run in one transaction with their
// version rows, under a transaction-level advisory lock, so that several
// servers starting at once on one database migrate it once.
#include <string>
#include <vector>

#include "store/pg/pg_store.h"

namespace muster::store {
namespace {

// Any fixed number: the advisory lock that serializes migrations.
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(7305611950275541)";

const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> kMigrations = {
      // 1: jobs, their events, idempotency keys, nodes, key-value metadata,
      // the checkpoint catalog. `epoch` is the leader epoch that wrote a
      // job row or an event (0 before leaders existed).
      R"sql(
CREATE TABLE jobs (
  id BIGINT PRIMARY KEY,
  name TEXT NOT NULL,
  "user" TEXT NOT NULL,
  queue TEXT NOT NULL,
  priority_class TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL,
  submit_ms BIGINT NOT NULL,
  start_ms BIGINT,
  end_ms BIGINT,
  attempts INTEGER NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL,
  epoch BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX jobs_by_state ON jobs(state, id);
CREATE INDEX jobs_by_queue ON jobs(queue, id);
CREATE INDEX jobs_by_user ON jobs("user", id);
CREATE INDEX jobs_by_name ON jobs(name, id);
CREATE INDEX jobs_live ON jobs(id) WHERE end_ms IS NULL;
CREATE TABLE events (
  seq BIGSERIAL PRIMARY KEY,
  job_id BIGINT NOT NULL,
  time_ms BIGINT NOT NULL,
  type TEXT NOT NULL,
  reason TEXT NOT NULL,
  message TEXT NOT NULL,
  epoch BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX events_by_job ON events(job_id, seq);
CREATE TABLE idempotency (
  principal TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  job_id BIGINT NOT NULL,
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (principal, key)
);
CREATE INDEX idempotency_by_time ON idempotency(created_ms);
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  state TEXT NOT NULL,
  updated_ms BIGINT NOT NULL
);
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE checkpoints (
  job_id BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  attempt INTEGER NOT NULL,
  step BIGINT NOT NULL,
  location TEXT NOT NULL,
  manifest_sha256 TEXT NOT NULL,
  files BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  state TEXT NOT NULL,
  note TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (job_id, seq)
);
)sql",
      // 2: the leader lease (pg_lease.h) and the write fence. One row: the
      // current epoch, who holds it, its backend session (a lease whose
      // session is gone is void at once), and when it expires on the
      // database's clock. muster_fence() runs first in every commit of a
      // leader: it share-locks the row, so a takeover waits for a commit
      // in flight and a commit after a takeover sees the new epoch and
      // fails (SQLSTATE MU001) before it changes anything. writer_progress:
      // each store's last commit, which tells whether a commit whose
      // connection broke before its answer happened (pg_store.h).
      R"sql(
CREATE TABLE leader (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch BIGINT NOT NULL,
  holder TEXT NOT NULL,
  address TEXT NOT NULL,
  pid INTEGER NOT NULL,
  backend_start TIMESTAMPTZ,
  acquired_at TIMESTAMPTZ,
  expires_at TIMESTAMPTZ NOT NULL
);
INSERT INTO leader VALUES (1, 0, '', '', 0, NULL, NULL, '-infinity');
CREATE TABLE writer_progress (
  writer TEXT PRIMARY KEY,
  seq BIGINT NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE FUNCTION muster_fence(writer BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  current_epoch BIGINT;
BEGIN
  SELECT epoch INTO current_epoch FROM leader WHERE id = 1 FOR SHARE;
  IF current_epoch IS DISTINCT FROM writer THEN
    RAISE EXCEPTION 'a write of leader epoch % was refused: epoch % holds the lease now', writer, current_epoch
      USING ERRCODE = 'MU001';
  END IF;
END
$$;
)sql",
      // 3: a change number on every job row, from one sequence: a standby
      // follows the store by reading the rows changed since the last it
      // saw (PgStore::JobsChangedSince). One writer at a time (the fence)
      // makes the numbers' order the commits' order.
      R"sql(
CREATE SEQUENCE jobs_rev;
ALTER TABLE jobs ADD COLUMN rev BIGINT NOT NULL DEFAULT nextval('jobs_rev');
CREATE INDEX jobs_by_rev ON jobs(rev);
)sql",
      // 4: bearer tokens (their secrets' digests) and the audit log.
      R"sql(
CREATE TABLE tokens (
  id TEXT PRIMARY KEY,
  secret_sha256 TEXT NOT NULL,
  "user" TEXT NOT NULL,
  node TEXT NOT NULL,
  description TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL,
  revoked_ms BIGINT NOT NULL
);
CREATE TABLE audit (
  seq BIGSERIAL PRIMARY KEY,
  time_ms BIGINT NOT NULL,
  actor TEXT NOT NULL,
  as_user TEXT NOT NULL,
  via TEXT NOT NULL,
  remote TEXT NOT NULL,
  action TEXT NOT NULL,
  object TEXT NOT NULL,
  outcome TEXT NOT NULL,
  detail TEXT NOT NULL,
  epoch BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX audit_by_actor ON audit(actor, seq);
CREATE INDEX audit_by_object ON audit(object, seq);
)sql",
  };
  return kMigrations;
}

}  // namespace

int PgStore::LatestSchemaVersion() { return static_cast<int>(Migrations().size()); }

Status MigratePostgres(PgConn& db, const std::string& what) {
  RETURN_IF_ERROR(db.Exec("BEGIN"));
  auto body = [&]() -> Status {
    RETURN_IF_ERROR(db.Exec(kMigrationLock));
    // A database that holds tables, none of them ours, is another program's.
    ASSIGN_OR_RETURN(PgRows tables, db.Query("SELECT string_agg(table_name, ', ' ORDER BY table_name), "
                                             "COUNT(*) FILTER (WHERE table_name = 'schema_migrations') "
                                             "FROM information_schema.tables WHERE table_schema = current_schema()"));
    if (tables.Int(0, 1) == 0 && !tables.IsNull(0, 0)) {
      return FailedPrecondition("store " + what + " is not a Muster store (its tables: " +
                                tables.Text(0, 0).substr(0, 200) + "); give the server another database");
    }
    RETURN_IF_ERROR(db.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)"));
    ASSIGN_OR_RETURN(PgRows q, db.Query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
    const int64_t current = q.Int(0, 0);
    const int64_t latest = PgStore::LatestSchemaVersion();
    if (current > latest) {
      return FailedPrecondition("store " + what + " has schema version " + std::to_string(current) +
                                ", newer than this muster understands (" + std::to_string(latest) +
                                "); use a newer muster");
    }
    for (int64_t v = current + 1; v <= latest; ++v) {
      Status s = db.Exec(Migrations()[v - 1]);
      if (s.ok()) s = db.Exec("INSERT INTO schema_migrations(version) VALUES (" + std::to_string(v) + ")");
      if (!s.ok()) return Status(s.code(), "migration " + std::to_string(v) + ": " + s.message());
    }
    return Status::Ok();
  };
  Status s = body();
  if (!s.ok()) {
    (void)db.Exec("ROLLBACK");
    return s;
  }
  return db.Exec("COMMIT");
}

}  // namespace muster::store
