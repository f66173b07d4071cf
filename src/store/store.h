// Store: the durable record of the cluster, behind one interface that every
// backend implements: SQLite (the embedded default) and PostgreSQL (several
// servers, high availability). open_store.h picks one by URL.
//
// The control loop is the only writer. It builds WriteBatches and hands them
// to a StoreWriter (store_writer.h), which commits several at once in one
// transaction (group commit) and only then lets the loop acknowledge them.
// Readers (API threads) call the query methods directly; a backend serves
// them from its own connections without blocking the writer.
//
// Contract for every backend (checked by store/conformance_test.cc):
//  - Commit() is atomic and durable: when it returns OK every row of every
//    batch is on stable storage; when it returns an error none is.
//  - Jobs and nodes are upserted by key; events are appended and get a
//    store-assigned increasing `seq`; an idempotency row whose (principal,
//    key) already exists fails the commit with kAlreadyExists.
//  - Queries see every committed write.
//  - A damaged or foreign file fails Open with kDataLoss naming the file; a
//    schema newer than this binary fails with kFailedPrecondition.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/label_selector.h"

namespace muster::store {

struct JobRow {
  int64_t id = 0;
  std::string name;
  std::string user;
  std::string queue;
  std::string priority_class;
  std::string state;   // core::JobStateName(), e.g. "PENDING"
  std::string reason;  // pending reason code, or why it ended
  int64_t submit_ms = 0;
  std::optional<int64_t> start_ms;
  std::optional<int64_t> end_ms;  // set exactly when the job is in a terminal state
  int32_t attempts = 0;
  std::string spec_json;           // the canonical job spec
  std::string status_json = "{}";  // placement and other status detail

  bool operator==(const JobRow&) const = default;
};

struct EventRow {
  int64_t seq = 0;  // assigned by the store on commit
  int64_t job_id = 0;
  int64_t time_ms = 0;
  std::string type;  // e.g. "Submitted", "Started", "Completed"
  std::string reason;
  std::string message;

  bool operator==(const EventRow&) const = default;
};

struct IdempotencyRow {
  std::string principal;
  std::string key;
  std::string fingerprint;  // SHA-256 of the canonical request
  int64_t job_id = 0;
  int64_t created_ms = 0;

  bool operator==(const IdempotencyRow&) const = default;
};

struct NodeRow {
  std::string name;
  std::string spec_json;
  std::string state;
  int64_t updated_ms = 0;

  bool operator==(const NodeRow&) const = default;
};

// One entry of the checkpoint catalog (manifest.h describes a checkpoint
// on storage). Upserted by (job_id, seq).
struct CheckpointRow {
  int64_t job_id = 0;
  int64_t seq = 0;       // 1, 2, ... per job, in commit order
  int32_t attempt = 0;   // the attempt that wrote it
  int64_t step = 0;      // the job's own step counter
  std::string location;  // where it is (a directory for the directory store)
  std::string manifest_sha256;
  int64_t files = 0;
  int64_t bytes = 0;
  std::string state;  // "COMMITTED", "CORRUPT" (failed verification), "REMOVED" (retention)
  std::string note;   // why it is CORRUPT or what removal said
  int64_t created_ms = 0;

  bool operator==(const CheckpointRow&) const = default;
};

// A bearer token's record (auth/token.h). The token itself is never
// stored: only its secret's SHA-256. Upserted by id (a revocation rewrites
// the row).
struct TokenRow {
  std::string id;  // the token's public id (16 hex digits)
  std::string secret_sha256;
  std::string user;  // whom it authenticates ("" for a node's)
  std::string node;  // a node's credential: that node's agent only
  std::string description;
  std::string created_by;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // 0: never
  int64_t revoked_ms = 0;  // 0: not revoked

  bool operator==(const TokenRow&) const = default;
};

// One authenticated change, or one refusal, for the audit log. Appended;
// `seq` is assigned by the store.
struct AuditRow {
  int64_t seq = 0;
  int64_t time_ms = 0;
  std::string actor;    // who authenticated ("alice", "node/n1")
  std::string as_user;  // on whose behalf an admin acted ("" = themselves)
  std::string via;      // "munge", "token 3f2a...", "job 12", "node n1"
  std::string remote;   // the client's address
  std::string action;   // "submit", "cancel", "token.create", ...
  std::string object;   // "job/12", "node/n1", "token/3f2a..."
  std::string outcome;  // "ok", or the refusal's code ("Forbidden")
  std::string detail;

  bool operator==(const AuditRow&) const = default;
};

struct AuditFilter {
  std::string actor;  // empty = all
  std::string object;
};

struct WriteBatch {
  std::vector<JobRow> jobs;  // upsert by id
  // Only the reason of existing jobs (applied after `jobs`); cheaper than
  // rewriting the row when a pending job's reason code changes.
  std::vector<std::pair<int64_t, std::string>> reasons;
  std::vector<EventRow> events;                           // append
  std::vector<IdempotencyRow> idempotency;                // insert, unique by (principal, key)
  std::vector<NodeRow> nodes;                             // upsert by name
  std::vector<std::string> removed_nodes;                 // delete by name (after `nodes`)
  std::vector<std::pair<std::string, std::string>> meta;  // upsert by key
  std::vector<CheckpointRow> checkpoints;                 // upsert by (job_id, seq)
  std::vector<TokenRow> tokens;                           // upsert by id
  std::vector<AuditRow> audit;                            // append

  bool empty() const {
    return jobs.empty() && reasons.empty() && events.empty() && idempotency.empty() && nodes.empty() &&
           removed_nodes.empty() && meta.empty() && checkpoints.empty() && tokens.empty() && audit.empty();
  }
};

struct JobFilter {
  std::vector<std::string> states;  // any of these; empty = all
  std::string queue;                // empty = all
  std::string user;
  std::string name;
  // Spec labels, all of which must hold (label_selector.h).
  std::vector<LabelRequirement> labels;
  // A time window (accounting, history): jobs not ended before
  // `active_from_ms` (still open, or ended at or after it) and submitted
  // before `submitted_before_ms`. Unset: no bound.
  std::optional<int64_t> active_from_ms;
  std::optional<int64_t> submitted_before_ms;
  // Newest first (descending ids): a page's `after_id` then means the ids
  // below it (0: from the newest), and its next_after_id continues so.
  bool newest_first = false;
};

struct JobPage {
  std::vector<JobRow> items;
  int64_t next_after_id = 0;  // pass back to continue; 0 = no more
};

// A job as a list shows it: the row's columns and the few spec and status
// fields a table needs, without the whole spec (a listing of 100,000 jobs
// reads and sends a sixth of the bytes).
struct JobSummary {
  int64_t id = 0;
  std::string name, user, queue, priority_class, state, reason;
  int64_t submit_ms = 0;
  std::optional<int64_t> start_ms, end_ms;
  int64_t gpus = 0;                // per replica: the spec's resources.gpus
  int64_t replicas = 1;            // the spec's replicas
  std::vector<std::string> nodes;  // the nodes of its allocations (status), in order

  bool operator==(const JobSummary&) const = default;
};

struct JobSummaryPage {
  std::vector<JobSummary> items;
  int64_t next_after_id = 0;
};

// Job rows changed after a change number, in the order they changed.
struct JobChanges {
  std::vector<JobRow> rows;  // each row as it is now
  int64_t rev = 0;           // the last change read: pass it back for the next ones
};

// A write refused because a newer leader holds the lease (leader_lease.h).
inline Status Fenced(const std::string& why) { return FailedPrecondition("fenced: " + why); }
inline bool IsFenced(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition && s.message().rfind("fenced: ", 0) == 0;
}

class Store {
 public:
  virtual ~Store() = default;

  // Commits every batch in one transaction. See the contract above.
  virtual Status Commit(const std::vector<const WriteBatch*>& batches) = 0;
  // From now on every commit carries leader `epoch`, and fails (IsFenced)
  // once a newer leader took the lease (leader_lease.h). A
  // backend with one writer by construction (SQLite's file lock) has
  // nothing to fence.
  virtual void FenceWrites(int64_t epoch) {}

  // Every job, in id order (for start-up), or only non-terminal ones.
  virtual StatusOr<std::vector<JobRow>> LoadJobs(bool include_terminal) = 0;
  virtual StatusOr<std::optional<JobRow>> GetJob(int64_t id) = 0;
  // Jobs matching `filter` with id > after_id, in id order, at most `limit`.
  virtual StatusOr<JobPage> ListJobs(const JobFilter& filter, int64_t after_id, int32_t limit) = 0;
  // The same jobs and pages as ListJobs, as summaries.
  virtual StatusOr<JobSummaryPage> ListJobSummaries(const JobFilter& filter, int64_t after_id, int32_t limit) = 0;
  // A job's events (0: the cluster's) with seq > after_seq, in seq order, at most `limit`.
  virtual StatusOr<std::vector<EventRow>> ListEvents(int64_t job_id, int64_t after_seq, int32_t limit) = 0;
  virtual StatusOr<std::vector<IdempotencyRow>> LoadIdempotency(int64_t created_after_ms) = 0;
  virtual StatusOr<std::optional<IdempotencyRow>> GetIdempotency(const std::string& principal,
                                                                 const std::string& key) = 0;
  virtual StatusOr<std::vector<NodeRow>> ListNodes() = 0;
  virtual StatusOr<std::optional<std::string>> GetMeta(const std::string& key) = 0;
  // A job's checkpoints in seq order, every state.
  virtual StatusOr<std::vector<CheckpointRow>> ListCheckpoints(int64_t job_id) = 0;
  // The checkpoints of jobs not yet ended (for start-up), by job and seq.
  virtual StatusOr<std::vector<CheckpointRow>> LoadLiveCheckpoints() = 0;
  // Every token record, revoked and expired ones included, by id.
  virtual StatusOr<std::vector<TokenRow>> ListTokens() = 0;
  // Audit entries matching `filter` with seq > after_seq, in seq order, at most `limit`.
  virtual StatusOr<std::vector<AuditRow>> ListAudit(const AuditFilter& filter, int64_t after_seq, int32_t limit) = 0;
  virtual StatusOr<int64_t> MaxJobId() = 0;
  virtual StatusOr<int64_t> CountJobs() = 0;
  // The job rows changed since change `rev` (0: every row), at most
  // `limit`, for a standby that follows the store (server/job_mirror.h).
  // Only a store several servers share has a change feed; SQLite answers
  // kFailedPrecondition.
  virtual StatusOr<JobChanges> JobsChangedSince(int64_t rev, int32_t limit) {
    return FailedPrecondition("this store has no change feed (one server at a time)");
  }
};

}  // namespace muster::store
