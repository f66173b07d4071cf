// Versioned schema of the SQLite store. Append a migration; never edit one
// that has shipped. Each runs in its own transaction with its version row.
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace muster::store {
namespace {

const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> kMigrations = {
      // 1: jobs, their events, idempotency keys, nodes, key-value metadata.
      R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  user TEXT NOT NULL,
  queue TEXT NOT NULL,
  priority_class TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL,
  submit_ms INTEGER NOT NULL,
  start_ms INTEGER,
  end_ms INTEGER,
  attempts INTEGER NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL
) STRICT;
CREATE INDEX jobs_by_state ON jobs(state, id);
CREATE INDEX jobs_by_queue ON jobs(queue, id);
CREATE INDEX jobs_by_user ON jobs(user, id);
CREATE INDEX jobs_by_name ON jobs(name, id);
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  type TEXT NOT NULL,
  reason TEXT NOT NULL,
  message TEXT NOT NULL
) STRICT;
CREATE INDEX events_by_job ON events(job_id, seq);
CREATE TABLE idempotency (
  principal TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  job_id INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (principal, key)
) STRICT;
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  state TEXT NOT NULL,
  updated_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;
)sql",
      // 2: the checkpoint catalog.
      R"sql(
CREATE TABLE checkpoints (
  job_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  step INTEGER NOT NULL,
  location TEXT NOT NULL,
  manifest_sha256 TEXT NOT NULL,
  files INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  state TEXT NOT NULL,
  note TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, seq)
) STRICT;
)sql",
      // 3: bearer tokens (their secrets' digests) and the audit log.
      R"sql(
CREATE TABLE tokens (
  id TEXT PRIMARY KEY,
  secret_sha256 TEXT NOT NULL,
  user TEXT NOT NULL,
  node TEXT NOT NULL,
  description TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  revoked_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE audit (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms INTEGER NOT NULL,
  actor TEXT NOT NULL,
  as_user TEXT NOT NULL,
  via TEXT NOT NULL,
  remote TEXT NOT NULL,
  action TEXT NOT NULL,
  object TEXT NOT NULL,
  outcome TEXT NOT NULL,
  detail TEXT NOT NULL
) STRICT;
CREATE INDEX audit_by_actor ON audit(actor, seq);
CREATE INDEX audit_by_object ON audit(object, seq);
)sql",
  };
  return kMigrations;
}

}  // namespace

int SqliteStore::LatestSchemaVersion() { return static_cast<int>(Migrations().size()); }

Status MigrateSqlite(Db& db) {
  RETURN_IF_ERROR(db.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY) STRICT"));
  ASSIGN_OR_RETURN(Stmt q, db.Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
  ASSIGN_OR_RETURN(bool has_row, q.Step());
  const int64_t current = has_row ? q.Int(0) : 0;
  q.Reset();  // a statement left open would lock the tables a migration drops
  const int64_t latest = SqliteStore::LatestSchemaVersion();
  if (current > latest) {
    return FailedPrecondition("store " + db.path() + " has schema version " + std::to_string(current) +
                              ", newer than this muster understands (" + std::to_string(latest) +
                              "); use a newer muster");
  }
  for (int64_t v = current + 1; v <= latest; ++v) {
    RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
    Status s = db.Exec(Migrations()[v - 1]);
    if (s.ok()) s = db.Exec("INSERT INTO schema_migrations(version) VALUES (" + std::to_string(v) + ")");
    if (!s.ok()) {
      (void)db.Exec("ROLLBACK");
      return Status(s.code(), "migration " + std::to_string(v) + ": " + s.message());
    }
    RETURN_IF_ERROR(db.Exec("COMMIT"));
  }
  return Status::Ok();
}

}  // namespace muster::store
