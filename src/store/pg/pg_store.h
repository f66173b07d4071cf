// PgStore: the Store on PostgreSQL (libpq), for several servers on one
// database (high availability) or a site that runs PostgreSQL anyway.
//
// Chosen by URL (open_store.h): `--store postgres://user@host/db`, any
// libpq connection string, multi-host included; `target_session_attrs`
// defaults to read-write, so after the database fails over the store
// reconnects to whichever host is the primary now.
//
// Durability: a commit returns once PostgreSQL committed it (its
// synchronous_commit; with a synchronous replica, once the replica has it).
// A group of batches is one transaction sent in one round trip: each table
// gets one statement whose rows are arrays (unnest), whatever the number of
// batches, and the statements go as one pipeline with one sync.
//
// Fencing: after FenceWrites(epoch), every commit first calls
// muster_fence(epoch) (pg_schema.cc), in the same transaction: a commit of
// a leader whose lease another server has taken fails with IsFenced() and
// changes nothing. Job rows and events record the epoch that wrote them.
//
// Connections: one for writes (serialized by a mutex; the StoreWriter
// batches them), a small pool for reads. A read is retried once on a new
// connection. A commit that failed for the connection (it broke, possibly
// after the commit happened; the server is shutting down or read-only, as
// during a failover of the database) is retried on a new connection for up
// to kCommitRetryWindow: each commit also records its number in
// writer_progress under this store's own id, and a retry first reads that
// number, so a commit that did happen is not applied twice.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "store/pg/pg_conn.h"
#include "store/store.h"

namespace muster::store {

class PgStore final : public Store {
 public:
  static constexpr std::chrono::seconds kCommitRetryWindow{10};

  // Connects, refuses a database that is another program's or has a newer
  // schema, and applies the migrations in pg_schema.cc.
  static StatusOr<std::unique_ptr<PgStore>> Open(const std::string& conninfo);
  ~PgStore() override;

  Status Commit(const std::vector<const WriteBatch*>& batches) override;
  void FenceWrites(int64_t epoch) override;
  StatusOr<std::vector<JobRow>> LoadJobs(bool include_terminal) override;
  StatusOr<std::optional<JobRow>> GetJob(int64_t id) override;
  StatusOr<JobPage> ListJobs(const JobFilter& filter, int64_t after_id, int32_t limit) override;
  StatusOr<JobSummaryPage> ListJobSummaries(const JobFilter& filter, int64_t after_id, int32_t limit) override;
  StatusOr<std::vector<EventRow>> ListEvents(int64_t job_id, int64_t after_seq, int32_t limit) override;
  StatusOr<std::vector<IdempotencyRow>> LoadIdempotency(int64_t created_after_ms) override;
  StatusOr<std::optional<IdempotencyRow>> GetIdempotency(const std::string& principal, const std::string& key) override;
  StatusOr<std::vector<NodeRow>> ListNodes() override;
  StatusOr<std::optional<std::string>> GetMeta(const std::string& key) override;
  StatusOr<std::vector<CheckpointRow>> ListCheckpoints(int64_t job_id) override;
  StatusOr<std::vector<CheckpointRow>> LoadLiveCheckpoints() override;
  StatusOr<std::vector<TokenRow>> ListTokens() override;
  StatusOr<std::vector<AuditRow>> ListAudit(const AuditFilter& filter, int64_t after_seq, int32_t limit) override;
  StatusOr<int64_t> MaxJobId() override;
  StatusOr<int64_t> CountJobs() override;
  StatusOr<JobChanges> JobsChangedSince(int64_t rev, int32_t limit) override;

  // The schema version this binary writes.
  static int LatestSchemaVersion();
  // The server and database, for messages (no password).
  const std::string& description() const { return description_; }

 private:
  PgStore(std::string conninfo, PgConn writer);

  // Runs `fn(PgConn&)` on a pooled read connection; once more on a fresh
  // one when the first was broken.
  template <typename T, typename Fn>
  StatusOr<T> WithReader(Fn fn);

  const std::string conninfo_;
  const std::string description_;
  std::atomic<int64_t> fence_{0};  // 0: not fenced
  const std::string writer_id_;    // this store's row in writer_progress
  Mutex write_mu_;
  PgConn writer_ GUARDED_BY(write_mu_);
  int64_t commit_seq_ GUARDED_BY(write_mu_) = 0;
  Mutex read_mu_;
  std::vector<PgConn> readers_ GUARDED_BY(read_mu_);  // idle read connections
};

// Applies every migration newer than the database's version. `what` names
// the store in errors. Exposed for tests.
Status MigratePostgres(PgConn& db, const std::string& what);

}  // namespace muster::store
