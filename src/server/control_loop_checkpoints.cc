// ControlLoop: the checkpoint catalog, resume choices and progress (see
// "Checkpoints and progress" in control_loop.h).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/message_text.h"
#include "checkpoint/storage.h"
#include "server/control_loop.h"

namespace muster::server {

using core::JobState;
using nlohmann::json;
using store::JobRow;

namespace {

std::string Size(int64_t bytes) {
  char buf[32];
  if (bytes >= (1LL << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  } else if (bytes >= (1LL << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  }
  return buf;
}

std::string Describe(const store::CheckpointRow& c) {
  return "checkpoint " + std::to_string(c.seq) + " (step " + std::to_string(c.step) + ")";
}

}  // namespace

Status ControlLoop::RestoreCatalog() {
  ASSIGN_OR_RETURN(std::vector<store::CheckpointRow> rows, store_.LoadLiveCheckpoints());
  for (store::CheckpointRow& row : rows) catalog_[row.job_id].push_back(std::move(row));
  return Status::Ok();
}

std::vector<proto::ResumeCandidate> ControlLoop::ResumeCandidates(int64_t job) const {
  std::vector<proto::ResumeCandidate> out;
  auto it = catalog_.find(job);
  if (it == catalog_.end()) return out;
  for (auto c = it->second.rbegin(); c != it->second.rend(); ++c) {
    if (c->state == "COMMITTED") out.push_back({c->seq, c->step, c->location, c->manifest_sha256});
  }
  return out;
}

void ControlLoop::CommitCheckpoint(CheckpointCommit c, Done<StatusOr<store::CheckpointRow>> done) {
  using R = StatusOr<store::CheckpointRow>;
  Async<R>([this, c = std::move(c)](std::function<void(R)> reply) {
    const std::string job_name = "job " + std::to_string(c.job);
    if (auto managed = ManagedJob(c.job, c.user, "commit checkpoints for"); !managed.ok()) return reply(managed.status());
    // Fencing: only the attempt that runs now may commit.
    auto a = details_.find(c.job);
    const lifecycle::Attempt* running = lifecycle_.Find(c.job);
    if (a == details_.end() || running == nullptr || running->number != c.attempt) {
      const std::string now_running =
          running == nullptr ? "it has no running attempt" : "it runs attempt " + std::to_string(running->number);
      return reply(FailedPrecondition("attempt " + std::to_string(c.attempt) + " of " + job_name +
                                      " is not the current one (" + now_running + "); its checkpoint is refused"));
    }
    if (!a->second.spec || !a->second.spec->checkpoint) {
      return reply(FailedPrecondition(job_name + " has no checkpoint.dir in its spec"));
    }
    const std::string& root = a->second.spec->checkpoint->dir;
    if (!checkpoint::IsBelow(c.location, root)) {
      return reply(InvalidArgument("must be a directory below the job's checkpoint.dir " + root + ", got " +
                                       QuoteForMessage(c.location, 256),
                                   "location"));
    }
    std::vector<store::CheckpointRow>& entries = catalog_[c.job];
    for (const store::CheckpointRow& e : entries) {
      if (e.location != c.location) continue;
      if (e.manifest_sha256 == c.manifest_sha256 && e.attempt == c.attempt) return reply(e);  // a retried request
      return reply(Status(StatusCode::kAlreadyExists,
                          c.location + " is already " + Describe(e) + " with another manifest; write a new directory"));
    }
    const int64_t now = clock_.Now().millis();
    store::CheckpointRow entry{c.job, entries.empty() ? 1 : entries.back().seq + 1, c.attempt, c.step, c.location,
                               c.manifest_sha256, c.files, c.bytes, "COMMITTED", "", now};
    entries.push_back(entry);
    (void)state_.NoteCheckpoint(c.job, Time::FromMillis(now));  // what a preemption would lose starts here
    store::WriteBatch b;
    b.checkpoints.push_back(entry);
    b.events.push_back(Event(c.job, "CheckpointCommitted", "",
                             Describe(entry) + " by attempt " + std::to_string(c.attempt) + ": " +
                                 std::to_string(c.files) + " files, " + Size(c.bytes) + " at " + c.location));
    // Retention: the newest `keep` committed ones stay. The dropped ones
    // are deleted once the catalog no longer offers them durably.
    const int32_t keep = a->second.spec->checkpoint->keep;
    int32_t committed = 0;
    std::vector<std::pair<std::string, std::string>> dropped;
    for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
      if (e->state != "COMMITTED" || ++committed <= keep) continue;
      e->state = "REMOVED";
      e->note = "retention: the newest " + std::to_string(keep) + " are kept";
      b.checkpoints.push_back(*e);
      dropped.emplace_back(e->location, e->manifest_sha256);
    }
    Persist(std::move(b), [this, reply, entry, dropped](const Status& s) {
      if (!s.ok()) return reply(s);
      for (const auto& [location, sha] : dropped) janitor_->Remove(location, sha, entry.job_id);
      reply(entry);
    });
  }, std::move(done), ShuttingDown());
}

void ControlLoop::RecordResume(int64_t job, const proto::TaskReport& t, store::WriteBatch& b) {
  AttemptDetail& a = details_.at(job);
  std::vector<store::CheckpointRow>& entries = catalog_[job];
  auto find = [&](int64_t seq) -> store::CheckpointRow* {
    for (store::CheckpointRow& e : entries) {
      if (e.seq == seq) return &e;
    }
    return nullptr;
  };
  for (const proto::SkippedCheckpoint& k : t.skipped) {
    store::CheckpointRow* e = find(k.seq);
    if (!e || e->state != "COMMITTED") continue;  // another replica reported it first
    e->state = "CORRUPT";
    e->note = k.reason.substr(0, 1024);
    b.checkpoints.push_back(*e);
    b.events.push_back(Event(job, "CheckpointCorrupt", "VerificationFailed",
                             Describe(*e) + " at " + e->location + " failed verification on replica " +
                                 std::to_string(t.replica) + "'s node: " + e->note + "; it is skipped"));
  }
  if (a.resume_recorded) {
    const int64_t first = a.resumed_from.is_object() ? a.resumed_from.value("seq", int64_t{0}) : 0;
    if (first != t.resumed_seq) {
      b.events.push_back(Event(job, "ResumeMismatch", "", "replica " + std::to_string(t.replica) + " resumed from checkpoint " +
                                                              std::to_string(t.resumed_seq) + ", another replica from " +
                                                              std::to_string(first)));
    }
    return;
  }
  a.resume_recorded = true;
  if (const store::CheckpointRow* e = t.resumed_seq > 0 ? find(t.resumed_seq) : nullptr) {
    a.resumed_from = {{"seq", e->seq}, {"step", e->step}, {"location", e->location}};
    b.events.push_back(Event(job, "Resumed", "", "attempt " + std::to_string(t.attempt) + " resumes from " + Describe(*e) +
                                                     " at " + e->location));
  } else {
    a.resumed_from = nullptr;
    b.events.push_back(Event(job, "Resumed", "NoCheckpoint",
                             "attempt " + std::to_string(t.attempt) +
                                 " starts from the beginning: none of its checkpoints passed verification"));
  }
  JobRow& row = jobs_.at(job);
  row.status_json = AllocationsJson(job);
  b.jobs.push_back(row);
}

void ControlLoop::ReportProgress(ProgressReport p, Done<StatusOr<ProgressAnswer>> done) {
  using R = StatusOr<ProgressAnswer>;
  Async<R>([this, p = std::move(p)](std::function<void(R)> reply) {
    const std::string job_name = "job " + std::to_string(p.job);
    auto managed = ManagedJob(p.job, p.user, "report progress for");
    if (!managed.ok()) return reply(managed.status());
    auto a = details_.find(p.job);
    const lifecycle::Attempt* running = lifecycle_.Find(p.job);
    if (a == details_.end() || running == nullptr || running->number != p.attempt) {
      return reply(FailedPrecondition("attempt " + std::to_string(p.attempt) + " of " + job_name + " is not running"));
    }
    AttemptDetail& at = a->second;
    const Time now_time = clock_.Now();
    const int64_t now = now_time.millis();
    lifecycle_.NoteProgress(p.job, p.step);
    if (!p.metrics.empty()) at.metrics = p.metrics;
    if (!p.message.empty()) at.progress_message = p.message;
    ProgressAnswer answer{running->number, running->StopReleased(now_time)};
    // GET /v1/jobs/{id} builds the job's status from the loop's state
    // (Explain); the store (lists) gets progress at most every 10 s a job:
    // it is not a promise that needs to be durable before the answer.
    if (now - at.progress_persisted_ms >= 10'000) {
      at.progress_persisted_ms = now;
      JobRow& job = **managed;
      job.status_json = AllocationsJson(p.job);
      store::WriteBatch b;
      b.jobs.push_back(job);
      Persist(std::move(b), nullptr);
    }
    reply(answer);
  }, std::move(done), ShuttingDown());
}

}  // namespace muster::server
