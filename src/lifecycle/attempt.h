// Attempt: one run of a job's gang, from the scheduler's bind to the end
// of its last replica, as the lifecycle keeps it.
//
// A job that is retried or requeued gets a new attempt under the same id,
// numbered 1, 2, ...; the old one is kept only as an AttemptRecord in the
// job's history. An attempt's replicas are placed at its bind (node and GPU
// devices each) and end one by one; the attempt ends when the last has. An
// elastic job's attempt also gains replicas and gives its newest back
// while it runs (JobLifecycle::Grow, Shrink).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "core/job.h"
#include "core/node.h"
#include "lifecycle/replica_exit.h"
#include "lifecycle/retry_policy.h"

namespace muster::lifecycle {

// What the lifecycle needs of a job's spec; the owner derives it from the
// API spec (server) or the trace (simulator).
struct JobTerms {
  RetryPolicy retry;
  // Between the stop signal (the checkpoint signal) and SIGKILL.
  Duration grace = Duration::Seconds(30);
  Duration time_limit = Duration::Infinite();
  // With it, an attempt that reported progress once and then stops for this
  // long fails as hung (JobLifecycle::SweepStalls).
  std::optional<Duration> stall_timeout;
  // Slurm's job model: replica 0 runs the batch script and the others only
  // serve its steps, so the attempt ends when replica 0 does (its others
  // are stopped, their ends no failure) and as replica 0 ended.
  bool first_replica_decides = false;
};

struct Replica {
  core::NodeIndex node = 0;
  std::vector<int32_t> gpus;  // device indices on its node
  bool seen = false;          // its agent has reported it
  // Its node's desired-state generation once its stop was released (0:
  // not released): a report of that generation or later that does not
  // list the replica proves its node never started it.
  int64_t stop_generation = 0;
  bool ended = false;
  Time end = Time::Zero();  // when it ended (within the attempt's span)
  std::string result;       // how it ended, in words ("exited 0")
  // Elastic jobs: given back (its node stops it; however it ends, the job
  // runs on without it), and added to a running attempt but not yet in the
  // store (its agent hears of it once it is).
  bool leaving = false;
  bool durable = true;
  Time start = Time::Zero();  // added to the running attempt at (Zero: its start)
};

struct Attempt {
  int32_t number = 1;
  JobTerms terms;
  // terms.grace as its replicas were started: a shim that fences itself
  // keeps it, however CutGrace has shortened terms.grace since.
  Duration started_grace = Duration::Zero();
  // By replica index, never reused within the attempt: an elastic job's
  // replicas added later come after every earlier one, and those it gave
  // back stay here, ended.
  std::vector<Replica> replicas;
  // The index of the first replica of each of the running job's
  // allocations (parallel to core::RunningJob::allocations): allocation k
  // holds replicas first_replica[k] onwards, one per replica it places.
  std::vector<int32_t> first_replica;
  // Elastic: giving back replicas, keeping this many (0: not).
  int32_t shrink_to = 0;
  Time start;
  bool durable = false;  // its bind is in the store: agents may run it
  // Being torn down: to `ending` (a final state), or back to PENDING
  // (`requeue`). Neither: it runs.
  std::optional<core::JobState> ending;
  bool requeue = false;
  std::string ending_reason;
  ReplicaExit failure;     // the first failing replica's end
  bool node_lost = false;  // a replica ended for its node's fault (ReplicaExit::NodesFault)
  // A staggered stop reaches the agents at this time (checkpoint signals
  // spread out so shared storage is not flooded); Zero: at once.
  Time stop_at = Time::Zero();
  bool urgent_stop = false;  // its staggered stop has a deadline (StopPace::kUrgent)

  bool Stopping() const { return ending.has_value() || requeue; }
  bool StopReleased(Time now) const { return Stopping() && now >= stop_at; }
  // Replicas running and staying (not ended, not leaving).
  int32_t Staying() const {
    int32_t n = 0;
    for (const Replica& r : replicas) n += !r.ended && !r.leaving;
    return n;
  }
  bool AllEnded() const {
    for (const Replica& r : replicas) {
      if (!r.ended) return false;
    }
    return true;
  }
};

// An ended attempt, as the job's history shows it.
struct AttemptRecord {
  int32_t number = 0;
  Time start, end;
  bool requeued = false;                              // went back to PENDING (requeue, preemption, drain, retry)
  core::JobState state = core::JobState::kCompleted;  // how it ended (with requeued: what it implied)
  std::string reason;
  struct ReplicaRecord {
    core::NodeIndex node = 0;
    std::string result;
    int32_t gpus = 0;  // how many it held
    // An elastic job's replica added later or given back: its own span
    // (else it held its GPUs for the attempt's whole span).
    std::optional<std::pair<Time, Time>> span;
  };
  std::vector<ReplicaRecord> replicas;
  std::optional<int64_t> last_step;  // the last step it reported progress at, if it did
  // How its process ended, where one ended by itself (Slurm's ExitCode
  // "code:signal"): 0 for a success, the first failing replica's code or
  // signal for a failure. Unset when something else ended it (a time limit,
  // OOM, a cancel, its node).
  std::optional<int32_t> exit_code;
  int32_t exit_signal = 0;
};

// Retries and requeues of one job, over all its attempts.
struct JobHistory {
  int32_t retries = 0;             // user failures retried (count against retry.limit)
  int32_t requeues = 0;            // infrastructure failures requeued (do not count)
  Time not_before = Time::Zero();  // the last retry's backoff ends here
};

}  // namespace muster::lifecycle
