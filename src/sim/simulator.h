// Simulator: replays a trace through the real scheduler and ClusterState
// under a simulated clock.
//
// The simulator links the same scheduling and lifecycle code as the server
// and swaps only the clock (SimClock) and the agents: each node has a
// simulated agent whose replicas report their end (exit 0, or the time
// limit) after the trace's duration, through lifecycle::JobLifecycle, and a
// preempted job is stopped through it too. Node failures (SimOptions::
// node_failures) silence a node's agent: lifecycle::NodeLiveness finds it
// unreachable, then lost, as the server's does, and the lifecycle requeues
// the gangs that ran there (the other agents stop their replicas at once).
// Events are processed in (time, sequence) order: at each event time,
// completions first, then node failures and liveness checks, then
// arrivals, then one scheduling cycle whose bindings start jobs. After every event the touched nodes are checked
// (capacity never exceeded, so no GPU is held twice; gangs whole); the whole
// state is audited every `audit_every` events and at the end, and every job
// must have ended when the trace is done. A violation stops the run with an
// error naming the event, the time and the seed.
//
// Trace jobs become job specs as follows. A job of G GPUs on nodes of at
// most S GPUs is one replica of G when G <= S; otherwise R replicas of d GPUs
// where d is the largest divisor of G not above S (16 -> 2x8; 12 -> 2x6).
// Fractional GPU requests take a whole GPU. The time limit is
// ceil(time_limit_factor x duration), at least 1 s, or `time_limit` for
// every job (a site's limit: longer jobs end at it, TIMEOUT). The trace's
// tenant is the queue and its priority p the class "p<p>" with weight
// p x 10000. The submitter is the trace's user; a trace without users gets
// "<tenant>/<GPUs>" (jobs of one size in one tenant stand for one user's),
// for the scheduler's run-time predictions (core/run_time_predictor.h).
// With preemption, a cycle whose preemptions stopped jobs is followed at
// once by another, where the preemptors start on their held capacity.
// Rows the simulator cannot run (unknown duration, no GPUs) are kept in the
// result as skipped, with the reason; jobs that can never fit the cluster
// (or no longer fit it once nodes are lost) are reported as unschedulable.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "lifecycle/node_liveness.h"
#include "scheduler/fairshare.h"
#include "scheduler/scheduler.h"
#include "sim/cluster_file.h"
#include "sim/job_story.h"
#include "sim/trace_reader.h"

namespace muster::sim {

struct SimOptions {
  scheduler::SchedulerOptions scheduler;
  // Fair-share between tenants (each tenant is a queue, with the cluster
  // file's share, else 1); weight 0 turns it off.
  scheduler::FairShareOptions fairshare;
  bool equal_shares = false;  // ignore the cluster file's shares: every tenant gets 1
  double time_limit_factor = 2.0;
  Duration time_limit = Duration::Infinite();  // when finite: every job's, instead of the factor's
  // Actual run time = duration x U(1 - noise, 1 + noise); 0 = exact.
  double runtime_noise = 0.0;
  uint64_t seed = 1;
  int64_t audit_every = 4096;  // full invariant audit period in events; 1 = every event
  // Preemption (scheduler/preemption.h, with scheduler.preemption's
  // minimum run time): every class is preemptible (the highest only by a
  // queue reclaiming its guarantee), classes above the lowest may preempt. Every job checkpoints after each
  // `checkpoint_interval` of progress; a victim stops at once, loses the
  // work since its last checkpoint, and pays `restart_cost` when it runs
  // again.
  bool preemption = false;
  Duration checkpoint_interval = Duration::Minutes(30);
  Duration restart_cost = Duration::Minutes(1);
  // For traces without priorities: each job goes to class p1 with this
  // probability (seeded), the others keep the trace's.
  double high_priority_fraction = 0;
  // Nodes whose agents go silent for good at a time: the work since each
  // of their jobs' last checkpoint (checkpoint_interval) is lost.
  struct NodeFailure {
    std::string node;
    int64_t at_s = 0;
  };
  std::vector<NodeFailure> node_failures;
  lifecycle::LivenessOptions liveness;
  // Spot reclaims: at `at_s` the cloud gives notice that it takes the node
  // back `reclaim_notice` later. The node is drained at once, and each of
  // its jobs gets the checkpoint signal: it writes a checkpoint of
  // `checkpoint_gb_per_gpu` x its GPUs, the writes of all jobs given notice
  // sharing `checkpoint_gbps` of storage bandwidth one after another (0:
  // unlimited, a write takes no time), and stops once its write is done,
  // losing only the restart; a write not done by the deadline is cut off
  // and the job loses the work since its last periodic checkpoint. The
  // node comes back `reclaim_downtime` after the deadline (0: never).
  struct Reclaim {
    std::string node;
    int64_t at_s = 0;
  };
  std::vector<Reclaim> reclaims;
  // Bursts: at `at_s`, notices for `fraction` of the spot nodes (all nodes
  // if none is spot), drawn with the seed, spread over the next minute.
  struct ReclaimBurst {
    int64_t at_s = 0;
    double fraction = 0;
  };
  std::vector<ReclaimBurst> reclaim_bursts;
  Duration reclaim_notice = Duration::Minutes(2);
  Duration reclaim_downtime = Duration::Zero();
  double checkpoint_gb_per_gpu = 10;
  double checkpoint_gbps = 0;
  // With spot nodes in the cluster (cluster file `spot: true`): each job
  // may run on them with this probability (seeded); the others require
  // on-demand nodes.
  double spot_fraction = 1.0;
  // Each job checkpoints (every checkpoint_interval, and when given a
  // reclaim notice) with this probability (seeded); the others never do: a
  // preemption, a lost node or a reclaim costs them all of their run.
  double checkpointing_fraction = 1.0;
  bool stories = false;  // keep each job's story (SimResult::stories)
  // Elastic gangs: a job of R >= 2 replicas may run on between
  // max(1, ceil(R x elastic_min)) and R (0: every gang is fixed). Its work
  // is its duration at R replicas; with n it progresses n/R as fast (linear
  // scaling), and each resize costs `restart_cost` of no progress (the
  // group re-forms from a checkpoint taken for it: no work lost). Its time
  // limit is that of its duration at its minimum.
  double elastic_min = 0;

  Status Validate() const;
};

// Replicas x GPUs per replica for a trace job of `gpus` GPUs on nodes of at
// most `node_gpus`: one replica when it fits a node, else the largest
// divisor of `gpus` not above `node_gpus` per replica (16 on 8 -> 2 x 8).
std::pair<int32_t, int64_t> GangShape(int64_t gpus, int64_t node_gpus);

enum class Outcome { kCompleted, kTimeout, kUnschedulable, kSkippedNoDuration, kSkippedNoGpus };
const char* OutcomeName(Outcome o);

struct JobResult {
  std::string trace_id;
  core::JobId id = 0;
  Outcome outcome = Outcome::kCompleted;
  int64_t submit_s = 0;
  int64_t start_s = -1;  // -1: never started
  int64_t end_s = -1;
  int64_t gpus = 0;
  int32_t replicas = 0;
  int32_t nodes = 0;  // distinct nodes of the placement
  std::string tenant;
  std::string priority_class;
  int32_t preemptions = 0;  // times it was stopped for another job
  int32_t node_losses = 0;  // times a node it ran on was lost
  int32_t reclaims = 0;     // times it was stopped by a reclaim notice
  // The start its first reservation promised (-1: it never had one): a
  // start after it is a reservation that slipped.
  int64_t promised_start_s = -1;
  // Runs ended early (preempted, or a node lost), [start, stop); the last
  // run is [LastStart(), end_s).
  std::vector<std::pair<int64_t, int64_t>> stopped_runs;
  int64_t last_start_s = -1;  // -1: start_s
  // Work it lost to preemption and lost nodes (since the last checkpoint),
  // restart costs included, in GPU-seconds; part of HeldGpuSeconds().
  int64_t lost_gpu_seconds = 0;
  int64_t LastStart() const { return last_start_s >= 0 ? last_start_s : start_s; }
  bool Ran() const { return start_s >= 0 && end_s >= LastStart(); }
  // Seconds it ran, over all its runs.
  int64_t RanSeconds() const {
    if (!Ran()) return 0;
    int64_t s = end_s - LastStart();
    for (const auto& [a, b] : stopped_runs) s += b - a;
    return s;
  }
  // GPU-seconds held over all its runs (an elastic job's at each size).
  int64_t HeldGpuSeconds() const { return RanSeconds() * gpus + resized_gpu_seconds; }
  int64_t resized_gpu_seconds = 0;  // elastic: GPU-seconds held below its full size (<= 0)
  int32_t min_replicas = 0;         // elastic: its minimum (0: a fixed gang)
  int32_t resizes = 0;              // elastic: times it grew or shrank
  // Elastic: (time, change in GPUs held) whenever a run held other than
  // its full size (its edges count runs at `gpus`; these correct them).
  std::vector<std::pair<int64_t, int64_t>> size_changes;
  bool censored = false;
  std::string note;  // why skipped or unschedulable
};

// One change in a finished job's life, for sweeps over time: at `t` the
// job arrives (waiting +1), a run starts (waiting -1, held +gpus), a run is
// stopped early (waiting +1, held -gpus) or the job ends (held -gpus).
struct JobEdge {
  int64_t t = 0;
  size_t job = 0;  // index into the jobs given
  int32_t waiting = 0;
  int64_t held = 0;
};
// The edges of every job that ran, in time order.
std::vector<JobEdge> JobEdges(const std::vector<JobResult>& jobs);

struct SimResult {
  std::vector<JobResult> jobs;
  std::string cluster_summary;
  std::string policy;
  double time_limit_factor = 0;
  Duration time_limit = Duration::Infinite();  // SimOptions::time_limit
  std::string backfill_by;                     // "prediction" or "limit"
  uint64_t seed = 0;
  int64_t total_gpus = 0;
  int64_t cycles = 0;
  int64_t events = 0;
  int64_t audits = 0;
  int64_t reservations_made = 0;  // summed over cycles
  int64_t backfilled = 0;
  int64_t max_pending = 0;
  int64_t first_submit_s = 0;
  int64_t last_end_s = 0;
  int64_t busy_gpu_seconds = 0;  // includes work preemption lost
  int64_t preemptions = 0;       // victims stopped
  int64_t growths = 0;           // elastic jobs grown
  int64_t shrinks = 0;           // elastic jobs that gave back replicas
  int64_t lost_gpu_seconds = 0;  // progress lost by victims (and to lost nodes), restart costs included
  int64_t nodes_lost = 0;
  int64_t reclaims = 0;                  // reclaim notices
  int64_t reclaim_stops = 0;             // jobs stopped by a notice
  int64_t reclaim_checkpointed = 0;      // of those, checkpointed before the deadline
  int64_t reclaim_lost_gpu_seconds = 0;  // progress lost by jobs stopped by a notice
  bool preemption = false;
  int64_t checkpoint_interval_s = 0;
  int64_t fairshare_weight = 0;
  std::map<std::string, double> shares;  // the shares used (empty: all equal)
  std::vector<JobStory> stories;         // with SimOptions::stories, runnable jobs in submit order
};

StatusOr<SimResult> Simulate(const std::vector<TraceJob>& trace, const ClusterDescription& cluster,
                             const SimOptions& options);

}  // namespace muster::sim
