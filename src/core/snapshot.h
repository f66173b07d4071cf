// ClusterSnapshot: the read-only view of the cluster that one scheduling
// cycle reads, and the value types it is made of.
//
// A snapshot is built by ClusterState::Snapshot() on the control-loop thread
// and read by the scheduler on the same thread while nothing mutates the state
// (one thread decides). It holds spans and pointers into ClusterState, so it
// is valid only until the state's next mutation. The scheduler never writes
// through it; it returns Decisions (decisions.h) that the owner applies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/time.h"
#include "core/job.h"
#include "core/node.h"
#include "core/resources.h"
#include "core/run_time_predictor.h"

namespace muster::core {

inline constexpr int32_t kAnyGpuType = -1;

struct PriorityClass {
  std::string name;
  int64_t weight = 0;  // priority points added to every job of this class
  // Running jobs of this class may be preempted (checkpoint signal, grace
  // period, back to pending) for a pending job of a class with a higher
  // weight that may preempt.
  bool preemptible = false;
  bool may_preempt = false;
  // Interactive work (notebooks, debugging shells): its pending jobs are
  // placed first in every cycle, before any reservation is made, so
  // backfill never delays them; blocked, they preempt jobs of preemptible
  // classes below them (best-effort work) without waiting for the victims'
  // minimum run time. Such a class may preempt and is not preemptible.
  bool interactive = false;
  // The longest time limit its jobs may ask for; a job naming none gets it
  // (if below the default). Infinite: no bound.
  Duration max_time_limit = Duration::Infinite();
  // The longest grace period (stop signal to SIGKILL) a job it preempts
  // gets, whatever its own: how long a preemptor may wait. Infinite: the
  // victim's own.
  Duration preempt_grace = Duration::Infinite();
};

// Resources one job holds on one node.
struct Allocation {
  NodeIndex node = 0;
  int32_t replicas = 0;
  Resources resources;  // replicas x per-replica resources
  bool operator==(const Allocation&) const = default;
};

// A queue's quota in GPUs, per dense GPU type and over all types: the
// guarantee (what it may reclaim from borrowing queues by preemption) and
// the limit (the most it may hold). A queue without one has guarantee 0 and
// no limit.
inline constexpr int64_t kNoLimit = INT64_MAX;
struct QueueQuota {
  std::vector<int64_t> guarantee;  // per GPU type (missing: 0)
  std::vector<int64_t> limit;      // per GPU type (missing: kNoLimit)
  int64_t guarantee_total = 0;
  int64_t limit_total = kNoLimit;
  // The queue it is nested under (an organization), or -1. A parent's usage
  // is its own and all its descendants'; its limit and guarantee bound them
  // together.
  int32_t parent = -1;

  int64_t Guarantee(int32_t type) const {
    return type >= 0 && static_cast<size_t>(type) < guarantee.size() ? guarantee[type] : 0;
  }
  int64_t Limit(int32_t type) const {
    return type >= 0 && static_cast<size_t>(type) < limit.size() ? limit[type] : kNoLimit;
  }
};

// An admin's reservation (Slurm's `scontrol create reservation`): its
// nodes, from `start` until `end`, belong to the jobs that name it. Other
// jobs may use them only to end (by their limits) before `start`.
struct AdminReservation {
  std::string name;
  std::vector<std::string> nodes;
  Time start, end;
  bool operator==(const AdminReservation&) const = default;
};
// A reservation as the scheduler sees it: its nodes' indices (those that
// have joined).
struct ReservationWindow {
  std::string name;
  std::vector<NodeIndex> nodes;
  Time start, end;
};
// PendingJob::reservation when it names none, or one that does not exist
// (deleted, or ended and forgotten).
inline constexpr int32_t kNoReservation = -1;
inline constexpr int32_t kReservationGone = -2;

// A job waiting to be placed, in dense form.
struct PendingJob {
  JobId id = 0;
  Time submit_time;
  int32_t priority_class = 0;  // index into ClusterSnapshot::classes
  int32_t queue = 0;           // dense queue id
  int32_t replicas = 1;
  // Elastic: it may start with as few as this many (JobSpec::min_replicas).
  int32_t min_replicas = 0;
  Resources per_replica;
  int32_t gpu_type = kAnyGpuType;     // dense id, or kAnyGpuType
  FeatureMask required_features = 0;  // its nodes must have these
  Duration time_limit = Duration::Infinite();
  TopologyScope topology = TopologyScope::kAny;
  bool one_per_node = false;  // JobSpec::one_per_node
  bool exclusive = false;     // JobSpec::exclusive
  JobId run_group = 0;        // JobSpec::run_group and run_group_limit
  int32_t run_group_limit = 0;
  Time begin_time;  // Time::Zero() when none
  // Its reservation: an index into ClusterSnapshot::reservations, or
  // kNoReservation, or kReservationGone.
  int32_t reservation = kNoReservation;
  bool held = false;
  Time released_at;                                     // when a hold was last released; Time::Zero() when never
  Duration known_duration = Duration::Infinite();       // SJF baseline only
  Duration checkpoint_interval = Duration::Infinite();  // JobSpec::checkpoint_interval
  // Its submitter, a dense RunTimePredictor id (-1: unknown).
  int32_t user = -1;
  // GPUs x seconds it ran in earlier runs of this job (stopped by
  // preemption, a lost node, a retry): the service a least-attained-service
  // order ranks by (scheduler/order/attained_service_order.h).
  int64_t attained_gpu_seconds = 0;
  // Pending since (its submit, or the requeue that ended its last run), and
  // how long it waited before that, over all its earlier stretches pending.
  Time pending_since;
  Duration queued_before = Duration::Zero();
  // Held time and time before its begin time do not count.
  Duration QueuedFor(Time now) const {
    const Time from = std::max({pending_since, begin_time, released_at});
    return queued_before + (now > from ? now - from : Duration::Zero());
  }
  std::vector<Dependency> dependencies;
  bool dependencies_any = false;  // JobSpec::dependencies_any
  // Capacity freed for this job by preempting `victims`: held for it until
  // it starts (the owner drops a nomination that outlives its use).
  std::vector<Allocation> nominated;
  std::vector<JobId> victims;

  int64_t total_gpus() const { return per_replica.gpus * replicas; }
  bool elastic() const { return min_replicas > 0 && min_replicas < replicas; }
};

struct RunningJob {
  JobId id = 0;
  Time start;
  Time expected_end = Time::Max();  // start + time limit; Max() without a limit
  // start + its predicted run (ClusterSnapshot::PredictedRun, at its
  // start), never after expected_end: when the backfill plan expects it
  // to end while it has not run past it.
  Time predicted_end = Time::Max();
  JobId run_group = 0;  // JobSpec::run_group
  int32_t priority_class = 0;
  int32_t queue = 0;
  std::vector<Allocation> allocations;
  // The GPU device indices held on each allocation's node (parallel to
  // allocations), chosen by ClusterState::Bind. The scheduler counts GPUs;
  // the agent will expose exactly these devices to the job.
  std::vector<std::vector<int32_t>> gpu_ids;
  // Work a preemption would lose runs from the newest checkpoint: the one
  // the owner noted, or (simulations) the last multiple of the interval
  // since start; without either, from the start.
  Time last_checkpoint = Time::Zero();
  Duration checkpoint_interval = Duration::Infinite();
  // Being stopped (cancel, requeue, preemption); expected_end is then the
  // end of its grace period. Never chosen as a victim.
  bool stopping = false;
  // Evicted once for a job that then did not start: not evicted again.
  bool preempt_immune = false;
  // GPUs x seconds of its earlier runs (PendingJob::attained_gpu_seconds).
  int64_t attained_before_gpu_seconds = 0;
  // How long it had waited, over all its stretches pending, when this run
  // started (PendingJob::QueuedFor).
  Duration queued = Duration::Zero();
  // Elastic jobs: the replica range (JobSpec::min_replicas, replicas; both
  // 0 for a fixed gang), and whether replicas are being given back (its
  // newest ones stop; ClusterState::ShrinkTo releases them once ended).
  int32_t min_replicas = 0;
  int32_t max_replicas = 0;
  bool shrinking = false;
  Resources per_replica;              // one replica's resources
  FeatureMask required_features = 0;  // its nodes must have these
  // Since when it has held its present GPUs: its last resize (Max: none, its start).
  Time held_since = Time::Max();
  // GPUs x seconds of this run before held_since (an elastic job's earlier sizes).
  int64_t resized_gpu_seconds = 0;

  Time NewestCheckpoint(Time now) const {
    Time t = std::max(start, last_checkpoint);
    if (!checkpoint_interval.is_infinite() && checkpoint_interval.millis() > 0 && now > start) {
      const int64_t k = (now - start).millis() / checkpoint_interval.millis();
      t = std::max(t, start + Duration::Millis(k * checkpoint_interval.millis()));
    }
    return t;
  }
  int64_t gpus() const {
    int64_t g = 0;
    for (const Allocation& a : allocations) g += a.resources.gpus;
    return g;
  }
  int32_t replicas() const {
    int32_t n = 0;
    for (const Allocation& a : allocations) n += a.replicas;
    return n;
  }
  bool elastic() const { return min_replicas > 0 && min_replicas < max_replicas; }
  // Its service so far: earlier runs, and this one up to `now`.
  int64_t AttainedGpuSeconds(Time now) const {
    const Time since = held_since.is_max() ? start : held_since;
    return attained_before_gpu_seconds + resized_gpu_seconds +
           (now > since ? gpus() * ((now - since).millis() / 1000) : 0);
  }
};

// Running jobs ordered by expected (or predicted) end, then id.
using EndOrder = std::set<std::pair<Time, JobId>>;

struct ClusterSnapshot {
  Time now;
  std::span<const Node> nodes;
  // Changes whenever a node is added or its schedulability changes.
  uint64_t nodes_version = 0;
  int32_t num_gpu_types = 0;
  int32_t num_leaves = 0;
  int32_t num_spines = 0;
  std::span<const int32_t> leaf_spine;  // spine id of each leaf
  // The pools' feature bits (core/node.h): both 0 while no node is spot.
  FeatureMask spot_pool = 0, on_demand_pool = 0;
  std::span<const PendingJob> pending;
  std::span<const ReservationWindow> reservations;
  const EndOrder* running_by_end = nullptr;
  // The same jobs by RunningJob::predicted_end (null: by expected end),
  // and the predictions (null: none).
  const EndOrder* running_by_predicted_end = nullptr;
  const RunTimePredictor* predictor = nullptr;
  const std::unordered_map<JobId, RunningJob>* running = nullptr;
  std::span<const PriorityClass> classes;
  // Running jobs per class (parallel to classes).
  std::span<const int64_t> running_per_class;
  // Running elastic jobs (RunningJob::elastic).
  int64_t running_elastic = 0;
  // Fair-share points per dense queue id (empty = all zero).
  std::span<const int64_t> queue_fairshare;
  // Fair-share weights per dense queue id (missing: 1): a queue's share
  // past its guarantee is divided by it (scheduler/queue_quotas.h).
  std::span<const double> queue_shares;
  // Quotas per dense queue id (missing: none), and the GPUs each queue's
  // running jobs hold per dense GPU type (missing: 0).
  std::span<const QueueQuota> quotas;
  const std::vector<std::vector<int64_t>>* queue_usage = nullptr;

  int64_t UsageOf(int32_t queue, int32_t type) const {
    if (queue_usage == nullptr || queue < 0 || static_cast<size_t>(queue) >= queue_usage->size()) return 0;
    const auto& u = (*queue_usage)[queue];
    return type >= 0 && static_cast<size_t>(type) < u.size() ? u[type] : 0;
  }
  const QueueQuota* QuotaOf(int32_t queue) const {
    return queue >= 0 && static_cast<size_t>(queue) < quotas.size() ? &quotas[queue] : nullptr;
  }
  // State of any job known to the cluster, when it first started, and when
  // an ended one ended: for dependencies, and the age of the jobs waiting
  // on them.
  struct JobStatus {
    JobState state = JobState::kPending;
    Time start = Time::Max();  // its first start; Max while it never ran
    Time end = Time::Max();    // set when it reaches a terminal state
  };
  const std::unordered_map<JobId, JobStatus>* job_states = nullptr;

  // How long `j` is expected to run: its user's recent run times, at most
  // its limit; its limit without a history.
  Duration PredictedRun(const PendingJob& j) const {
    return std::min(predictor == nullptr ? Duration::Infinite() : predictor->Predict(j.user), j.time_limit);
  }

  // A known job's status; nullptr for one the cluster does not know.
  const JobStatus* StatusOf(JobId id) const {
    if (job_states == nullptr) return nullptr;
    auto it = job_states->find(id);
    return it == job_states->end() ? nullptr : &it->second;
  }
  std::optional<JobState> StateOf(JobId id) const {
    const JobStatus* s = StatusOf(id);
    return s ? std::optional(s->state) : std::nullopt;
  }
  // When an ended job ended; nullopt while it has not (or is unknown).
  std::optional<Time> EndOf(JobId id) const {
    if (job_states == nullptr) return std::nullopt;
    auto it = job_states->find(id);
    if (it == job_states->end() || !IsTerminal(it->second.state)) return std::nullopt;
    return it->second.end;
  }
};

// GPUs on schedulable nodes.
inline int64_t SchedulableGpus(const ClusterSnapshot& snap) {
  int64_t gpus = 0;
  for (const Node& n : snap.nodes) {
    if (n.schedulable) gpus += n.spec.capacity.gpus;
  }
  return gpus;
}

}  // namespace muster::core
