#include "store/pg/pg_store.h"

#include <unistd.h>

#include <initializer_list>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "store/paging.h"

namespace muster::store {
namespace {

// A PostgreSQL array literal in text form, element by element: every text
// element double-quoted with its quotes and backslashes escaped.
class ArrayText {
 public:
  ArrayText& Add(const std::string& v) {
    Sep();
    out_ += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') out_ += '\\';
      out_ += c;
    }
    out_ += '"';
    return *this;
  }
  ArrayText& Add(int64_t v) {
    Sep();
    out_ += std::to_string(v);
    return *this;
  }
  ArrayText& Add(const std::optional<int64_t>& v) {
    if (v) return Add(*v);
    Sep();
    out_ += "NULL";
    return *this;
  }
  std::string Done() const { return out_ + "}"; }

 private:
  void Sep() {
    if (out_.size() > 1) out_ += ',';
  }
  std::string out_ = "{";
};

// Parameters $1, $2, ... of an unnest() over these columns.
PgParams Arrays(std::initializer_list<const ArrayText*> columns) {
  PgParams p;
  for (const ArrayText* c : columns) p.Add(c->Done());
  return p;
}

// A group of batches folded into what each table must end up with: the
// last row of each key wins, as when the batches are applied one by one.
struct Folded {
  std::map<int64_t, const JobRow*> jobs;
  std::map<int64_t, std::string> reasons;  // jobs not in `jobs`
  std::vector<const EventRow*> events;
  std::vector<const IdempotencyRow*> idempotency;
  std::map<std::string, const NodeRow*> nodes;
  std::set<std::string> removed_nodes;  // not in `nodes`
  std::map<std::string, std::string> meta;
  std::map<std::pair<int64_t, int64_t>, const CheckpointRow*> checkpoints;
  std::map<std::string, const TokenRow*> tokens;
  std::vector<const AuditRow*> audit;
};

Folded Fold(const std::vector<const WriteBatch*>& batches, std::map<int64_t, JobRow>& patched) {
  Folded f;
  for (const WriteBatch* b : batches) {
    for (const JobRow& j : b->jobs) {
      f.jobs[j.id] = &j;
      f.reasons.erase(j.id);
      patched.erase(j.id);
    }
    for (const auto& [id, reason] : b->reasons) {
      auto in_jobs = f.jobs.find(id);
      if (in_jobs == f.jobs.end()) {
        f.reasons[id] = reason;
        continue;
      }
      // A reason after a row of the same group: a copy of the row with it.
      JobRow& copy = patched.try_emplace(id, *in_jobs->second).first->second;
      copy.reason = reason;
      in_jobs->second = &copy;
    }
    for (const EventRow& e : b->events) f.events.push_back(&e);
    for (const IdempotencyRow& r : b->idempotency) f.idempotency.push_back(&r);
    for (const NodeRow& n : b->nodes) {
      f.nodes[n.name] = &n;
      f.removed_nodes.erase(n.name);
    }
    for (const std::string& name : b->removed_nodes) {
      f.nodes.erase(name);
      f.removed_nodes.insert(name);
    }
    for (const auto& [k, v] : b->meta) f.meta[k] = v;
    for (const CheckpointRow& c : b->checkpoints) f.checkpoints[{c.job_id, c.seq}] = &c;
    for (const TokenRow& t : b->tokens) f.tokens[t.id] = &t;
    for (const AuditRow& a : b->audit) f.audit.push_back(&a);
  }
  return f;
}

using Statements = std::vector<std::pair<std::string, PgParams>>;

void AddJobs(const Folded& f, int64_t epoch, Statements& out) {
  if (f.jobs.empty()) return;
  ArrayText id, name, user, queue, pclass, state, reason, submit, start, end, attempts, spec, status;
  for (const auto& [_, j] : f.jobs) {
    id.Add(j->id);
    name.Add(j->name);
    user.Add(j->user);
    queue.Add(j->queue);
    pclass.Add(j->priority_class);
    state.Add(j->state);
    reason.Add(j->reason);
    submit.Add(j->submit_ms);
    start.Add(j->start_ms);
    end.Add(j->end_ms);
    attempts.Add(int64_t{j->attempts});
    spec.Add(j->spec_json);
    status.Add(j->status_json);
  }
  PgParams p =
      Arrays({&id, &name, &user, &queue, &pclass, &state, &reason, &submit, &start, &end, &attempts, &spec, &status});
  p.Add(epoch);
  out.emplace_back(
      "INSERT INTO jobs (id, name, \"user\", queue, priority_class, state, reason, submit_ms, start_ms, end_ms, "
      "attempts, spec, status, epoch) SELECT u.*, $14 FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], "
      "$5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::int[], $12::text[], "
      "$13::text[]) AS u ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, \"user\" = EXCLUDED.\"user\", "
      "queue = EXCLUDED.queue, priority_class = EXCLUDED.priority_class, state = EXCLUDED.state, "
      "reason = EXCLUDED.reason, submit_ms = EXCLUDED.submit_ms, start_ms = EXCLUDED.start_ms, "
      "end_ms = EXCLUDED.end_ms, attempts = EXCLUDED.attempts, spec = EXCLUDED.spec, status = EXCLUDED.status, "
      "epoch = EXCLUDED.epoch, rev = nextval('jobs_rev')",
      std::move(p));
}

void AddReasons(const Folded& f, int64_t epoch, Statements& out) {
  if (f.reasons.empty()) return;
  ArrayText id, reason;
  for (const auto& [job, r] : f.reasons) {
    id.Add(job);
    reason.Add(r);
  }
  out.emplace_back(
      "UPDATE jobs SET reason = u.reason, epoch = $3, rev = nextval('jobs_rev') FROM "
      "unnest($1::bigint[], $2::text[]) AS "
      "u(id, reason) WHERE jobs.id = u.id",
      Arrays({&id, &reason}).Add(epoch));
}

void AddEvents(const Folded& f, int64_t epoch, Statements& out) {
  if (f.events.empty()) return;
  ArrayText job, time, type, reason, message;
  for (const EventRow* e : f.events) {
    job.Add(e->job_id);
    time.Add(e->time_ms);
    type.Add(e->type);
    reason.Add(e->reason);
    message.Add(e->message);
  }
  // Ordered by position: seq follows the order the events were appended.
  out.emplace_back(
      "INSERT INTO events (job_id, time_ms, type, reason, message, epoch) "
      "SELECT u.job_id, u.time_ms, u.type, u.reason, u.message, $6 FROM unnest($1::bigint[], "
      "$2::bigint[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS "
      "u(job_id, time_ms, type, reason, message, n) ORDER BY u.n",
      Arrays({&job, &time, &type, &reason, &message}).Add(epoch));
}

void AddIdempotency(const Folded& f, Statements& out) {
  if (f.idempotency.empty()) return;
  ArrayText principal, key, fingerprint, job, created;
  for (const IdempotencyRow* r : f.idempotency) {
    principal.Add(r->principal);
    key.Add(r->key);
    fingerprint.Add(r->fingerprint);
    job.Add(r->job_id);
    created.Add(r->created_ms);
  }
  out.emplace_back(
      "INSERT INTO idempotency (principal, key, fingerprint, job_id, created_ms) "
      "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])",
      Arrays({&principal, &key, &fingerprint, &job, &created}));
}

void AddNodes(const Folded& f, Statements& out) {
  if (!f.nodes.empty()) {
    ArrayText name, spec, state, updated;
    for (const auto& [_, n] : f.nodes) {
      name.Add(n->name);
      spec.Add(n->spec_json);
      state.Add(n->state);
      updated.Add(n->updated_ms);
    }
    out.emplace_back(
        "INSERT INTO nodes (name, spec, state, updated_ms) SELECT * FROM unnest($1::text[], $2::text[], "
        "$3::text[], $4::bigint[]) ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, "
        "state = EXCLUDED.state, updated_ms = EXCLUDED.updated_ms",
        Arrays({&name, &spec, &state, &updated}));
  }
  if (!f.removed_nodes.empty()) {
    ArrayText names;
    for (const std::string& n : f.removed_nodes) names.Add(n);
    out.emplace_back("DELETE FROM nodes WHERE name = ANY($1::text[])", Arrays({&names}));
  }
}

void AddMeta(const Folded& f, Statements& out) {
  if (f.meta.empty()) return;
  ArrayText key, value;
  for (const auto& [k, v] : f.meta) {
    key.Add(k);
    value.Add(v);
  }
  out.emplace_back(
      "INSERT INTO meta (key, value) SELECT * FROM unnest($1::text[], $2::text[]) "
      "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
      Arrays({&key, &value}));
}

void AddCheckpoints(const Folded& f, Statements& out) {
  if (f.checkpoints.empty()) return;
  ArrayText job, seq, attempt, step, location, sha, files, bytes, state, note, created;
  for (const auto& [_, c] : f.checkpoints) {
    job.Add(c->job_id);
    seq.Add(c->seq);
    attempt.Add(int64_t{c->attempt});
    step.Add(c->step);
    location.Add(c->location);
    sha.Add(c->manifest_sha256);
    files.Add(c->files);
    bytes.Add(c->bytes);
    state.Add(c->state);
    note.Add(c->note);
    created.Add(c->created_ms);
  }
  out.emplace_back(
      "INSERT INTO checkpoints (job_id, seq, attempt, step, location, manifest_sha256, files, bytes, state, note, "
      "created_ms) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::bigint[], $5::text[], $6::text[], "
      "$7::bigint[], $8::bigint[], $9::text[], $10::text[], $11::bigint[]) ON CONFLICT (job_id, seq) DO UPDATE SET "
      "attempt = EXCLUDED.attempt, step = EXCLUDED.step, location = EXCLUDED.location, "
      "manifest_sha256 = EXCLUDED.manifest_sha256, files = EXCLUDED.files, bytes = EXCLUDED.bytes, "
      "state = EXCLUDED.state, note = EXCLUDED.note, created_ms = EXCLUDED.created_ms",
      Arrays({&job, &seq, &attempt, &step, &location, &sha, &files, &bytes, &state, &note, &created}));
}

void AddTokens(const Folded& f, Statements& out) {
  if (f.tokens.empty()) return;
  ArrayText id, sha, user, node, description, created_by, created, expires, revoked;
  for (const auto& [_, t] : f.tokens) {
    id.Add(t->id);
    sha.Add(t->secret_sha256);
    user.Add(t->user);
    node.Add(t->node);
    description.Add(t->description);
    created_by.Add(t->created_by);
    created.Add(t->created_ms);
    expires.Add(t->expires_ms);
    revoked.Add(t->revoked_ms);
  }
  out.emplace_back(
      "INSERT INTO tokens (id, secret_sha256, \"user\", node, description, created_by, created_ms, expires_ms, "
      "revoked_ms) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
      "$7::bigint[], $8::bigint[], $9::bigint[]) ON CONFLICT (id) DO UPDATE SET secret_sha256 = "
      "EXCLUDED.secret_sha256, \"user\" = EXCLUDED.\"user\", node = EXCLUDED.node, description = "
      "EXCLUDED.description, created_by = EXCLUDED.created_by, created_ms = EXCLUDED.created_ms, expires_ms = "
      "EXCLUDED.expires_ms, revoked_ms = EXCLUDED.revoked_ms",
      Arrays({&id, &sha, &user, &node, &description, &created_by, &created, &expires, &revoked}));
}

void AddAudit(const Folded& f, int64_t epoch, Statements& out) {
  if (f.audit.empty()) return;
  ArrayText time, actor, as_user, via, remote, action, object, outcome, detail;
  for (const AuditRow* a : f.audit) {
    time.Add(a->time_ms);
    actor.Add(a->actor);
    as_user.Add(a->as_user);
    via.Add(a->via);
    remote.Add(a->remote);
    action.Add(a->action);
    object.Add(a->object);
    outcome.Add(a->outcome);
    detail.Add(a->detail);
  }
  out.emplace_back(
      "INSERT INTO audit (time_ms, actor, as_user, via, remote, action, object, outcome, detail, epoch) "
      "SELECT u.time_ms, u.actor, u.as_user, u.via, u.remote, u.action, u.object, u.outcome, u.detail, "
      "$10 FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
      "$7::text[], $8::text[], $9::text[]) WITH ORDINALITY AS u(time_ms, actor, as_user, via, remote, "
      "action, object, outcome, detail, n) ORDER BY u.n",
      Arrays({&time, &actor, &as_user, &via, &remote, &action, &object, &outcome, &detail}).Add(epoch));
}

constexpr const char* kJobColumns =
    "id, name, \"user\", queue, priority_class, state, reason, submit_ms, start_ms, end_ms, attempts, spec, status";

template <typename Row>
void ReadJobHead(const PgRows& r, int i, Row& j) {
  j.id = r.Int(i, 0);
  j.name = r.Text(i, 1);
  j.user = r.Text(i, 2);
  j.queue = r.Text(i, 3);
  j.priority_class = r.Text(i, 4);
  j.state = r.Text(i, 5);
  j.reason = r.Text(i, 6);
  j.submit_ms = r.Int(i, 7);
  j.start_ms = r.OptInt(i, 8);
  j.end_ms = r.OptInt(i, 9);
}

JobRow ReadJob(const PgRows& r, int i) {
  JobRow j;
  ReadJobHead(r, i, j);
  j.attempts = static_cast<int32_t>(r.Int(i, 10));
  j.spec_json = r.Text(i, 11);
  j.status_json = r.Text(i, 12);
  return j;
}

// kJobColumns' first ten, then from the spec and status JSON. The nodes
// come joined by a unit separator, which no node name holds.
constexpr const char* kSummaryColumns =
    "id, name, \"user\", queue, priority_class, state, reason, submit_ms, start_ms, end_ms, "
    "(spec::json #>> '{resources,gpus}')::bigint, COALESCE(spec::json #>> '{replicas,max}', spec::json ->> "
    "'replicas')::bigint, "
    "(SELECT string_agg(a ->> 'node', chr(31)) FROM json_array_elements(CASE WHEN "
    "json_typeof(status::json -> 'allocations') = 'array' THEN status::json -> 'allocations' END) AS a)";

JobSummary ReadSummary(const PgRows& r, int i) {
  JobSummary j;
  ReadJobHead(r, i, j);
  j.gpus = r.Int(i, 10);
  j.replicas = r.OptInt(i, 11).value_or(1);
  j.nodes = SplitNodes(r.Text(i, 12));
  return j;
}

// Selects `columns` of the jobs matching `f` after `after_id`, one more
// than `limit` (which tells whether there is a next page).
template <typename Row, typename Read>
StatusOr<std::vector<Row>> SelectJobs(PgConn& db, const std::string& columns, const JobFilter& f, int64_t after_id,
                                      int32_t limit, Read read) {
  std::string sql = "SELECT " + columns + " FROM jobs WHERE " + (f.newest_first ? "($1 = 0 OR id < $1)" : "id > $1");
  PgParams p;
  p.Add(after_id);
  if (!f.states.empty()) {
    ArrayText states;
    for (const std::string& s : f.states) states.Add(s);
    p.Add(states.Done());
    sql += " AND state = ANY($" + std::to_string(p.size()) + "::text[])";
  }
  auto eq = [&](const char* col, const std::string& v) {
    if (v.empty()) return;
    p.Add(v);
    sql += std::string(" AND ") + col + " = $" + std::to_string(p.size());
  };
  eq("queue", f.queue);
  eq("\"user\"", f.user);
  eq("name", f.name);
  // Labels: a key is a bound value, never part of a JSON path.
  for (const LabelRequirement& r : f.labels) {
    using Op = LabelRequirement::Op;
    p.Add(r.key);
    const std::string label = "(spec::json -> 'labels' ->> $" + std::to_string(p.size()) + ")";
    switch (r.op) {
      case Op::kEqual:
      case Op::kNotEqual:
        p.Add(r.value);
        sql += " AND " + label + (r.op == Op::kEqual ? " = $" : " IS DISTINCT FROM $") + std::to_string(p.size());
        break;
      case Op::kExists:
        sql += " AND " + label + " IS NOT NULL";
        break;
      case Op::kNotExists:
        sql += " AND " + label + " IS NULL";
        break;
    }
  }
  if (f.active_from_ms) {
    p.Add(*f.active_from_ms);
    sql += " AND (end_ms IS NULL OR end_ms >= $" + std::to_string(p.size()) + ")";
  }
  if (f.submitted_before_ms) {
    p.Add(*f.submitted_before_ms);
    sql += " AND submit_ms < $" + std::to_string(p.size());
  }
  p.Add(int64_t{limit} + 1);
  sql += std::string(f.newest_first ? " ORDER BY id DESC" : " ORDER BY id") + " LIMIT $" + std::to_string(p.size());
  ASSIGN_OR_RETURN(PgRows r, db.Query(sql, p));
  std::vector<Row> rows;
  rows.reserve(r.size());
  for (int i = 0; i < r.size(); ++i) rows.push_back(read(r, i));
  return rows;
}

constexpr const char* kCheckpointColumns =
    "c.job_id, c.seq, c.attempt, c.step, c.location, c.manifest_sha256, c.files, c.bytes, c.state, c.note, "
    "c.created_ms";

std::vector<CheckpointRow> ReadCheckpoints(const PgRows& r) {
  std::vector<CheckpointRow> out;
  for (int i = 0; i < r.size(); ++i) {
    out.push_back({r.Int(i, 0), r.Int(i, 1), static_cast<int32_t>(r.Int(i, 2)), r.Int(i, 3), r.Text(i, 4), r.Text(i, 5),
                   r.Int(i, 6), r.Int(i, 7), r.Text(i, 8), r.Text(i, 9), r.Int(i, 10)});
  }
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& conninfo) {
  ASSIGN_OR_RETURN(PgConn writer, PgConn::Connect(conninfo));
  RETURN_IF_ERROR(MigratePostgres(writer, DescribeConnInfo(conninfo)));
  return std::unique_ptr<PgStore>(new PgStore(conninfo, std::move(writer)));
}

namespace {

// An identity for this store's commits (not a decision: nothing depends on
// its value but its being unlike another store's).
std::string NewWriterId() {
  std::random_device rd;
  return std::to_string(rd()) + "-" + std::to_string(rd()) + "-" + std::to_string(::getpid());
}

}  // namespace

PgStore::PgStore(std::string conninfo, PgConn writer)
    : conninfo_(std::move(conninfo)),
      description_(DescribeConnInfo(conninfo_)),
      writer_id_(NewWriterId()),
      writer_(std::move(writer)) {}
PgStore::~PgStore() = default;

void PgStore::FenceWrites(int64_t epoch) { fence_.store(epoch, std::memory_order_release); }

Status PgStore::Commit(const std::vector<const WriteBatch*>& batches) {
  std::map<int64_t, JobRow> patched;
  const Folded f = Fold(batches, patched);
  const int64_t epoch = fence_.load(std::memory_order_acquire);
  Statements statements;
  if (epoch != 0) statements.emplace_back("SELECT muster_fence($1)", PgParams().Add(epoch));
  AddJobs(f, epoch, statements);
  AddReasons(f, epoch, statements);
  AddEvents(f, epoch, statements);
  AddIdempotency(f, statements);
  AddNodes(f, statements);
  AddMeta(f, statements);
  AddCheckpoints(f, statements);
  AddTokens(f, statements);
  AddAudit(f, epoch, statements);
  if (statements.empty()) return Status::Ok();
  MutexLock lock(write_mu_);
  const int64_t seq = ++commit_seq_;
  statements.emplace_back(
      "INSERT INTO writer_progress (writer, seq) VALUES ($1, $2) ON CONFLICT (writer) DO "
      "UPDATE SET seq = EXCLUDED.seq, updated_at = now()",
      PgParams().Add(writer_id_).Add(seq));
  using Clock = std::chrono::steady_clock;
  const Clock::time_point give_up = Clock::now() + kCommitRetryWindow;
  bool unknown = false;  // an earlier try may have committed
  while (true) {
    Status s;
    if (!writer_.ok()) {
      auto fresh = PgConn::Connect(conninfo_, 2);
      if (fresh.ok()) writer_ = std::move(*fresh);
      s = fresh.status();
    }
    if (s.ok() && unknown) {
      auto done = writer_.Query("SELECT seq FROM writer_progress WHERE writer = $1", PgParams().Add(writer_id_));
      if (done.ok() && done->size() == 1 && done->Int(0, 0) >= seq) return Status::Ok();
      s = done.status();
    }
    if (s.ok()) s = writer_.ExecAtomically(statements);
    if (s.code() != StatusCode::kUnavailable || Clock::now() >= give_up) return s;
    unknown = true;
    if (writer_.ok()) {
      // Refused for the server's state (read-only, shutting down): a new
      // connection finds the primary, if the database failed over.
      writer_ = PgConn();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

template <typename T, typename Fn>
StatusOr<T> PgStore::WithReader(Fn fn) {
  for (int tries = 0;; ++tries) {
    std::optional<PgConn> db;
    {
      MutexLock lock(read_mu_);
      if (!readers_.empty()) {
        db.emplace(std::move(readers_.back()));
        readers_.pop_back();
      }
    }
    if (!db) {
      ASSIGN_OR_RETURN(PgConn fresh, PgConn::Connect(conninfo_));
      db.emplace(std::move(fresh));
    }
    StatusOr<T> result = fn(*db);
    if (!db->ok()) {
      if (tries == 0) continue;  // a pooled connection that had broken: once more, fresh
      return result;
    }
    MutexLock lock(read_mu_);
    if (readers_.size() < 8) readers_.push_back(std::move(*db));
    return result;
  }
}

StatusOr<std::vector<JobRow>> PgStore::LoadJobs(bool include_terminal) {
  return WithReader<std::vector<JobRow>>([&](PgConn& db) -> StatusOr<std::vector<JobRow>> {
    std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs";
    if (!include_terminal) sql += " WHERE end_ms IS NULL";
    sql += " ORDER BY id";
    ASSIGN_OR_RETURN(PgRows r, db.Query(sql));
    std::vector<JobRow> out;
    out.reserve(r.size());
    for (int i = 0; i < r.size(); ++i) out.push_back(ReadJob(r, i));
    return out;
  });
}

StatusOr<std::optional<JobRow>> PgStore::GetJob(int64_t id) {
  return WithReader<std::optional<JobRow>>([&](PgConn& db) -> StatusOr<std::optional<JobRow>> {
    ASSIGN_OR_RETURN(PgRows r,
                     db.Query(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = $1", PgParams().Add(id)));
    if (r.size() == 0) return std::optional<JobRow>();
    return std::optional<JobRow>(ReadJob(r, 0));
  });
}

StatusOr<JobPage> PgStore::ListJobs(const JobFilter& f, int64_t after_id, int32_t limit) {
  return WithReader<JobPage>([&](PgConn& db) -> StatusOr<JobPage> {
    ASSIGN_OR_RETURN(auto rows, SelectJobs<JobRow>(db, kJobColumns, f, after_id, limit, ReadJob));
    return ToPage<JobPage>(std::move(rows), limit);
  });
}

StatusOr<JobSummaryPage> PgStore::ListJobSummaries(const JobFilter& f, int64_t after_id, int32_t limit) {
  return WithReader<JobSummaryPage>([&](PgConn& db) -> StatusOr<JobSummaryPage> {
    ASSIGN_OR_RETURN(auto rows, SelectJobs<JobSummary>(db, kSummaryColumns, f, after_id, limit, ReadSummary));
    return ToPage<JobSummaryPage>(std::move(rows), limit);
  });
}

StatusOr<std::vector<EventRow>> PgStore::ListEvents(int64_t job_id, int64_t after_seq, int32_t limit) {
  return WithReader<std::vector<EventRow>>([&](PgConn& db) -> StatusOr<std::vector<EventRow>> {
    ASSIGN_OR_RETURN(PgRows r, db.Query("SELECT seq, job_id, time_ms, type, reason, message FROM events "
                                        "WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                                        PgParams().Add(job_id).Add(after_seq).Add(int64_t{limit})));
    std::vector<EventRow> out;
    for (int i = 0; i < r.size(); ++i) {
      out.push_back({r.Int(i, 0), r.Int(i, 1), r.Int(i, 2), r.Text(i, 3), r.Text(i, 4), r.Text(i, 5)});
    }
    return out;
  });
}

StatusOr<std::vector<IdempotencyRow>> PgStore::LoadIdempotency(int64_t created_after_ms) {
  return WithReader<std::vector<IdempotencyRow>>([&](PgConn& db) -> StatusOr<std::vector<IdempotencyRow>> {
    ASSIGN_OR_RETURN(PgRows r, db.Query("SELECT principal, key, fingerprint, job_id, created_ms FROM idempotency "
                                        "WHERE created_ms > $1",
                                        PgParams().Add(created_after_ms)));
    std::vector<IdempotencyRow> out;
    for (int i = 0; i < r.size(); ++i) {
      out.push_back({r.Text(i, 0), r.Text(i, 1), r.Text(i, 2), r.Int(i, 3), r.Int(i, 4)});
    }
    return out;
  });
}

StatusOr<std::optional<IdempotencyRow>> PgStore::GetIdempotency(const std::string& principal, const std::string& key) {
  return WithReader<std::optional<IdempotencyRow>>([&](PgConn& db) -> StatusOr<std::optional<IdempotencyRow>> {
    ASSIGN_OR_RETURN(PgRows r, db.Query("SELECT principal, key, fingerprint, job_id, created_ms FROM idempotency "
                                        "WHERE principal = $1 AND key = $2",
                                        PgParams().Add(principal).Add(key)));
    if (r.size() == 0) return std::optional<IdempotencyRow>();
    return std::optional<IdempotencyRow>(
        IdempotencyRow{r.Text(0, 0), r.Text(0, 1), r.Text(0, 2), r.Int(0, 3), r.Int(0, 4)});
  });
}

StatusOr<std::vector<NodeRow>> PgStore::ListNodes() {
  return WithReader<std::vector<NodeRow>>([&](PgConn& db) -> StatusOr<std::vector<NodeRow>> {
    ASSIGN_OR_RETURN(PgRows r, db.Query("SELECT name, spec, state, updated_ms FROM nodes ORDER BY name"));
    std::vector<NodeRow> out;
    for (int i = 0; i < r.size(); ++i) out.push_back({r.Text(i, 0), r.Text(i, 1), r.Text(i, 2), r.Int(i, 3)});
    return out;
  });
}

StatusOr<std::optional<std::string>> PgStore::GetMeta(const std::string& key) {
  return WithReader<std::optional<std::string>>([&](PgConn& db) -> StatusOr<std::optional<std::string>> {
    ASSIGN_OR_RETURN(PgRows r, db.Query("SELECT value FROM meta WHERE key = $1", PgParams().Add(key)));
    if (r.size() == 0) return std::optional<std::string>();
    return std::optional<std::string>(r.Text(0, 0));
  });
}

StatusOr<std::vector<CheckpointRow>> PgStore::ListCheckpoints(int64_t job_id) {
  return WithReader<std::vector<CheckpointRow>>([&](PgConn& db) -> StatusOr<std::vector<CheckpointRow>> {
    ASSIGN_OR_RETURN(PgRows r, db.Query(std::string("SELECT ") + kCheckpointColumns +
                                            " FROM checkpoints c WHERE c.job_id = $1 ORDER BY c.seq",
                                        PgParams().Add(job_id)));
    return ReadCheckpoints(r);
  });
}

StatusOr<std::vector<CheckpointRow>> PgStore::LoadLiveCheckpoints() {
  return WithReader<std::vector<CheckpointRow>>([&](PgConn& db) -> StatusOr<std::vector<CheckpointRow>> {
    ASSIGN_OR_RETURN(PgRows r, db.Query(std::string("SELECT ") + kCheckpointColumns +
                                        " FROM checkpoints c JOIN jobs j ON j.id = c.job_id "
                                        "WHERE j.end_ms IS NULL ORDER BY c.job_id, c.seq"));
    return ReadCheckpoints(r);
  });
}

StatusOr<JobChanges> PgStore::JobsChangedSince(int64_t rev, int32_t limit) {
  return WithReader<JobChanges>([&](PgConn& db) -> StatusOr<JobChanges> {
    ASSIGN_OR_RETURN(PgRows r, db.Query(std::string("SELECT ") + kJobColumns +
                                            ", rev FROM jobs WHERE rev > $1 ORDER BY rev LIMIT $2",
                                        PgParams().Add(rev).Add(int64_t{limit})));
    JobChanges out;
    out.rev = rev;
    out.rows.reserve(r.size());
    for (int i = 0; i < r.size(); ++i) {
      out.rows.push_back(ReadJob(r, i));
      out.rev = r.Int(i, 13);
    }
    return out;
  });
}

StatusOr<std::vector<TokenRow>> PgStore::ListTokens() {
  return WithReader<std::vector<TokenRow>>([&](PgConn& db) -> StatusOr<std::vector<TokenRow>> {
    ASSIGN_OR_RETURN(PgRows r, db.Query("SELECT id, secret_sha256, \"user\", node, description, created_by, "
                                        "created_ms, expires_ms, revoked_ms FROM tokens ORDER BY id"));
    std::vector<TokenRow> out;
    for (int i = 0; i < r.size(); ++i) {
      out.push_back({r.Text(i, 0), r.Text(i, 1), r.Text(i, 2), r.Text(i, 3), r.Text(i, 4), r.Text(i, 5), r.Int(i, 6),
                     r.Int(i, 7), r.Int(i, 8)});
    }
    return out;
  });
}

StatusOr<std::vector<AuditRow>> PgStore::ListAudit(const AuditFilter& f, int64_t after_seq, int32_t limit) {
  return WithReader<std::vector<AuditRow>>([&](PgConn& db) -> StatusOr<std::vector<AuditRow>> {
    std::string sql =
        "SELECT seq, time_ms, actor, as_user, via, remote, action, object, outcome, detail FROM audit "
        "WHERE seq > $1";
    PgParams p;
    p.Add(after_seq);
    if (!f.actor.empty()) {
      p.Add(f.actor);
      sql += " AND actor = $" + std::to_string(p.size());
    }
    if (!f.object.empty()) {
      p.Add(f.object);
      sql += " AND object = $" + std::to_string(p.size());
    }
    p.Add(int64_t{limit});
    sql += " ORDER BY seq LIMIT $" + std::to_string(p.size());
    ASSIGN_OR_RETURN(PgRows r, db.Query(sql, p));
    std::vector<AuditRow> out;
    for (int i = 0; i < r.size(); ++i) {
      out.push_back({r.Int(i, 0), r.Int(i, 1), r.Text(i, 2), r.Text(i, 3), r.Text(i, 4), r.Text(i, 5), r.Text(i, 6),
                     r.Text(i, 7), r.Text(i, 8), r.Text(i, 9)});
    }
    return out;
  });
}

StatusOr<int64_t> PgStore::MaxJobId() {
  return WithReader<int64_t>([&](PgConn& db) -> StatusOr<int64_t> {
    ASSIGN_OR_RETURN(PgRows r, db.Query("SELECT COALESCE(MAX(id), 0) FROM jobs"));
    return r.Int(0, 0);
  });
}

StatusOr<int64_t> PgStore::CountJobs() {
  return WithReader<int64_t>([&](PgConn& db) -> StatusOr<int64_t> {
    ASSIGN_OR_RETURN(PgRows r, db.Query("SELECT COUNT(*) FROM jobs"));
    return r.Int(0, 0);
  });
}

}  // namespace muster::store
