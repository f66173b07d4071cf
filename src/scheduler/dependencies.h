// Dependencies: whether a pending job's afterok/afterany/afternotok/after
// conditions hold, wait, or can never hold.
//
//   after J       satisfied once J has started (or ended, as a cancelled one);
//                 with a delay, that long after it first started (or ended).
//   afterok J     satisfied when J is COMPLETED; never if J ended otherwise.
//   afterany J    satisfied when J reached any terminal state.
//   afternotok J  satisfied when J ended in a terminal state other than
//                 COMPLETED; never if J COMPLETED.
// A job whose dependency names a job the cluster does not know can never run.
// All conditions must hold (Slurm's ","), or with PendingJob::dependencies_any
// any one (Slurm's "?"): then the job can never run only once none can hold.
#pragma once

#include <string>

#include "core/snapshot.h"

namespace muster::scheduler {

struct DependencyVerdict {
  enum Kind { kSatisfied, kWaiting, kNever } kind = kSatisfied;
  core::JobId job = 0;  // the first dependency that waits or failed
  std::string why;      // for kNever: "afterok 12: job ended FAILED"
};

DependencyVerdict EvaluateDependencies(const core::PendingJob& job, const core::ClusterSnapshot& snap);

}  // namespace muster::scheduler
