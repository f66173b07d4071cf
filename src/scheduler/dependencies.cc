#include "scheduler/dependencies.h"

namespace muster::scheduler {

using core::DependencyType;
using core::JobState;

DependencyVerdict EvaluateDependencies(const core::PendingJob& job, const core::ClusterSnapshot& snap) {
  DependencyVerdict waiting;     // the first that waits
  DependencyVerdict impossible;  // the first that can never hold
  for (const core::Dependency& d : job.dependencies) {
    const std::string label = std::string(core::DependencyTypeName(d.type)) + " " + std::to_string(d.job);
    const core::ClusterSnapshot::JobStatus* status = snap.StatusOf(d.job);
    bool never = status == nullptr, satisfied = false;
    std::string why = label + ": no such job";
    if (status != nullptr) {
      const JobState state = status->state;
      const bool terminal = core::IsTerminal(state);
      const bool ok = state == JobState::kCompleted;
      switch (d.type) {
        case DependencyType::kAfterOk:
        case DependencyType::kAfterCorr:  // one the server did not resolve: its own job
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
        case DependencyType::kAfter: {
          // Started, or ended without (cancelled): from then, after its delay.
          const Time since = std::min(status->start, terminal ? status->end : Time::Max());
          satisfied = state != JobState::kPending && state != JobState::kHeld &&
                      (d.delay <= Duration::Zero() || (!since.is_max() && snap.now >= since + d.delay));
          break;
        }
      }
      why = label + ": job ended " + core::JobStateName(state);
    }
    if (satisfied && job.dependencies_any) return {};
    if (never && impossible.kind == DependencyVerdict::kSatisfied) impossible = {DependencyVerdict::kNever, d.job, why};
    if (never && !job.dependencies_any) return impossible;
    if (!satisfied && !never && waiting.kind == DependencyVerdict::kSatisfied) {
      waiting = {DependencyVerdict::kWaiting, d.job, {}};
    }
  }
  // Any one holding is enough: none holds; it waits while one still may.
  if (job.dependencies_any && !job.dependencies.empty() && waiting.kind == DependencyVerdict::kSatisfied) {
    return impossible;
  }
  return waiting;
}

}  // namespace muster::scheduler
