// IdempotencyTable: the Idempotency-Keys of the submits of the last day.
//
// A submit with a key is answered with the original job when the same
// (user, key) was used for the same request (its fingerprint) before; a
// different request with a used key is a conflict; a retry while the first
// is still being written is "in flight" (retry later). A key counts as
// written once the store writer has committed the batch that records it
// (its ticket; 0 for a key loaded from the store). Keys are forgotten a day
// after their submit (the documented window), never before they are durable.
// The table also remembers each job's key, which its stored status keeps.
//
// Thread-safety: none; the control loop's thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/time.h"
#include "store/store.h"
#include "store/store_writer.h"

namespace muster::server {

class IdempotencyTable {
 public:
  enum class Outcome {
    kNew,       // never used: submit
    kReplay,    // the same request again: answer with `job`
    kConflict,  // used for another request (`job`)
    kInFlight,  // the same request, still being written: retry later
  };
  struct Found {
    Outcome outcome = Outcome::kNew;
    int64_t job = 0;
  };
  Found Find(const std::string& user, const std::string& key, const std::string& fingerprint,
             const store::StoreWriter& writer) const;
  // Records a key whose submit (job `job`, the first of an array) was handed
  // to the writer with `ticket`.
  void Add(const std::string& user, const std::string& key, const std::string& fingerprint, int64_t job,
           uint64_t ticket, Time now);
  // The keys a restarted server loads from the store.
  void Restore(const std::vector<store::IdempotencyRow>& rows);
  // Forgets durable keys older than a day.
  void Prune(Time now, const store::StoreWriter& writer);

  // Each job's key, as its status shows it.
  void SetKeyOf(int64_t job, const std::string& key) { key_of_[job] = key; }
  const std::string* KeyOf(int64_t job) const {
    auto it = key_of_.find(job);
    return it == key_of_.end() ? nullptr : &it->second;
  }

 private:
  struct Entry {
    std::string fingerprint;
    int64_t job = 0;
    uint64_t ticket = 0;  // 0: loaded from the store
    int64_t created_ms = 0;
  };
  static bool Durable(const Entry& e, const store::StoreWriter& writer) {
    return e.ticket == 0 || writer.Committed(e.ticket);
  }
  std::map<std::pair<std::string, std::string>, Entry> keys_;  // (user, key)
  std::unordered_map<int64_t, std::string> key_of_;            // job -> its key
};

}  // namespace muster::server
