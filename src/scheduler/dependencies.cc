#include "scheduler/dependencies.h"

namespace muster::scheduler {

using core::DependencyType;
using core::JobState;

DependencyVerdict EvaluateDependencies(const core::PendingJob& job,
                                       const core::ClusterSnapshot& snap) {
  DependencyVerdict waiting;
  for (const core::Dependency& d : job.dependencies) {
    const std::string label =
        std::string(core::DependencyTypeName(d.type)) + " " + std::to_string(d.job);
    const auto state = snap.StateOf(d.job);
    if (!state) return {DependencyVerdict::kNever, d.job, label + ": no such job"};
    const bool terminal = core::IsTerminal(*state);
    const bool ok = *state == JobState::kCompleted;
    bool never = false, satisfied = false;
    switch (d.type) {
      case DependencyType::kAfterOk:
        satisfied = ok;
        never = terminal && !ok;
        break;
      case DependencyType::kAfterAny:
        satisfied = terminal;
        break;
      case DependencyType::kAfterNotOk:
        satisfied = terminal && !ok;
        never = ok;
        break;
      case DependencyType::kAfter:
        satisfied = *state != JobState::kPending && *state != JobState::kHeld;
        break;
    }
    if (never) {
      return {DependencyVerdict::kNever, d.job,
              label + ": job ended " + core::JobStateName(*state)};
    }
    if (!satisfied && waiting.kind == DependencyVerdict::kSatisfied) {
      waiting = {DependencyVerdict::kWaiting, d.job, {}};
    }
  }
  return waiting;
}

}  // namespace muster::scheduler
