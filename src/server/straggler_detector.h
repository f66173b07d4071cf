// StragglerDetector: finds the replica of a gang that trains well behind
// its siblings, from the steps each replica reports (POST
// /v1/jobs/{id}/progress with its replica). A slow GPU, a throttled or
// degraded node, a bad link: the gang waits for its slowest replica at each
// step, so one straggler slows them all.
//
// A replica's step rate is its steps over the time between its first and
// last report within `window`. It straggles when that rate is below `ratio`
// times the median rate of its siblings (those with a rate), and has done
// so for `after` without a break; it recovers at the first evaluation that
// finds it at or above. A replica needs `min_reports` reports in the window
// for a rate, and a gang at least two replicas with rates.
//
// Owned by the control loop's thread; a pure function of the reports and
// the times given (tests drive it with a fake clock).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "common/time.h"

namespace muster::server {

struct StragglerOptions {
  double ratio = 0.5;
  Duration window = Duration::Minutes(5);
  Duration after = Duration::Minutes(2);
  int32_t min_reports = 3;
  bool cordon = false;  // the control loop's policy: cordon a straggler's node
};

class StragglerDetector {
 public:
  explicit StragglerDetector(StragglerOptions options) : options_(options) {}

  // Replica `replica` of `job`'s attempt `attempt` reported `step` at `now`.
  // A report of a newer attempt forgets the older one's.
  void Note(int64_t job, int32_t attempt, int32_t replica, int64_t step, Time now);

  // A replica that became a straggler, or recovered.
  struct Change {
    int64_t job = 0;
    int32_t attempt = 0;
    int32_t replica = 0;
    bool straggling = false;
    double rate = 0;           // its steps per second
    double siblings_rate = 0;  // the median of its siblings'
  };
  // Evaluates `job`'s replicas at `now`.
  std::vector<Change> Evaluate(int64_t job, Time now);

  struct ReplicaRate {
    int32_t replica = 0;
    int64_t step = 0;            // its last reported step
    std::optional<double> rate;  // steps per second, once it has one
    bool straggling = false;
  };
  // Each replica of `job` that reported, by replica.
  std::vector<ReplicaRate> Rates(int64_t job, Time now) const;
  // How many replicas straggle now, over all jobs.
  int64_t Straggling() const;

  void Forget(int64_t job);

 private:
  struct Replica {
    std::deque<std::pair<Time, int64_t>> reports;  // within the window
    Time slow_since = Time::Max();                 // below the ratio since (Max: it is not)
    bool straggling = false;
  };
  struct Job {
    int32_t attempt = 0;
    std::map<int32_t, Replica> replicas;
  };
  std::optional<double> RateOf(const Replica& r) const;

  const StragglerOptions options_;
  std::map<int64_t, Job> jobs_;
};

}  // namespace muster::server
