// Preemption: which running jobs to stop so that a blocked job can start.
//
// A pending job of a class that may preempt, blocked for capacity, may stop
// running jobs that are all of:
//   - of a preemptible class with a lower weight than its own,
//   - running for at least `min_run_time`,
//   - not already stopping, not chosen for another job this cycle, and not
//     immune (evicted once already for a job that then did not start).
// A victim set is valid when, with the victims' resources returned, the
// whole gang has a placement (placement.h) in what is free now. Among valid
// sets the one chosen loses the least work, then has the fewest victims:
// a victim's lost work is its GPUs x the time since its newest checkpoint
// (RunningJob::NewestCheckpoint).
//
// Algorithm (exact where it is cheap, greedy beyond):
//  0. Once per cycle, the VictimPool: every running job that could be a
//     victim of some job (all but the class rule), with its lost work,
//     cheapest first, and the candidates on each node.
//  1. One node: for every node that could hold the whole gang, the cheapest
//     subset of the victims on it (all subsets up to 8 candidates there,
//     cheapest-first beyond) that frees enough. Nodes are visited cheapest
//     candidate first and the walk stops once no subset there could beat
//     the best found.
//  2. Any placement (gangs of several replicas only; one replica always
//     fits one node): add candidates cheapest first until the gang fits,
//     then drop, most expensive first, every victim the placement does not
//     need.
//  3. The better of the two by (lost work, victims).
// A job is never preempted for a job that could not then start: the
// returned placement is valid once the victims are gone, and the scheduler
// holds it for the preemptor (ClusterState::Nominate) until it starts.
//
// Example: 2 nodes of 8 GPUs; node a runs two 4-GPU jobs with 10 and 20
// GPU-minutes since their checkpoints, node b one 8-GPU job with 24. An
// 8-GPU preemptor takes node b (24 < 30); with 40 on node b it takes both
// jobs on node a.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/decisions.h"
#include "core/snapshot.h"
#include "scheduler/free_index.h"
#include "scheduler/placement.h"

namespace muster::scheduler {

struct PreemptionOptions {
  bool enabled = true;
  Duration min_run_time = Duration::Minutes(5);
  int32_t max_per_cycle = 4;  // preemptors per cycle
  // Only jobs of preemptible classes are victims, also of a queue reclaiming
  // its guarantee; true: a reclaim may stop jobs of any class in queues that
  // borrow (a job on borrowed GPUs is then preemptible by reclaim).
  bool reclaim_any_class = false;
  // Queues at or past their guarantee reclaim toward their fair share too
  // (queue_quotas.h); by default only queues below their guarantee reclaim.
  bool reclaim_past_guarantee = false;

  Status Validate() const;
};

// GPUs x seconds since the job's newest checkpoint.
int64_t LostGpuSeconds(const core::RunningJob& r, Time now);

// Whether some running job could be a victim of a job of class `preemptor`
// by the class counts alone (cheap: no running job is visited).
bool AnyVictimClass(const core::ClusterSnapshot& snap, int32_t preemptor_class, const PreemptionOptions& options);

// The running jobs that could be victims this cycle (past the minimum run
// time, not stopping, not immune), cheapest first, of:
//   kByClass     preemptible classes below the highest class that may preempt;
//   kReclaim     preemptible classes (a queue reclaiming its guarantee);
//   kReclaimAny  every class (reclaim_any_class);
//   kInteractive preemptible classes below the highest interactive class,
//                also before their minimum run time (an interactive job
//                waits seconds, not minutes).
class VictimPool {
 public:
  struct Candidate {
    const core::RunningJob* job = nullptr;
    int64_t cost = 0;          // lost GPU-seconds
    int64_t weight = 0;        // its class weight
    bool preemptible = false;  // its class is
  };
  enum class Kind { kByClass, kReclaim, kReclaimAny, kInteractive };
  VictimPool(const core::ClusterSnapshot& snap, const PreemptionOptions& options, Kind kind);

  const std::vector<Candidate>& candidates() const { return candidates_; }
  // Indexes into candidates() of the jobs on node n with what each holds
  // there, cheapest first.
  std::span<const std::pair<size_t, core::Resources>> OnNode(NodeIndex n) const {
    return {entries_.data() + begin_[n], static_cast<size_t>(size_[n])};
  }
  // Nodes with candidates, cheapest candidate first.
  const std::vector<NodeIndex>& nodes() const { return nodes_; }

 private:
  std::vector<Candidate> candidates_;
  // OnNode lists, one after the other (node n's from begin_[n]).
  std::vector<std::pair<size_t, core::Resources>> entries_;
  std::vector<uint32_t> begin_, size_;
  std::vector<NodeIndex> nodes_;
};

// The victims for `job` (of `shape`) from `pool` given what is free now
// (`free_now`, copied when needed). `usable(n)`: whether capacity returned
// on node n may go to this job (false for nodes promised to others).
// `taken`: victims already chosen this cycle. `eligible`: whether this job
// may preempt a candidate (a lower class, or a queue that borrows).
// nullopt when no valid set exists.
std::optional<core::Preemption> ChooseVictims(const core::PendingJob& job, const Shape& shape, const VictimPool& pool,
                                              const FreeIndex& free_now, const std::function<bool(NodeIndex)>& usable,
                                              const std::unordered_set<core::JobId>& taken,
                                              const std::function<bool(const VictimPool::Candidate&)>& eligible);

}  // namespace muster::scheduler
