// Decisions: what one scheduling cycle returns.
//
// The scheduler reads a ClusterSnapshot and returns Decisions; it performs no
// I/O and changes nothing. The server (or the simulator) applies the
// bindings and failures, stores the reasons and shows the reservations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/time.h"
#include "core/job.h"
#include "core/snapshot.h"

namespace muster::core {

// Start `job` now with these allocations (the whole gang: one decision).
struct Binding {
  JobId job = 0;
  std::vector<Allocation> allocations;
};

// Add replicas to running elastic job `job` on these allocations (appended
// after its present ones).
struct Growth {
  JobId job = 0;
  std::vector<Allocation> allocations;
};

// Give back the newest replicas of running elastic job `job`, keeping its
// first `keep` (at least its minimum).
struct Shrink {
  JobId job = 0;
  int32_t keep = 0;
};

// The backfill plan's promise: `job` starts at `start` on these allocations.
struct Reservation {
  JobId job = 0;
  Time start;
  std::vector<Allocation> allocations;
};

// Why a job is still pending. One code per job, with numbers.
enum class ReasonCode : uint8_t {
  kNone,
  kPriority,        // higher-priority jobs go first: jobs_ahead
  kResources,       // not enough free capacity with the right shape now
  kReservedFor,     // capacity is free but reserved for other_job
  kDependency,      // waits for other_job
  kBeginTime,       // begin_time in the future
  kHeld,            // user or admin hold
  kUnschedulable,   // can never fit this cluster as it is, or is larger than its queue's limit
  kPreempting,      // jobs were preempted for it: waits for other_job to stop
  kQuota,           // its queue would exceed its limit: queue_used of queue_limit
  kFairShare,       // its queue is past its guarantee (queue_used of queue_limit) and one with a smaller share waits
  kArrayTaskLimit,  // queue_limit tasks of its array run, the most it allows at once (Slurm's %K)
  kReservation,     // its admin reservation (`reservation`) starts at begin_time, ends too soon for its
                    // limit (at reservation_end), or is gone (reservation empty)
};
const char* ReasonCodeName(ReasonCode c);

struct PendingReason {
  JobId job = 0;
  ReasonCode code = ReasonCode::kNone;
  JobId other_job = 0;     // kReservedFor, kDependency
  int32_t jobs_ahead = 0;  // kPriority
  int32_t replicas = 0;    // kResources, kUnschedulable: what is needed...
  int64_t per_replica_gpus = 0;
  int32_t gpu_type = kAnyGpuType;
  TopologyScope scope = TopologyScope::kAny;
  FeatureMask features = 0;            // the node features it requires
  bool no_node_with_features = false;  // kUnschedulable: no schedulable node has them all
  int64_t free_gpus = 0;               // ...and what there is: free GPUs of that type,
  int64_t largest_node_free = 0;       // the largest free block on one node,
  int64_t largest_leaf_free = 0;       // and under one leaf switch.
  // kUnschedulable: a replica's CPU and memory, and the most of each that
  // one schedulable node with room for a replica's GPUs has (a job that no
  // node can hold for its CPU or memory is explained by those, not GPUs).
  int64_t per_replica_cpu_milli = 0;
  int64_t per_replica_memory_bytes = 0;
  int64_t largest_node_cpu_milli = 0;
  int64_t largest_node_memory_bytes = 0;
  Time planned_start = Time::Max();  // from the backfill plan; Max() = none
  int64_t queue_used = 0;            // kQuota: GPUs its queue holds (of that type, or in all)
  int64_t queue_limit = 0;           // kQuota, and kUnschedulable for a job larger than it: the queue's limit
  int32_t quota_level = 0;           // kQuota: 0 its own queue, 1 its parent, ...
  Time begin_time;
  std::string reservation;             // kReservation: its name
  Time reservation_end = Time::Max();  // kReservation: its end, when the job's limit runs past it
};

// A pending job that can never run, for example because a dependency ended
// in a way that can no longer satisfy it.
struct JobFailure {
  JobId job = 0;
  JobState state = JobState::kFailed;
  std::string reason;
};

// Stop `victims` (checkpoint signal, grace period, back to pending without
// spending a retry) so that `job` can start on `allocations`, which the
// owner holds for it (ClusterState::Nominate) until it starts.
struct Preemption {
  JobId job = 0;
  std::vector<JobId> victims;
  // Elastic jobs that give back replicas above their minimum instead (no
  // job is stopped whole for these).
  std::vector<Shrink> shrinks;
  std::vector<Allocation> allocations;
  int64_t lost_gpu_seconds = 0;           // GPUs x time since each victim's newest checkpoint
  bool reclaim = false;                   // the job's queue reclaims its guarantee (else: a higher class)
  bool for_service = false;               // the job has run less than its victims (the las policy)
  bool interactive = false;               // for a job of an interactive class: its victims stop ahead of other stops
  Duration grace = Duration::Infinite();  // the most a victim's grace period may be (the class's preemptGrace)
};

struct CycleStats {
  int32_t jobs_considered = 0;
  int32_t placements = 0;
  int32_t reservations = 0;
  int32_t backfilled = 0;  // started while a reservation was in force
  int32_t preemptions = 0;
  int32_t growths = 0;
  int32_t shrinks = 0;
  int64_t release_events_walked = 0;
};

struct Decisions {
  std::vector<Binding> bindings;
  std::vector<Reservation> reservations;
  std::vector<PendingReason> reasons;  // one per job left pending
  std::vector<JobFailure> failures;
  std::vector<Preemption> preemptions;
  std::vector<Growth> growths;
  CycleStats stats;
};

}  // namespace muster::core

namespace muster::core {

// One line for a human: "Resources: need 2x8 GPU (H100) within one leaf;
// free 12 GPU, largest node block 4, largest leaf block 12; 3 jobs ahead;
// planned start in 1h20m". `gpu_type_name` names r.gpu_type, and
// `feature_names` r.features (ClusterState::FeatureNames).
std::string FormatReason(const PendingReason& r, const std::string& gpu_type_name, Time now,
                         const std::string& feature_names = "");

}  // namespace muster::core
