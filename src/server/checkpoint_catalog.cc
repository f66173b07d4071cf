#include "server/checkpoint_catalog.h"

#include <cstdio>

#include "checkpoint/storage.h"
#include "common/message_text.h"

namespace muster::server {
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

}  // namespace

std::vector<std::pair<int64_t, int64_t>> CheckpointCatalog::LastCommittedBytes() const {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [job, entries] : entries_) {
    for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
      if (e->state != "COMMITTED") continue;
      out.emplace_back(job, e->bytes);
      break;
    }
  }
  return out;
}

std::string CheckpointCatalog::Describe(const store::CheckpointRow& c) {
  return "checkpoint " + std::to_string(c.seq) + " (step " + std::to_string(c.step) + ")";
}

void CheckpointCatalog::Restore(std::vector<store::CheckpointRow> rows) {
  for (store::CheckpointRow& row : rows) entries_[row.job_id].push_back(std::move(row));
}

StatusOr<CheckpointCatalog::Committed> CheckpointCatalog::Add(const Commit& c, const std::string& root, int32_t keep,
                                                              Time now, store::WriteBatch& b) {
  if (!checkpoint::IsBelow(c.location, root)) {
    return InvalidArgument(
        "must be a directory below the job's checkpoint.dir " + root + ", got " + QuoteForMessage(c.location, 256),
        "location");
  }
  std::vector<store::CheckpointRow>& entries = entries_[c.job];
  for (const store::CheckpointRow& e : entries) {
    if (e.location != c.location) continue;
    if (e.manifest_sha256 == c.manifest_sha256 && e.attempt == c.attempt) return Committed{e, true, {}};
    return Status(StatusCode::kFailedPrecondition,
                  c.location + " is already " + Describe(e) + " with another manifest; write a new directory");
  }
  Committed out;
  out.entry = {c.job,       entries.empty() ? 1 : entries.back().seq + 1,
               c.attempt,   c.step,
               c.location,  c.manifest_sha256,
               c.files,     c.bytes,
               "COMMITTED", "",
               now.millis()};
  entries.push_back(out.entry);
  b.checkpoints.push_back(out.entry);
  b.events.push_back({0, c.job, now.millis(), "CheckpointCommitted", "",
                      Describe(out.entry) + " by attempt " + std::to_string(c.attempt) + ": " +
                          std::to_string(c.files) + " files, " + Size(c.bytes) + " at " + c.location});
  // Retention: the newest `keep` committed ones stay.
  int32_t committed = 0;
  for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
    if (e->state != "COMMITTED" || ++committed <= keep) continue;
    e->state = "REMOVED";
    e->note = "retention: the newest " + std::to_string(keep) + " are kept";
    b.checkpoints.push_back(*e);
    out.dropped.emplace_back(e->location, e->manifest_sha256);
  }
  return out;
}

std::vector<proto::ResumeCandidate> CheckpointCatalog::ResumeCandidates(int64_t job) const {
  std::vector<proto::ResumeCandidate> out;
  auto it = entries_.find(job);
  if (it == entries_.end()) return out;
  for (auto c = it->second.rbegin(); c != it->second.rend(); ++c) {
    if (c->state == "COMMITTED") out.push_back({c->seq, c->step, c->location, c->manifest_sha256});
  }
  return out;
}

const store::CheckpointRow* CheckpointCatalog::Find(int64_t job, int64_t seq) const {
  auto it = entries_.find(job);
  if (it == entries_.end()) return nullptr;
  for (const store::CheckpointRow& e : it->second) {
    if (e.seq == seq) return &e;
  }
  return nullptr;
}

void CheckpointCatalog::MarkCorrupt(int64_t job, int32_t replica, const std::vector<proto::SkippedCheckpoint>& skipped,
                                    Time now, store::WriteBatch& b) {
  auto it = entries_.find(job);
  if (it == entries_.end()) return;
  for (const proto::SkippedCheckpoint& k : skipped) {
    for (store::CheckpointRow& e : it->second) {
      if (e.seq != k.seq || e.state != "COMMITTED") continue;  // another replica reported it first
      e.state = "CORRUPT";
      e.note = k.reason.substr(0, 1024);
      b.checkpoints.push_back(e);
      b.events.push_back({0, job, now.millis(), "CheckpointCorrupt", "VerificationFailed",
                          Describe(e) + " at " + e.location + " failed verification on replica " +
                              std::to_string(replica) + "'s node: " + e.note + "; it is skipped"});
    }
  }
}

}  // namespace muster::server
