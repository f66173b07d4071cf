// SqliteStore: the embedded default Store, one SQLite file in WAL mode.
//
// Durability: synchronous=FULL, so a committed transaction survives power
// loss as well as a kill -9. Writes go through one connection (serialized
// by a mutex; the StoreWriter batches them); reads use a small pool of
// read-only connections, which WAL lets run beside the writer.
//
// Open() takes the store's lock (store_lock.h: one process at a time),
// creates the file if needed, checks that it is a healthy SQLite database
// (PRAGMA quick_check) and applies the schema migrations in migrations.cc.
// A damaged, foreign or empty file is an error naming the file: the server
// refuses to start rather than begin again empty. So is a store that lost
// jobs it had acknowledged (its -wal deleted, an older copy, or the file
// gone): high_water.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "store/sqlite/high_water.h"
#include "store/sqlite/sqlite_db.h"
#include "store/sqlite/store_lock.h"
#include "store/store.h"

namespace muster::store {

class SqliteStore final : public Store {
 public:
  static StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path);
  ~SqliteStore() override;

  Status Commit(const std::vector<const WriteBatch*>& batches) override;
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

  // The schema version this binary writes.
  static int LatestSchemaVersion();

 private:
  SqliteStore(StoreLock lock, Db writer, HighWater high_water);

  // Runs `fn(Db&)` on a pooled read connection.
  template <typename Fn>
  auto WithReader(Fn fn) -> decltype(fn(std::declval<Db&>()));

  // The writer's prepared statements, made once (guarded by write_mu_).
  struct WriteStatements;
  Status PrepareWrites() REQUIRES(write_mu_);

  StoreLock lock_;          // first member: released after every connection is closed
  const std::string path_;  // the store's file, for read connections
  Mutex write_mu_;
  Db writer_ GUARDED_BY(write_mu_);
  std::unique_ptr<WriteStatements> writes_ GUARDED_BY(write_mu_);
  HighWater high_water_ GUARDED_BY(write_mu_);
  Mutex read_mu_;
  std::vector<Db> readers_ GUARDED_BY(read_mu_);  // idle read connections
};

// Applies every migration newer than the file's version. Exposed for tests.
Status MigrateSqlite(Db& db);

}  // namespace muster::store
