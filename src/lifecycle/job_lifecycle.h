// JobLifecycle: a job's life after the scheduler's decision.
//
// The scheduler decides what starts where; the lifecycle carries it out and
// follows each attempt to its end: the replicas its agents run, a replica
// failing (the rest of the gang is stopped), retries with backoff, requeue
// of the whole gang, the grace period of a stop (cancel, requeue, drain,
// preemption), time limits, hangs, and nodes lost. It is the one place
// these rules live: the server, `muster sim` and the lifecycle transcripts
// (test/transcripts/lifecycle/*.txt) drive this class and nothing else.
//
// Like the scheduler, it does no I/O and reads time only from the Clock it
// is given. Each step appends what it changed to an Effects (effects.h):
// the owner persists and sends that. It mutates the ClusterState it is
// given (Requeue, Finish, MarkStopping) so resources are released exactly
// when an attempt ends.
//
// An attempt's life:
//   1. Start: the scheduler bound the job (ClusterState::Bind); its
//      replicas are placed, each on a node with its GPU devices. Agents run
//      it once its bind is durable (MarkDurable). An elastic job's attempt
//      may then grow (new replicas, run once durable) and give back its
//      newest replicas (stopped; their ends are no failure).
//   2. Replicas end (Report, ReplicaEnded). All exited 0: COMPLETED. The
//      first failing replica decides the final state (Classify) and the
//      others are stopped first (the job shows COMPLETING until they are).
//      In Slurm's job model (JobTerms::first_replica_decides) replica 0
//      exiting 0 completes the job too: its other replicas are stopped.
//   3. Stop: cancel (to CANCELLED), requeue, drain and preemption (back to
//      PENDING, free of charge) tear an attempt down the same way: the stop
//      is released to the agents at once, or staggered (stops that ask for
//      a checkpoint: at most checkpoint_signals_per_second, and within the
//      storage's write bandwidth; those with a
//      deadline, of a reclaimed node, ahead of the others), and the
//      backfill plan counts on the resources after the grace period.
//   4. The attempt ends when its last replica has; resources are released
//      only then, so a GPU never holds two attempts. The job is retried
//      (retry_policy.h), requeued, or ends in its final state.
// A replica on a node with no agent (a static node from the configuration)
// runs nothing: such an attempt ends at once when stopped, and at its time
// limit (SweepTimeLimits).
//
// Desired state: each node has a generation, raised whenever what it should
// run changes (Touch; listed in Effects::touched). An agent's report says up
// to which generation it has acted, which is how a replica its node never
// started is told from one still on its way.
//
// Thread-safety: none; one owner thread (the control loop's).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "core/cluster_state.h"
#include "lifecycle/attempt.h"
#include "lifecycle/effects.h"

namespace muster::lifecycle {

struct LifecycleOptions {
  // Stops that ask for a checkpoint reach agents at most this many a second
  // (0: no limit).
  int32_t checkpoint_signals_per_second = 0;
  // The checkpoint storage's write bandwidth, in bytes a second, that the
  // checkpoints of staggered stops share: a stop's turn lasts at least its
  // job's last checkpoint size over it (NoteCheckpointSize), so a burst of
  // stops writes one checkpoint after another instead of all at once. A job
  // with no checkpoint yet takes the signal rate's turn. 0: no budget.
  int64_t checkpoint_bytes_per_second = 0;
};

// One task in an agent's report.
struct TaskStatus {
  core::JobId job = 0;
  int32_t attempt = 0;
  int32_t replica = 0;
  bool running = true;
  ReplicaExit exit;  // when !running
};

struct NodeReport {
  core::NodeIndex node = 0;
  std::vector<TaskStatus> tasks;
  // The node's desired-state generation the agent had acted on when it
  // made the report; -1 when unknown (it acted on another server's).
  int64_t acted_on = -1;
};

struct ReportResult {
  struct Key {
    core::JobId job = 0;
    int32_t attempt = 0;
    int32_t replica = 0;
  };
  std::vector<Key> recorded;   // ends the agent may forget now
  bool changed = false;        // the report changed something
  bool replica_ended = false;  // a replica ended: resources may be freed
  bool unsettled = false;      // a stopped replica is unaccounted for: ask again soon
};

// What a restarted server knew of an attempt (from its stored status).
struct RestoredAttempt {
  // The first replica index of each allocation (AllocationsJson), when the
  // attempt was resized; empty: replicas in order from 0.
  std::vector<int32_t> first_replica;
  std::vector<int32_t> leaving;  // replicas being given back
  int32_t shrink_to = 0;
  // Replicas added after the attempt's start: when. And replicas given back
  // and ended: their GPUs and span (they hold nothing now).
  std::vector<std::pair<int32_t, Time>> starts;
  struct GivenBack {
    int32_t replica = 0;
    int32_t gpus = 0;
    Time start, end;
  };
  std::vector<GivenBack> given_back;
  std::vector<int32_t> ended_replicas;
  std::vector<std::pair<int32_t, std::string>> results;  // (replica, result)
  std::optional<core::JobState> ending;
  bool requeue = false;
  std::string ending_reason;
  bool stopping = false;  // it was being torn down
};

// When a stop reaches the agents.
enum class StopPace {
  kAtOnce,     // a cancel, a failure: nothing to wait for
  kStaggered,  // asks for a checkpoint: waits its turn (checkpoint_signals_per_second)
  kUrgent,     // asks for a checkpoint before a deadline (a reclaimed node):
               // takes its turn ahead of every kStaggered stop not yet released
};

enum class StopOutcome {
  kUnchanged,  // already ending in a final state (or being requeued, and asked to requeue)
  kStopping,   // its replicas are being stopped: it shows COMPLETING
  kEnded,      // nothing ran: the attempt ended at once
};

class JobLifecycle {
 public:
  // `state` and `clock` must outlive this object. `has_agent(node)`: whether
  // an agent serves the node (else it is a static node that runs nothing).
  JobLifecycle(core::ClusterState& state, const Clock& clock, LifecycleOptions options,
               std::function<bool(core::NodeIndex)> has_agent);

  // The attempt of a job just bound (or, with `restored`, restored after a
  // restart: its bind is durable then). Its replicas follow the running
  // job's allocations in order. Its nodes are touched.
  Status Start(core::JobId job, int32_t number, JobTerms terms, bool durable, Effects& fx,
               const RestoredAttempt* restored = nullptr);
  // The bind of attempt `number` is in the store: agents may run it.
  void MarkDurable(core::JobId job, int32_t number);

  // Stops a running attempt: to `final_state` (cancel), or back to PENDING
  // (`requeue`), at `pace` (a requeue, drain or preemption is kStaggered).
  // A cancel of an attempt being requeued turns it into an end (released at
  // once); a second stop of an attempt ending in a final state changes
  // nothing, and neither does a second requeue, but for an urgent one of a
  // stop still waiting its turn: it moves ahead.
  StopOutcome Stop(core::JobId job, std::optional<core::JobState> final_state, bool requeue, const std::string& reason,
                   StopPace pace, Effects& fx);
  // Gives a running attempt at most `grace` between its stop signal and
  // SIGKILL (call before Stop); its agent hears of it from the owner.
  void CutGrace(core::JobId job, Duration grace);
  // Fails a running attempt for a reason of the server's (a GPU fault, a
  // hang): `failure` is recorded as its failing end and decides the retry.
  void Fail(core::JobId job, core::JobState state, const ReplicaExit& failure, const std::string& reason, Effects& fx);

  // Elastic jobs. Grow: the running job gained allocations
  // (ClusterState::Grow); they become new replicas of the attempt, not
  // run until MarkGrowthDurable. Shrink: its replicas past its first `keep`
  // are given back (ClusterState::MarkShrinking): their nodes stop them
  // (signal, grace, SIGKILL) and however they end is no failure; once all
  // have ended the job is shrunk (ClusterState::ShrinkTo) and an event says
  // so. Both return the replica indexes concerned.
  std::vector<int32_t> Grow(core::JobId job, Effects& fx);
  void MarkGrowthDurable(core::JobId job, int32_t number);
  std::vector<int32_t> Shrink(core::JobId job, int32_t keep, const std::string& reason, Effects& fx);

  // One agent's report of the tasks on its node: ends replicas that ended,
  // marks those seen, ends those it no longer knows (lost) and those
  // stopped before it ever started them.
  ReportResult Report(const NodeReport& report, Effects& fx);
  // Replica `replica` of the current attempt of `job` ended.
  void ReplicaEnded(core::JobId job, int32_t replica, const ReplicaExit& exit, Effects& fx);
  // Every replica on `node` that has not ended ends as lost (`why`), and
  // the rest of each gang is stopped: requeued without spending a retry.
  void NodeLost(core::NodeIndex node, const std::string& why, Effects& fx);

  // Releases the staggered stops whose time has come.
  void ReleaseDueStops(Effects& fx);
  // When the next staggered stop is due (Max: none).
  Time NextStopDue() const;
  // When the next staggered stop could be released, were one asked for now.
  Time NextStopSlot() const;
  // Attempts on static nodes past their time limit end TIMEOUT (agents end
  // their own).
  void SweepTimeLimits(Effects& fx);
  // A progress report of the current attempt: `step` (if known). With the
  // job's stall timeout set, an attempt that reported progress once and then
  // stops for that long fails as hung (SweepStalls).
  void NoteProgress(core::JobId job, std::optional<int64_t> step);
  void SweepStalls(Effects& fx);

  // A desired-state change for `node` (its agent must hear of it).
  void Touch(core::NodeIndex node, Effects& fx);
  int64_t Generation(core::NodeIndex node) const;

  // The replicas `node` should run: (job, replica index), in job order of
  // its attempts. `not_durable` is set when one's bind is not yet durable.
  struct DesiredReplica {
    core::JobId job = 0;
    int32_t replica = 0;
  };
  std::vector<DesiredReplica> Desired(core::NodeIndex node, bool& not_durable) const;

  // Lookups.
  const Attempt* Find(core::JobId job) const;
  // Whether replica `replica` of attempt `attempt` of `job` is the current
  // attempt's and placed on `node` (else: a stale or unknown task).
  bool IsCurrent(core::JobId job, int32_t attempt, int32_t replica, core::NodeIndex node) const;
  const std::unordered_map<core::JobId, Attempt>& attempts() const { return attempts_; }
  const std::set<core::JobId>& AttemptsOn(core::NodeIndex node) const;
  // The longest grace period the replicas of attempts on `node` were
  // started with (zero: none there).
  Duration LongestGraceOn(core::NodeIndex node) const;
  // The job's state as shown: RUNNING or COMPLETING while it has an
  // attempt, else nullopt (ClusterState knows).
  std::optional<core::JobState> Shown(core::JobId job) const;
  const JobHistory* History(core::JobId job) const;
  void RestoreHistory(core::JobId job, JobHistory h) { history_[job] = h; }
  // The current attempt's last progress report (Zero: none yet) and its step (-1: none).
  Time LastProgress(core::JobId job) const;
  int64_t LastStep(core::JobId job) const;
  // The size of `job`'s last committed checkpoint: what its next one is
  // expected to write (LifecycleOptions::checkpoint_bytes_per_second).
  // Forgotten when the job ends.
  void NoteCheckpointSize(core::JobId job, int64_t bytes) { checkpoint_bytes_[job] = std::max<int64_t>(0, bytes); }

 private:
  // Starts tearing `a` down; ends it at once when no replica runs.
  StopOutcome BeginEnding(core::JobId job, std::optional<core::JobState> final_state, bool requeue,
                          const std::string& reason, StopPace pace, Effects& fx);
  // Gives `job`'s attempt its turn to be released: the next free one, or
  // for an urgent stop the first after the urgent ones already waiting,
  // every ordinary stop from there on moving one turn later.
  void TakeStopTurn(core::JobId job, Attempt& a, bool urgent);
  // Between `job`'s staggered stop and the next: the signal rate's turn,
  // or the time its checkpoint takes to write within the bandwidth.
  Duration StopTurn(core::JobId job) const;
  bool Staggers() const {
    return options_.checkpoint_signals_per_second > 0 || options_.checkpoint_bytes_per_second > 0;
  }
  std::unordered_map<core::JobId, int64_t> checkpoint_bytes_;  // its last checkpoint's size
  void ReleaseStop(Attempt& a, Effects& fx);
  void FinishAttempt(core::JobId job, Effects& fx);
  // A replica being given back ended: shrinks the job once all have.
  void LeftEnded(core::JobId job, Effects& fx);
  bool Managed(const Attempt& a) const;
  void Changed(core::JobId job, core::JobState state, std::optional<std::string> reason, Effects& fx) const;
  const std::string& NodeName(core::NodeIndex node) const;

  core::ClusterState& state_;
  const Clock& clock_;
  LifecycleOptions options_;
  std::function<bool(core::NodeIndex)> has_agent_;
  std::unordered_map<core::JobId, Attempt> attempts_;
  std::unordered_map<core::JobId, JobHistory> history_;
  std::unordered_map<core::NodeIndex, std::set<core::JobId>> on_node_;
  std::vector<int64_t> generation_;  // per node
  Time next_stop_slot_ = Time::Zero();
  Time next_urgent_slot_ = Time::Zero();
  Time released_until_ = Time::Zero();  // a turn after the last staggered stop released
  std::set<std::pair<Time, core::JobId>> delayed_stops_;
  struct Progress {
    Time last = Time::Zero();  // Zero: never reported
    int64_t step = -1;
  };
  std::unordered_map<core::JobId, Progress> progress_;  // current attempts only
};

}  // namespace muster::lifecycle
