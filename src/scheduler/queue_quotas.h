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
//  - Fair share, between queues that are not nested. A queue's share is
//    what it holds past its guarantee (over all types) over its fair-share
//    weight: negative below its guarantee. Jobs being stopped count as
//    gone, and placements held for preemptors as held. A job of such a
//    queue with a guarantee may reclaim from another such queue (with or
//    without a guarantee) whose share is above its queue's, and the
//    victims' queue must stay above:
//      * below its guarantee (share < 0): the victims' queue's share after
//        stays above the job's queue's share before. A job is not split:
//        a queue at 16 of 21 may start an 8-GPU gang and hold 24.
//      * at or past its guarantee, only with `reclaimPastGuarantee`
//        (PreemptionOptions): the victims' queue's share after stays at
//        least the job's size (over weight) above the job's queue's share
//        after, so shares within a job of each other are not evened by
//        preemptions. By default past its guarantee a queue gets its fair
//        share by the start order alone (YieldsToFairShare, and the
//        fair-share priority term): on Philly that kept Jain's index at
//        0.98 with a third of the preemptions and under half the mean wait
//        of reclaiming past guarantees (docs/simulation.md).
//    Each reclaim raises the smaller of the two shares, so the list of all
//    shares, sorted, only rises: no reclaim undoes another, nothing
//    thrashes, and the queues that want more converge on max-min fair
//    shares of what the guarantees leave.
//  - Reclaims stop no job larger than the reclaiming one (a gang is not
//    stopped to give a few GPUs), unless its queue is short of its
//    guarantee by the victim's whole size (the scheduler, scheduler.cc).
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

  // How many GPUs of type t queue q is short of its guarantee (the larger
  // of the type's and the total's shortfall; 0 when none).
  int64_t Deficit(int32_t q, int32_t t) const;

  // Fair share (above). Whether `j` may reclaim toward it: its queue shares
  // fairly, is below its guarantee (or at or past it, with
  // `past_guarantee`), and another queue's share is above its own.
  bool MayReclaimForShare(const core::PendingJob& j, bool past_guarantee) const;
  // Whether a reclaim by a job of queue `by` from queue q follows the
  // fair-share rule (both not nested, `by` with a guarantee over all types)
  // rather than the guarantee rule.
  bool SharesWith(int32_t by, int32_t q) const { return SharesFairly(by) && Flat(q); }
  // Whether such a `j` may take from queue q (q's share exceeds its own
  // queue's after the start).
  bool ShareReclaimableFrom(const core::PendingJob& j, int32_t q) const;
  // Whether, with `taken` (queue, GPUs) stopped for `j`, every queue taken
  // from under the fair-share rule stays above `j`'s queue as that rule
  // says (above).
  bool ShareKeepsOrder(const core::PendingJob& j, const std::vector<std::pair<int32_t, int64_t>>& taken,
                       bool past_guarantee) const;
  // Whether queue q, not nested, with a guarantee over all types, keeps it
  // with `gpus` fewer (true for other queues: the borrowing rule covers
  // them); and the same for every (queue, GPUs) of `taken`, summed.
  bool KeepsGuarantee(int32_t q, int64_t gpus) const;
  bool KeepGuarantees(const std::vector<std::pair<int32_t, int64_t>>& taken) const;
  // Whether taking `gpus` from queue q for `j` keeps q above j's queue as
  // the fair-share rule says (above).
  bool KeepsOrder(const core::PendingJob& j, int32_t q, int64_t gpus, bool past_guarantee) const;
  // Counts `gpus` more (or fewer) for queue q's share from now on: a
  // preemptor's held placement, its victims.
  void Commit(int32_t q, int64_t gpus);
  // Whether starting `j` on free GPUs of type t would leave its queue open
  // to a fair-share reclaim by a job that waits in another queue, no larger
  // than `j` and able to use that type: that job should have the GPUs
  // instead (else the start is undone by a reclaim at a loss). Fills
  // r.queue_used and r.queue_limit (the guarantee) when so.
  bool YieldsToFairShare(const core::PendingJob& j, int32_t t, core::PendingReason& r) const;
  // Queue q's share after holding `delta` more GPUs (of any type).
  double ShareAfter(int32_t q, int64_t delta) const;

 private:
  static constexpr int32_t kMaxDepth = 64;  // nesting (validated acyclic by the configuration)
  int32_t Parent(int32_t q) const;
  // Whether q takes part in fair share as a reclaimer (not nested, a
  // guarantee over all types) or as a victim (not nested).
  bool SharesFairly(int32_t q) const;
  bool Flat(int32_t q) const;
  // GPUs queue q holds of type t (kAnyGpuType: of every type).
  int64_t Used(int32_t q, int32_t t) const;
  bool WithinGuarantee(int32_t q, int32_t t, int64_t gpus) const;
  bool OverGuarantee(int32_t q, int32_t t) const;
  // The queues from q up, stopping before the first one `other` is nested
  // under too.
  std::vector<int32_t> Branch(int32_t q, int32_t other) const;

  const core::ClusterSnapshot& snap_;
  std::vector<std::vector<int64_t>> usage_;  // per queue, per GPU type, descendants included
  std::vector<bool> has_children_;           // per queue
  // Per queue, GPUs held over all types, less jobs being stopped, plus
  // preemptors' held placements and starts this cycle (for shares).
  std::vector<int64_t> committed_;
  // Queues that may reclaim toward fair share and have ready jobs waiting:
  // (queue, GPU type of the job or kAnyGpuType, its GPUs), the smallest
  // job of each (queue, type).
  struct Waiting {
    int32_t queue;
    int32_t type;
    int64_t gpus;
  };
  std::vector<Waiting> waiting_;
};

}  // namespace muster::scheduler
