// QueueQuotas: one cycle's view of what every queue holds against its
// quota (core::QueueQuota): limits, guarantees, borrowing, and who may
// reclaim from whom.
//
// Usage is GPUs held by running jobs per queue and GPU type, counted up the
// nesting: a queue's usage is its own and all its descendants'. Starts made
// during the cycle are added (Add), so no cycle takes a queue over a limit.
//
// Rules:
//  - Limit: a job starts only if its queue and every queue above it stay
//    within their limits (of the job's GPU type, and over all types).
//  - Borrowing: a queue holding more than its guarantee borrows. Seen from
//    queue `from`, a queue q borrows when q and every queue above it up to
//    (not including) the first queue `from` is nested under too are over
//    their guarantees: a queue within its guarantee protects everything
//    under it from other branches.
//  - Reclaim: a job may reclaim when its start keeps its queue within its
//    guarantee; it may take from queue q when q borrows (as seen from the
//    job's queue) and the job's branch up to where the two meet stays within
//    every guarantee it has.
//
// Example: organizations A (guarantee 8) and B (guarantee 16) with teams a1
// (guarantee 8) under A and b1, b2 (no guarantee) under B, and a queue c
// with none. b1 and b2 hold 8 each and c holds 8: b1 is over its own
// guarantee but B is within its 16, so a job of a1 may reclaim only from c.
//
// Thread-safety: none; owned by one cycle.
#pragma once

#include <cstdint>
#include <vector>

#include "core/decisions.h"
#include "core/snapshot.h"

namespace muster::scheduler {

class QueueQuotas {
 public:
  explicit QueueQuotas(const core::ClusterSnapshot& snap);

  // A start this cycle: `gpus` of type `type` for `queue` (and every queue
  // above it).
  void Add(int32_t queue, int32_t type, int64_t gpus);

  // Whether starting `j` on GPUs of type `type` (kAnyGpuType: not known yet)
  // would take its queue or one above it over a limit; if so, fills
  // r.queue_used, r.queue_limit and r.quota_level.
  bool Blocks(const core::PendingJob& j, int32_t type, core::PendingReason& r) const;

  // Whether queue q has a guarantee of type t, or over all types.
  bool HasGuarantee(int32_t q, int32_t t) const;
  // Whether starting `j` keeps its queue within its guarantee.
  bool MayReclaim(const core::PendingJob& j) const;
  // Whether queue q borrows GPUs of type t, seen from queue `from`.
  bool Borrowing(int32_t q, int32_t t, int32_t from) const;
  // Whether `j` may reclaim from a job of queue q.
  bool ReclaimableFrom(const core::PendingJob& j, int32_t q) const;

 private:
  static constexpr int32_t kMaxDepth = 64;  // nesting (validated acyclic by the configuration)
  int32_t Parent(int32_t q) const;
  // GPUs queue q holds of type t (kAnyGpuType: of every type).
  int64_t Used(int32_t q, int32_t t) const;
  bool WithinGuarantee(int32_t q, int32_t t, int64_t gpus) const;
  bool OverGuarantee(int32_t q, int32_t t) const;
  // The queues from q up, stopping before the first one `other` is nested
  // under too.
  std::vector<int32_t> Branch(int32_t q, int32_t other) const;

  const core::ClusterSnapshot& snap_;
  std::vector<std::vector<int64_t>> usage_;  // per queue, per GPU type, descendants included
};

}  // namespace muster::scheduler
