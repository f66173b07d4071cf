// CheckpointCatalog: every unfinished job's checkpoints, as the server
// knows them.
//
// A job's checkpoints are numbered 1, 2, ... in commit order, each
// COMMITTED, then REMOVED by retention or CORRUPT once a node found it
// damaged. Commit accepts a location below the job's checkpoint.dir;
// committing the same location again with the same manifest by the same
// attempt is answered with the first entry (a retried request), with
// another manifest refused. Retention keeps the newest `keep` COMMITTED
// entries. A new attempt is offered the COMMITTED entries, newest first
// (ResumeCandidates); its nodes verify them before launch, and one they
// find damaged is never offered again (MarkCorrupt).
//
// Who may commit (the job's owner, its current attempt) is the control
// loop's to check; the catalog keeps the entries and their rules. Every
// change is appended to the caller's WriteBatch (the entry rows and an
// event), so it is durable with the rest of the step that made it.
//
// Thread-safety: none; the control loop's thread owns it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "proto/agent_protocol.h"
#include "store/store.h"

namespace muster::server {

class CheckpointCatalog {
 public:
  // The entries the store holds of jobs not ended (Store::LoadLiveCheckpoints).
  void Restore(std::vector<store::CheckpointRow> rows);

  struct Commit {
    int64_t job = 0;
    int32_t attempt = 0;
    int64_t step = 0;
    std::string location;
    std::string manifest_sha256;
    int64_t files = 0;
    int64_t bytes = 0;
  };
  struct Committed {
    store::CheckpointRow entry;
    bool repeated = false;  // the same commit again: nothing changed
    // Locations retention dropped, to delete once the batch is durable:
    // (location, manifest).
    std::vector<std::pair<std::string, std::string>> dropped;
  };
  // Records `c` for a job whose checkpoint.dir is `root`, keeping the
  // newest `keep`. Errors: a location not below `root` (InvalidArgument,
  // field "location"), a location already committed with another manifest
  // (FailedPrecondition: 409).
  StatusOr<Committed> Add(const Commit& c, const std::string& root, int32_t keep, Time now, store::WriteBatch& b);

  // The job's COMMITTED entries, newest first.
  std::vector<proto::ResumeCandidate> ResumeCandidates(int64_t job) const;
  // The entry `seq` of `job`, if any.
  const store::CheckpointRow* Find(int64_t job, int64_t seq) const;
  // Entries a replica's node found damaged become CORRUPT (once: another
  // replica may report the same), each with a CheckpointCorrupt event.
  void MarkCorrupt(int64_t job, int32_t replica, const std::vector<proto::SkippedCheckpoint>& skipped, Time now,
                   store::WriteBatch& b);
  // Each job's newest COMMITTED entry's bytes.
  std::vector<std::pair<int64_t, int64_t>> LastCommittedBytes() const;
  // An ended job's entries leave memory (the store keeps them for queries).
  void Forget(int64_t job) { entries_.erase(job); }

  // "checkpoint 3 (step 1200)".
  static std::string Describe(const store::CheckpointRow& c);

 private:
  std::unordered_map<int64_t, std::vector<store::CheckpointRow>> entries_;  // by job, in seq order
};

}  // namespace muster::server
