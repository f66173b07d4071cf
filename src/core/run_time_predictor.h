// RunTimePredictor: how long a user's next job will run, from how long that
// user's last two jobs ran (Tsafrir, Etsion and Feitelson, "Backfilling
// Using System-Generated Predictions Rather than User Runtime Estimates",
// IEEE TPDS 2007).
//
// Users' time limits are poor run-time estimates: most jobs end far before
// their limit, and many users give none. A user's consecutive jobs tend to
// run for similar times, so the mean of the last two is a far better guess
// than the limit. The backfill plan uses the prediction, never above the
// limit, for when running jobs will end and how long a reserved or
// backfilled job holds its nodes; the limit alone still ends a job (a
// prediction never kills anything). A running job that outlives its
// prediction is planned to run to its limit (scheduler/backfill_plan.h).
//
// Example: alice's last jobs ran 2 h and 4 h: her next is predicted at 3 h;
// with a 24 h limit it is planned to end 3 h after its start, and if it
// still runs then, at its limit.
//
// Users are interned into dense ids; id -1 is "no user" and has no history.
// Only runs that ended on their own count (completed, failed, timed out,
// out of memory): a cancelled, preempted or lost run says nothing about how
// long the job needed.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/time.h"
#include "core/job.h"

namespace muster::core {

// Whether a run that ended in `s` counts: it ended on its own.
inline bool EndedOnItsOwn(JobState s) {
  return s == JobState::kCompleted || s == JobState::kFailed || s == JobState::kTimeout || s == JobState::kOutOfMemory;
}

class RunTimePredictor {
 public:
  // The dense id of `user`, made if new; -1 for the empty name.
  int32_t Intern(const std::string& user);
  // A run of `user`'s job that ended on its own after `ran`.
  void Note(int32_t user, Duration ran);
  // The mean of the user's last two runs (its only one, with one);
  // Infinite with none.
  Duration Predict(int32_t user) const;

 private:
  struct History {
    Duration last = Duration::Infinite();
    Duration before = Duration::Infinite();
  };
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<History> history_;
};

}  // namespace muster::core
