#include "store/sqlite/sqlite_store.h"

#include <sys/stat.h>

#include <filesystem>

#include "store/paging.h"

namespace muster::store {
namespace {

constexpr const char* kJobColumns =
    "id, name, user, queue, priority_class, state, reason, submit_ms, start_ms, end_ms, attempts, "
    "spec, status";

// Columns 0 to 9, which a job's row and its summary share.
template <typename Row>
void ReadJobHead(const Stmt& s, Row& j) {
  j.id = s.Int(0);
  j.name = s.Text(1);
  j.user = s.Text(2);
  j.queue = s.Text(3);
  j.priority_class = s.Text(4);
  j.state = s.Text(5);
  j.reason = s.Text(6);
  j.submit_ms = s.Int(7);
  j.start_ms = s.OptInt(8);
  j.end_ms = s.OptInt(9);
}

JobRow ReadJob(const Stmt& s) {
  JobRow j;
  ReadJobHead(s, j);
  j.attempts = static_cast<int32_t>(s.Int(10));
  j.spec_json = s.Text(11);
  j.status_json = s.Text(12);
  return j;
}

StatusOr<std::vector<JobRow>> ReadJobs(Stmt& s) {
  std::vector<JobRow> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    out.push_back(ReadJob(s));
  }
}

Status Configure(Db& db) {
  RETURN_IF_ERROR(db.Exec("PRAGMA busy_timeout = 10000"));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  ASSIGN_OR_RETURN(StoreLock lock, StoreLock::Acquire(path));
  const bool existed = std::filesystem::exists(path);
  std::error_code size_error;
  if (existed && std::filesystem::file_size(path, size_error) == 0 && !size_error) {
    // SQLite would take it for a new database: a store truncated to nothing
    // would start the cluster again empty.
    return DataLoss("store " + path +
                    " is an empty file (a truncated store?); if it is meant to be a new store, "
                    "remove it and start again");
  }
  ASSIGN_OR_RETURN(Db db, Db::Open(path));
  RETURN_IF_ERROR(Configure(db));
  // The store holds every job's spec (secret variables included) and token
  // digests: Muster's alone, older stores included. SQLite gives the -wal
  // and -shm files it makes later the store's own mode.
  for (const std::string& f : {path, path + "-wal", path + "-shm"}) {
    struct stat st {};
    if (::stat(f.c_str(), &st) == 0 && (st.st_mode & 077) != 0) ::chmod(f.c_str(), st.st_mode & 0700);
  }
  if (existed) {
    // A foreign or damaged file fails here, before anything is written.
    auto check = db.Prepare("PRAGMA quick_check");
    if (!check.ok())
      return DataLoss("store " + path + " is not a Muster store or is damaged: " + check.status().message());
    auto row = check->Step();
    if (!row.ok()) return DataLoss("store " + path + " is not a Muster store or is damaged: " + row.status().message());
    const std::string verdict = *row ? check->Text(0) : "no answer";
    if (verdict != "ok") return DataLoss("store " + path + " is damaged: " + verdict);
    // Another program's database: tables, none of them ours.
    ASSIGN_OR_RETURN(Stmt tables, db.Prepare("SELECT group_concat(name, ', '), SUM(name = 'schema_migrations') FROM "
                                             "(SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name)"));
    ASSIGN_OR_RETURN(bool listed, tables.Step());
    if (listed && tables.OptInt(1).value_or(1) == 0) {
      return FailedPrecondition("store " + path + " is not a Muster store (its tables: " +
                                tables.Text(0).substr(0, 200) + "); give the server another file");
    }
  }
  RETURN_IF_ERROR(db.Exec("PRAGMA journal_mode = WAL"));
  // FULL: a commit is on disk before it returns. The coalescing VFS needs it too.
  RETURN_IF_ERROR(db.Exec("PRAGMA synchronous = FULL"));
  RETURN_IF_ERROR(MigrateSqlite(db));
  ASSIGN_OR_RETURN(HighWater high_water, HighWater::Open(path));
  ASSIGN_OR_RETURN(Stmt max_id, db.Prepare("SELECT COALESCE(MAX(id), 0) FROM jobs"));
  ASSIGN_OR_RETURN(bool has_max, max_id.Step());
  RETURN_IF_ERROR(high_water.Check(path, has_max ? max_id.Int(0) : 0));
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(lock), std::move(db), std::move(high_water)));
}

template <typename Fn>
auto SqliteStore::WithReader(Fn fn) -> decltype(fn(std::declval<Db&>())) {
  std::optional<Db> db;
  {
    MutexLock lock(read_mu_);
    if (!readers_.empty()) {
      db.emplace(std::move(readers_.back()));
      readers_.pop_back();
    }
  }
  if (!db) {
    auto opened = Db::Open(path_, /*read_only=*/true);
    if (!opened.ok()) return opened.status();
    if (Status s = Configure(*opened); !s.ok()) return s;
    db.emplace(std::move(*opened));
  }
  auto result = fn(*db);
  MutexLock lock(read_mu_);
  if (readers_.size() < 8) readers_.push_back(std::move(*db));
  return result;
}

struct SqliteStore::WriteStatements {
  Stmt job, reason, event, idem, node, node_removal, meta, checkpoint, token, audit;
};

SqliteStore::SqliteStore(StoreLock lock, Db writer, HighWater high_water)
    : lock_(std::move(lock)), path_(writer.path()), writer_(std::move(writer)), high_water_(std::move(high_water)) {}
SqliteStore::~SqliteStore() = default;

Status SqliteStore::PrepareWrites() {
  ASSIGN_OR_RETURN(
      Stmt job,
      writer_.Prepare("INSERT INTO jobs(id, name, user, queue, priority_class, state, reason, submit_ms, start_ms, "
                      "end_ms, attempts, spec, status) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13) "
                      "ON CONFLICT(id) DO UPDATE SET name=?2, user=?3, queue=?4, priority_class=?5, state=?6, "
                      "reason=?7, submit_ms=?8, start_ms=?9, end_ms=?10, attempts=?11, spec=?12, status=?13"));
  ASSIGN_OR_RETURN(Stmt reason, writer_.Prepare("UPDATE jobs SET reason = ?2 WHERE id = ?1"));
  ASSIGN_OR_RETURN(
      Stmt event,
      writer_.Prepare("INSERT INTO events(job_id, time_ms, type, reason, message) VALUES (?1,?2,?3,?4,?5)"));
  ASSIGN_OR_RETURN(
      Stmt idem,
      writer_.Prepare(
          "INSERT INTO idempotency(principal, key, fingerprint, job_id, created_ms) VALUES (?1,?2,?3,?4,?5)"));
  ASSIGN_OR_RETURN(Stmt node, writer_.Prepare("INSERT INTO nodes(name, spec, state, updated_ms) VALUES (?1,?2,?3,?4) "
                                              "ON CONFLICT(name) DO UPDATE SET spec=?2, state=?3, updated_ms=?4"));
  ASSIGN_OR_RETURN(Stmt node_removal, writer_.Prepare("DELETE FROM nodes WHERE name = ?1"));
  ASSIGN_OR_RETURN(
      Stmt meta,
      writer_.Prepare("INSERT INTO meta(key, value) VALUES (?1,?2) ON CONFLICT(key) DO UPDATE SET value=?2"));
  ASSIGN_OR_RETURN(
      Stmt checkpoint,
      writer_.Prepare(
          "INSERT INTO checkpoints(job_id, seq, attempt, step, location, manifest_sha256, files, bytes, state, note, "
          "created_ms) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11) ON CONFLICT(job_id, seq) DO UPDATE SET attempt=?3, "
          "step=?4, location=?5, manifest_sha256=?6, files=?7, bytes=?8, state=?9, note=?10, created_ms=?11"));
  ASSIGN_OR_RETURN(
      Stmt token,
      writer_.Prepare(
          "INSERT INTO tokens(id, secret_sha256, user, node, description, created_by, created_ms, expires_ms, "
          "revoked_ms) "
          "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9) ON CONFLICT(id) DO UPDATE SET secret_sha256=?2, user=?3, node=?4, "
          "description=?5, created_by=?6, created_ms=?7, expires_ms=?8, revoked_ms=?9"));
  ASSIGN_OR_RETURN(
      Stmt audit,
      writer_.Prepare("INSERT INTO audit(time_ms, actor, as_user, via, remote, action, object, outcome, detail) "
                      "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)"));
  writes_ = std::make_unique<WriteStatements>(WriteStatements{
      std::move(job), std::move(reason), std::move(event), std::move(idem), std::move(node), std::move(node_removal),
      std::move(meta), std::move(checkpoint), std::move(token), std::move(audit)});
  return Status::Ok();
}

Status SqliteStore::Commit(const std::vector<const WriteBatch*>& batches) {
  MutexLock lock(write_mu_);
  if (!writes_) RETURN_IF_ERROR(PrepareWrites());
  RETURN_IF_ERROR(writer_.Exec("BEGIN IMMEDIATE"));
  WriteStatements& w = *writes_;
  auto run = [](Stmt& st) {
    Status s = st.Run();
    st.Reset();
    return s;
  };
  auto body = [&]() -> Status {
    for (const WriteBatch* b : batches) {
      for (const JobRow& j : b->jobs) {
        w.job.Bind(1, j.id)
            .Bind(2, j.name)
            .Bind(3, j.user)
            .Bind(4, j.queue)
            .Bind(5, j.priority_class)
            .Bind(6, j.state)
            .Bind(7, j.reason)
            .Bind(8, j.submit_ms)
            .Bind(9, j.start_ms)
            .Bind(10, j.end_ms)
            .Bind(11, int64_t{j.attempts})
            .Bind(12, j.spec_json)
            .Bind(13, j.status_json);
        RETURN_IF_ERROR(run(w.job));
      }
      for (const auto& [id, reason] : b->reasons) {
        w.reason.Bind(1, id).Bind(2, reason);
        RETURN_IF_ERROR(run(w.reason));
      }
      for (const EventRow& e : b->events) {
        w.event.Bind(1, e.job_id).Bind(2, e.time_ms).Bind(3, e.type).Bind(4, e.reason).Bind(5, e.message);
        RETURN_IF_ERROR(run(w.event));
      }
      for (const IdempotencyRow& r : b->idempotency) {
        w.idem.Bind(1, r.principal).Bind(2, r.key).Bind(3, r.fingerprint).Bind(4, r.job_id).Bind(5, r.created_ms);
        RETURN_IF_ERROR(run(w.idem));
      }
      for (const NodeRow& n : b->nodes) {
        w.node.Bind(1, n.name).Bind(2, n.spec_json).Bind(3, n.state).Bind(4, n.updated_ms);
        RETURN_IF_ERROR(run(w.node));
      }
      for (const std::string& name : b->removed_nodes) {
        w.node_removal.Bind(1, name);
        RETURN_IF_ERROR(run(w.node_removal));
      }
      for (const auto& [k, v] : b->meta) {
        w.meta.Bind(1, k).Bind(2, v);
        RETURN_IF_ERROR(run(w.meta));
      }
      for (const CheckpointRow& c : b->checkpoints) {
        w.checkpoint.Bind(1, c.job_id)
            .Bind(2, c.seq)
            .Bind(3, int64_t{c.attempt})
            .Bind(4, c.step)
            .Bind(5, c.location)
            .Bind(6, c.manifest_sha256)
            .Bind(7, c.files)
            .Bind(8, c.bytes)
            .Bind(9, c.state)
            .Bind(10, c.note)
            .Bind(11, c.created_ms);
        RETURN_IF_ERROR(run(w.checkpoint));
      }
      for (const TokenRow& t : b->tokens) {
        w.token.Bind(1, t.id)
            .Bind(2, t.secret_sha256)
            .Bind(3, t.user)
            .Bind(4, t.node)
            .Bind(5, t.description)
            .Bind(6, t.created_by)
            .Bind(7, t.created_ms)
            .Bind(8, t.expires_ms)
            .Bind(9, t.revoked_ms);
        RETURN_IF_ERROR(run(w.token));
      }
      for (const AuditRow& a : b->audit) {
        w.audit.Bind(1, a.time_ms)
            .Bind(2, a.actor)
            .Bind(3, a.as_user)
            .Bind(4, a.via)
            .Bind(5, a.remote)
            .Bind(6, a.action)
            .Bind(7, a.object)
            .Bind(8, a.outcome)
            .Bind(9, a.detail);
        RETURN_IF_ERROR(run(w.audit));
      }
    }
    return Status::Ok();
  };
  Status s = body();
  if (!s.ok()) {
    (void)writer_.Exec("ROLLBACK");
    return s;
  }
  s = writer_.Exec("COMMIT");
  if (!s.ok()) {
    (void)writer_.Exec("ROLLBACK");
    return s;
  }
  int64_t max_job = 0;
  for (const WriteBatch* b : batches) {
    for (const JobRow& j : b->jobs) max_job = std::max(max_job, j.id);
  }
  high_water_.Record(max_job);  // durable now: the record never runs ahead of the store
  return s;
}

StatusOr<std::vector<JobRow>> SqliteStore::LoadJobs(bool include_terminal) {
  return WithReader([&](Db& db) -> StatusOr<std::vector<JobRow>> {
    std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs";
    if (!include_terminal) sql += " WHERE end_ms IS NULL";
    sql += " ORDER BY id";
    ASSIGN_OR_RETURN(Stmt s, db.Prepare(sql));
    return ReadJobs(s);
  });
}

StatusOr<std::optional<JobRow>> SqliteStore::GetJob(int64_t id) {
  return WithReader([&](Db& db) -> StatusOr<std::optional<JobRow>> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?1"));
    s.Bind(1, id);
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return std::optional<JobRow>();
    return std::optional<JobRow>(ReadJob(s));
  });
}

namespace {

// Selects `columns` of the jobs matching `f` after `after_id`, one more than
// `limit` (which tells whether there is a next page), reading each with `read`.
template <typename Row, typename Read>
StatusOr<std::vector<Row>> SelectJobs(Db& db, const std::string& columns, const JobFilter& f, int64_t after_id,
                                      int32_t limit, Read read) {
  std::string sql = "SELECT " + columns + " FROM jobs WHERE " + (f.newest_first ? "(?1 = 0 OR id < ?1)" : "id > ?1");
  int next = 2;
  std::vector<std::pair<int, std::string>> binds;
  if (!f.states.empty()) {
    sql += " AND state IN (";
    for (size_t i = 0; i < f.states.size(); ++i) {
      sql += (i ? ",?" : "?") + std::to_string(next);
      binds.emplace_back(next++, f.states[i]);
    }
    sql += ")";
  }
  auto eq = [&](const char* col, const std::string& v) {
    if (v.empty()) return;
    sql += std::string(" AND ") + col + " = ?" + std::to_string(next);
    binds.emplace_back(next++, v);
  };
  eq("queue", f.queue);
  eq("user", f.user);
  eq("name", f.name);
  // Labels, through json_each: a key is a bound value, never a JSON path.
  for (const LabelRequirement& r : f.labels) {
    using Op = LabelRequirement::Op;
    const std::string key = "?" + std::to_string(next);
    binds.emplace_back(next++, r.key);
    std::string match = "SELECT 1 FROM json_each(spec, '$.labels') WHERE key = " + key;
    if (r.op == Op::kEqual || r.op == Op::kNotEqual) {
      match += " AND value = ?" + std::to_string(next);
      binds.emplace_back(next++, r.value);
    }
    const bool present = r.op == Op::kEqual || r.op == Op::kExists;
    sql += std::string(present ? " AND EXISTS (" : " AND NOT EXISTS (") + match + ")";
  }
  std::vector<std::pair<int, int64_t>> numbers;
  if (f.active_from_ms) {
    sql += " AND (end_ms IS NULL OR end_ms >= ?" + std::to_string(next) + ")";
    numbers.emplace_back(next++, *f.active_from_ms);
  }
  if (f.submitted_before_ms) {
    sql += " AND submit_ms < ?" + std::to_string(next);
    numbers.emplace_back(next++, *f.submitted_before_ms);
  }
  sql += std::string(f.newest_first ? " ORDER BY id DESC" : " ORDER BY id") + " LIMIT ?" + std::to_string(next);
  ASSIGN_OR_RETURN(Stmt s, db.Prepare(sql));
  s.Bind(1, after_id);
  for (const auto& [i, v] : binds) s.Bind(i, v);
  for (const auto& [i, v] : numbers) s.Bind(i, v);
  s.Bind(next, int64_t{limit} + 1);
  std::vector<Row> rows;
  while (true) {
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return rows;
    rows.push_back(read(s));
  }
}

}  // namespace

StatusOr<JobPage> SqliteStore::ListJobs(const JobFilter& f, int64_t after_id, int32_t limit) {
  return WithReader([&](Db& db) -> StatusOr<JobPage> {
    ASSIGN_OR_RETURN(auto rows, SelectJobs<JobRow>(db, kJobColumns, f, after_id, limit, ReadJob));
    return ToPage<JobPage>(std::move(rows), limit);
  });
}

namespace {

// kJobColumns' first ten, then from the spec and status JSON. The nodes
// come joined by a unit separator, which no node name holds.
constexpr const char* kSummaryColumns =
    "id, name, user, queue, priority_class, state, reason, submit_ms, start_ms, end_ms, "
    "json_extract(spec, '$.resources.gpus'), COALESCE(json_extract(spec, '$.replicas.max'), json_extract(spec, "
    "'$.replicas')), "
    "(SELECT group_concat(json_extract(value, '$.node'), char(31)) FROM json_each(status, '$.allocations'))";

JobSummary ReadSummary(const Stmt& s) {
  JobSummary j;
  ReadJobHead(s, j);
  j.gpus = s.Int(10);
  j.replicas = s.OptInt(11).value_or(1);
  j.nodes = SplitNodes(s.Text(12));
  return j;
}

}  // namespace

StatusOr<JobSummaryPage> SqliteStore::ListJobSummaries(const JobFilter& f, int64_t after_id, int32_t limit) {
  return WithReader([&](Db& db) -> StatusOr<JobSummaryPage> {
    ASSIGN_OR_RETURN(auto rows, SelectJobs<JobSummary>(db, kSummaryColumns, f, after_id, limit, ReadSummary));
    return ToPage<JobSummaryPage>(std::move(rows), limit);
  });
}

StatusOr<std::vector<EventRow>> SqliteStore::ListEvents(int64_t job_id, int64_t after_seq, int32_t limit) {
  return WithReader([&](Db& db) -> StatusOr<std::vector<EventRow>> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT seq, job_id, time_ms, type, reason, message FROM events "
                                        "WHERE job_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"));
    s.Bind(1, job_id);
    s.Bind(2, after_seq);
    s.Bind(3, static_cast<int64_t>(limit));
    std::vector<EventRow> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return out;
      out.push_back({s.Int(0), s.Int(1), s.Int(2), s.Text(3), s.Text(4), s.Text(5)});
    }
  });
}

StatusOr<std::vector<IdempotencyRow>> SqliteStore::LoadIdempotency(int64_t created_after_ms) {
  return WithReader([&](Db& db) -> StatusOr<std::vector<IdempotencyRow>> {
    ASSIGN_OR_RETURN(
        Stmt s,
        db.Prepare("SELECT principal, key, fingerprint, job_id, created_ms FROM idempotency WHERE created_ms > ?1"));
    s.Bind(1, created_after_ms);
    std::vector<IdempotencyRow> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return out;
      out.push_back({s.Text(0), s.Text(1), s.Text(2), s.Int(3), s.Int(4)});
    }
  });
}

StatusOr<std::optional<IdempotencyRow>> SqliteStore::GetIdempotency(const std::string& principal,
                                                                    const std::string& key) {
  return WithReader([&](Db& db) -> StatusOr<std::optional<IdempotencyRow>> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT principal, key, fingerprint, job_id, created_ms FROM idempotency "
                                        "WHERE principal = ?1 AND key = ?2"));
    s.Bind(1, principal).Bind(2, key);
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return std::optional<IdempotencyRow>();
    return std::optional<IdempotencyRow>(IdempotencyRow{s.Text(0), s.Text(1), s.Text(2), s.Int(3), s.Int(4)});
  });
}

StatusOr<std::vector<NodeRow>> SqliteStore::ListNodes() {
  return WithReader([&](Db& db) -> StatusOr<std::vector<NodeRow>> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT name, spec, state, updated_ms FROM nodes ORDER BY name"));
    std::vector<NodeRow> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return out;
      out.push_back({s.Text(0), s.Text(1), s.Text(2), s.Int(3)});
    }
  });
}

StatusOr<std::optional<std::string>> SqliteStore::GetMeta(const std::string& key) {
  return WithReader([&](Db& db) -> StatusOr<std::optional<std::string>> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT value FROM meta WHERE key = ?1"));
    s.Bind(1, key);
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return std::optional<std::string>();
    return std::optional<std::string>(s.Text(0));
  });
}

namespace {

constexpr const char* kCheckpointColumns =
    "c.job_id, c.seq, c.attempt, c.step, c.location, c.manifest_sha256, c.files, c.bytes, c.state, c.note, "
    "c.created_ms";

StatusOr<std::vector<CheckpointRow>> ReadCheckpoints(Stmt& s) {
  std::vector<CheckpointRow> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    out.push_back({s.Int(0), s.Int(1), static_cast<int32_t>(s.Int(2)), s.Int(3), s.Text(4), s.Text(5), s.Int(6),
                   s.Int(7), s.Text(8), s.Text(9), s.Int(10)});
  }
}

}  // namespace

StatusOr<std::vector<CheckpointRow>> SqliteStore::ListCheckpoints(int64_t job_id) {
  return WithReader([&](Db& db) -> StatusOr<std::vector<CheckpointRow>> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare(std::string("SELECT ") + kCheckpointColumns +
                                        " FROM checkpoints c WHERE c.job_id = ?1 ORDER BY c.seq"));
    s.Bind(1, job_id);
    return ReadCheckpoints(s);
  });
}

StatusOr<std::vector<CheckpointRow>> SqliteStore::LoadLiveCheckpoints() {
  return WithReader([&](Db& db) -> StatusOr<std::vector<CheckpointRow>> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare(std::string("SELECT ") + kCheckpointColumns +
                                        " FROM checkpoints c JOIN jobs j ON j.id = c.job_id "
                                        "WHERE j.end_ms IS NULL ORDER BY c.job_id, c.seq"));
    return ReadCheckpoints(s);
  });
}

StatusOr<std::vector<TokenRow>> SqliteStore::ListTokens() {
  return WithReader([&](Db& db) -> StatusOr<std::vector<TokenRow>> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT id, secret_sha256, user, node, description, created_by, created_ms, "
                                        "expires_ms, revoked_ms FROM tokens ORDER BY id"));
    std::vector<TokenRow> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return out;
      out.push_back({s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Text(4), s.Text(5), s.Int(6), s.Int(7), s.Int(8)});
    }
  });
}

StatusOr<std::vector<AuditRow>> SqliteStore::ListAudit(const AuditFilter& f, int64_t after_seq, int32_t limit) {
  return WithReader([&](Db& db) -> StatusOr<std::vector<AuditRow>> {
    std::string sql =
        "SELECT seq, time_ms, actor, as_user, via, remote, action, object, outcome, detail FROM audit "
        "WHERE seq > ?1";
    if (!f.actor.empty()) sql += " AND actor = ?3";
    if (!f.object.empty()) sql += " AND object = ?4";
    sql += " ORDER BY seq LIMIT ?2";
    ASSIGN_OR_RETURN(Stmt s, db.Prepare(sql));
    s.Bind(1, after_seq).Bind(2, int64_t{limit});
    if (!f.actor.empty()) s.Bind(3, f.actor);
    if (!f.object.empty()) s.Bind(4, f.object);
    std::vector<AuditRow> out;
    while (true) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return out;
      out.push_back(
          {s.Int(0), s.Int(1), s.Text(2), s.Text(3), s.Text(4), s.Text(5), s.Text(6), s.Text(7), s.Text(8), s.Text(9)});
    }
  });
}

StatusOr<int64_t> SqliteStore::MaxJobId() {
  return WithReader([&](Db& db) -> StatusOr<int64_t> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT COALESCE(MAX(id), 0) FROM jobs"));
    ASSIGN_OR_RETURN(bool row, s.Step());
    return row ? s.Int(0) : 0;
  });
}

StatusOr<int64_t> SqliteStore::CountJobs() {
  return WithReader([&](Db& db) -> StatusOr<int64_t> {
    ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT COUNT(*) FROM jobs"));
    ASSIGN_OR_RETURN(bool row, s.Step());
    return row ? s.Int(0) : 0;
  });
}

}  // namespace muster::store
