// ClusterState: the single owner of nodes, jobs and allocations.
//
// Exactly one thread (the control loop, or the simulator's) owns a
// ClusterState and is its only writer. It interns GPU types, leaf switches,
// spines and queues into dense ids, keeps the pending list and the running set
// ordered by expected end, and hands out read-only ClusterSnapshots for the
// scheduler. Scheduling decisions come back through Bind(), Grow() (an
// elastic job's new replicas) and Nominate() (a preemption's victims); a job
// that can never run ends through EndPending(). The lifecycle (Finish,
// Requeue, MarkStopping, ShrinkTo, Hold, Release) is applied by the owner.
//
// Bind() also picks the GPU devices of each replica (the lowest free
// indices on the node) and records which job holds each device.
//
// Every mutating call validates its input and returns a Status; a rejected
// call changes nothing. CheckInvariants() verifies the accounting from
// scratch (no GPU device held by two jobs, no capacity exceeded, free ==
// capacity - allocations, every running gang whole, the per-class and
// per-queue counts right) and is run by tests and
// the simulator; CheckNode() does the same for one node, cheaply.
//
// Thread-safety: none; one owner thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/decisions.h"
#include "core/job.h"
#include "core/node.h"
#include "core/run_time_predictor.h"
#include "core/snapshot.h"

namespace muster::core {

// A queue's quota by GPU type name; the key "*" counts every type together.
struct QueueConfig {
  std::string name;
  std::map<std::string, int64_t> guarantee;
  std::map<std::string, int64_t> limit;
  std::string parent;  // the queue it is nested under (listed beside it), or empty
};

struct ClusterConfig {
  // Priority classes by name. The default set: low 0 (preemptible), normal
  // 10000, high 20000 (may preempt), interactive 30000 (interactive, at
  // most 8 hours, its victims get at most 30 s to stop).
  std::vector<PriorityClass> priority_classes = {
      {"low", 0, true, false},
      {"normal", 10'000, false, false},
      {"high", 20'000, false, true},
      {"interactive", 30'000, false, true, true, Duration::Hours(8), Duration::Seconds(30)}};
  std::string default_priority_class = "normal";
  std::vector<QueueConfig> queues;  // quotas; other queues have none
};

// Everything known about one job, pending, running or finished.
struct JobRecord {
  JobId id = 0;
  JobSpec spec;
  Time submit_time;
  JobState state = JobState::kPending;
  Time start_time = Time::Max();   // first start of the current attempt
  Time first_start = Time::Max();  // first start of any attempt
  Time end_time = Time::Max();
  std::vector<Allocation> allocations;  // while running
  std::string reason;                   // for terminal states: why it ended
  bool preempt_immune = false;          // see RunningJob::preempt_immune
  Time released_at = Time::Zero();      // when a hold on it was last released
  int64_t attained_gpu_seconds = 0;     // GPUs x seconds of its runs that were requeued
  Duration queued = Duration::Zero();   // time pending before its current or last start
};

class ClusterState {
 public:
  explicit ClusterState(ClusterConfig config = {});

  // A new configuration for what runs on (a reload): queues' quotas, class
  // weights and flags, the default class. The classes there are must stay,
  // in their order (jobs hold their index); new ones may follow them.
  // Refused, and nothing changed, otherwise.
  Status Reconfigure(ClusterConfig config);

  // Adds a node. Errors: duplicate name, negative capacity.
  StatusOr<NodeIndex> AddNode(const NodeSpec& spec);
  // Marks a node (un)schedulable: cordon, drain, unreachable.
  Status SetSchedulable(NodeIndex node, bool schedulable);
  // Sets what a node can do (its agent now reports Podman, say). Running
  // jobs are not moved; the scheduler places by the new set from its next
  // cycle. Errors: unknown node, more than kMaxNodeFeatures distinct
  // feature names in the cluster.
  Status SetFeatures(NodeIndex node, const std::vector<std::string>& features);
  // Changes a node's capacity (its agent reports more or fewer GPUs, CPUs
  // or memory than before). Refused (FailedPrecondition, nothing changes)
  // while running jobs hold more than the new capacity or a GPU device the
  // new capacity no longer has: the owner applies it once they have ended.
  Status SetCapacity(NodeIndex node, const Resources& capacity);

  // Replaces the admin reservations. A node not yet known is taken into
  // its reservation when it joins; pending jobs are matched to theirs by
  // name again.
  void SetReservations(std::vector<AdminReservation> reservations);
  const std::vector<AdminReservation>& reservations() const { return reservation_specs_; }

  // Accepts a job. `id` 0 assigns the next id. Errors name the field:
  // "replicas: must be >= 1, got 0".
  StatusOr<JobId> Submit(JobSpec spec, Time submit_time, JobId id = 0);
  // The id the next Submit without one gets.
  JobId NextId() const { return next_id_; }

  // The read-only view for one scheduling cycle; valid until the next mutation.
  ClusterSnapshot Snapshot(Time now) const;

  // Starts a pending job on the binding's allocations, on each node's lowest
  // free GPU devices, or on `gpu_ids` (one list per allocation, its GPUs'
  // device indices): a restart puts a running job back on the devices it
  // holds, not on whichever are lowest. Errors (nothing changes): unknown or
  // non-pending job, replica count mismatch, capacity exceeded on a node,
  // GPU type mismatch, device lists that do not match the allocations, name
  // a device twice or one that is not free.
  Status Bind(const Binding& binding, Time now, const std::vector<std::vector<int32_t>>* gpu_ids = nullptr);
  // Elastic jobs (JobSpec::min_replicas). Grow: adds replicas to a running
  // job on `allocations` (appended after its present ones, on each node's
  // lowest free GPU devices, or `gpu_ids`), up to its maximum. MarkShrinking:
  // its newest replicas are stopping (it is neither grown nor shrunk again
  // until ShrinkTo). ShrinkTo: releases all but its first `replicas`
  // replicas (the newest go; not below its minimum). Errors (nothing
  // changes): not running, not elastic, outside its range, as for Bind.
  Status Grow(JobId job, const std::vector<Allocation>& allocations, Time now,
              const std::vector<std::vector<int32_t>>* gpu_ids = nullptr);
  Status MarkShrinking(JobId job);
  Status ShrinkTo(JobId job, int32_t replicas, Time now);
  // Ends a running job in a terminal state and releases its resources.
  Status Finish(JobId job, JobState terminal, Time now, std::string reason = {});
  // Ends a pending or held job without running it (cancel, dependency failure).
  Status EndPending(JobId job, JobState terminal, Time now, std::string reason);
  // Returns a running job to PENDING (requeue, preemption, node loss, a
  // retry): its resources are released and it keeps its original submit
  // time, so it keeps its age. It may start again no earlier than
  // `not_before` (a retry's backoff) or its spec's begin time. The run,
  // from its start to `now`, counts to the job's attained service. The
  // attempt count lives with the owner.
  Status Requeue(JobId job, Time now, std::string reason, Time not_before = Time::Zero());
  // Preemption bookkeeping (scheduler/preemption.h). MarkStopping: a
  // running job is being stopped and will have released its resources by
  // `by` (its grace period), which the backfill plan then counts on.
  // NoteCheckpoint: its newest checkpoint is from `at`, or it checkpoints
  // every `interval` from its start. Nominate: capacity held for a pending
  // job while the jobs preempted for it stop (empty clears it).
  // SetPreemptImmune: the job is not chosen as a victim again.
  Status MarkStopping(JobId job, Time by);
  Status NoteCheckpoint(JobId job, Time at, Duration interval = Duration::Infinite());
  Status Nominate(JobId job, std::vector<Allocation> allocations, std::vector<JobId> victims);
  Status SetPreemptImmune(JobId job, bool immune);
  // A restart reloading a pending job's earlier attempts: the service they
  // attained (GPUs x seconds), the time it waited before them, and since
  // when it waits now (the end of its last attempt). Call before Bind for a
  // job that runs again.
  Status RestoreService(JobId job, int64_t attained_gpu_seconds, Duration queued_before, Time pending_since);
  // Records a job that had already ended before this state was built (a
  // restart reloading history), so dependencies on it resolve;
  // `first_start`: when it first ran (Max: never).
  Status RestoreEnded(JobId id, JobSpec spec, Time submit_time, JobState state, Time end_time, std::string reason,
                      Time first_start = Time::Max());
  // Holds or releases a pending job. A held job is not eligible: its age
  // counts from `now`, the release (scheduler/priority.h).
  Status Hold(JobId job);
  Status Release(JobId job, Time now = Time::Zero());

  // Recomputes every node's free capacity from the running allocations and
  // compares; also checks gangs are whole and no node is over capacity.
  Status CheckInvariants() const;
  // The device-level checks of CheckInvariants() for one node: every held
  // device belongs to a running job that lists it, and the count of held
  // devices matches capacity - free.
  Status CheckNode(NodeIndex node) const;

  const JobRecord* Find(JobId id) const;
  const std::vector<Node>& nodes() const { return nodes_; }
  // The node named `name`, if there is one.
  std::optional<NodeIndex> FindNode(const std::string& name) const {
    auto it = node_by_name_.find(name);
    if (it == node_by_name_.end()) return std::nullopt;
    return it->second;
  }
  size_t pending_count() const { return pending_.size(); }
  size_t running_count() const { return running_.size(); }
  const std::unordered_map<JobId, RunningJob>& running() const { return running_; }
  // Running jobs by expected end (start + time limit, or the end of a stop's grace).
  const EndOrder& running_by_end() const { return running_by_end_; }
  // A run of `user`'s job that ended on its own after `ran`, from before
  // this state was built (a restart reloading history); Finish notes the
  // runs that end here.
  void NoteRunTime(const std::string& user, Duration ran) { predictor_.Note(predictor_.Intern(user), ran); }
  const std::unordered_map<JobId, JobRecord>& jobs() const { return jobs_; }
  const ClusterConfig& config() const { return config_; }

  // Dense-id names. GpuTypeName(kAnyGpuType) is "any".
  const std::string& GpuTypeName(int32_t id) const;
  const std::string& LeafName(int32_t id) const { return leaves_[id]; }
  const std::string& QueueName(int32_t id) const { return queues_[id]; }
  std::optional<int32_t> FindGpuType(std::string_view name) const;
  // The names of the features in `mask`, comma-separated ("" for none).
  // "on-demand" is named only where some node is spot: elsewhere every node
  // has it, and every job not allowed on spot needs it.
  std::string FeatureNames(FeatureMask mask) const;
  // The dense id of queue `name`, made if new.
  int32_t QueueId(const std::string& name);
  // GPUs the running jobs of each queue hold, by GPU type (dense ids).
  const std::vector<std::vector<int64_t>>& queue_usage() const { return queue_usage_; }
  // (queue, GPUs its running jobs hold) for every queue that holds some.
  std::vector<std::pair<int32_t, int64_t>> GpusByQueue() const;
  int32_t num_queues() const { return static_cast<int32_t>(queues_.size()); }

 private:
  int32_t Intern(std::vector<std::string>& names, std::unordered_map<std::string, int32_t>& ids,
                 const std::string& name);
  void RemovePending(JobId id);
  PendingJob MakePending(JobId id, const JobSpec& spec, Time submit_time, int32_t priority_class);
  // Resolves the configured quotas to dense queue and GPU type ids, and
  // sizes the usage counts.
  void ResolveQuotas();
  // Interns a queue or GPU type name (quotas and usage are indexed by both),
  // resolving the quotas again when it is new.
  int32_t InternQuotaKey(std::vector<std::string>& names, std::unordered_map<std::string, int32_t>& ids,
                         const std::string& name);
  // The same for a GPU type, whose names match without regard to case.
  int32_t InternGpuType(const std::string& name);
  // The bits of `names`, interned; `field` names the field in errors
  // (more than kMaxNodeFeatures distinct names in the cluster).
  StatusOr<FeatureMask> InternFeatures(const std::vector<std::string>& names, const std::string& field);
  // A node's mask: its features, and each choice ("a|b") one of them meets.
  StatusOr<FeatureMask> NodeFeatureMask(const std::vector<std::string>& features);
  // Validates a placement of replicas of `per_replica` for `job` on GPU
  // type `gpu_type` (kAnyGpuType: any one type) in what is free, and the
  // devices named for it; returns how many replicas it places. With
  // `one_per_node` no node holds two; with `exclusive` each allocation is
  // its whole node's capacity, all of it free (JobSpec::exclusive).
  StatusOr<int32_t> CheckPlacement(JobId job, const Resources& per_replica, int32_t gpu_type,
                                   const std::vector<Allocation>& allocations,
                                   const std::vector<std::vector<int32_t>>* gpu_ids, bool one_per_node = false,
                                   bool exclusive = false) const;
  // Takes the resources of a checked placement and its devices (those named,
  // or the lowest free); returns the devices per allocation.
  std::vector<std::vector<int32_t>> TakeDevices(JobId job, const std::vector<Allocation>& allocations,
                                                const std::vector<std::vector<int32_t>>* gpu_ids);
  // Adds (+1) or removes (-1) a running job's GPUs from its queue's usage.
  void CountUsage(const RunningJob& r, int sign);

  ClusterConfig config_;
  std::vector<Node> nodes_;
  std::vector<std::vector<JobId>> gpu_owner_;  // per node, per device: holder or 0
  uint64_t nodes_version_ = 0;
  std::unordered_map<std::string, NodeIndex> node_by_name_;
  std::vector<std::string> gpu_types_, leaves_, spines_, queues_;
  std::unordered_map<std::string, int32_t> gpu_type_ids_, leaf_ids_, spine_ids_, queue_ids_;
  std::vector<int32_t> leaf_spine_;
  std::vector<AdminReservation> reservation_specs_;
  std::vector<ReservationWindow> reservations_;  // parallel to reservation_specs_
  int32_t ReservationOf(const std::string& name) const;
  std::vector<std::string> features_;  // by bit
  std::unordered_map<std::string, int32_t> class_ids_;

  std::unordered_map<JobId, JobRecord> jobs_;
  std::unordered_map<JobId, ClusterSnapshot::JobStatus> job_states_;
  std::vector<PendingJob> pending_;
  std::unordered_map<JobId, size_t> pending_pos_;
  std::unordered_map<JobId, RunningJob> running_;
  std::vector<int64_t> running_per_class_;
  int64_t running_elastic_ = 0;
  std::vector<QueueQuota> quotas_;                 // per dense queue
  std::vector<std::vector<int64_t>> queue_usage_;  // per dense queue, per GPU type
  EndOrder running_by_end_;
  EndOrder running_by_predicted_end_;
  RunTimePredictor predictor_;
  JobId next_id_ = 1;
};

}  // namespace muster::core
