#include "core/job.h"

namespace muster::core {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "PENDING";
    case JobState::kHeld:
      return "HELD";
    case JobState::kStarting:
      return "STARTING";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kCompleting:
      return "COMPLETING";
    case JobState::kCompleted:
      return "COMPLETED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kCancelled:
      return "CANCELLED";
    case JobState::kTimeout:
      return "TIMEOUT";
    case JobState::kOutOfMemory:
      return "OUT_OF_MEMORY";
    case JobState::kNodeFail:
      return "NODE_FAIL";
    case JobState::kPreempted:
      return "PREEMPTED";
  }
  return "UNKNOWN";
}

std::optional<JobState> JobStateFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(JobState::kPreempted); ++i) {
    const auto s = static_cast<JobState>(i);
    if (name == JobStateName(s)) return s;
  }
  return std::nullopt;
}

const char* JobStateCode(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "PD";
    case JobState::kHeld:
      return "PD";
    case JobState::kStarting:
      return "CF";
    case JobState::kRunning:
      return "R";
    case JobState::kCompleting:
      return "CG";
    case JobState::kCompleted:
      return "CD";
    case JobState::kFailed:
      return "F";
    case JobState::kCancelled:
      return "CA";
    case JobState::kTimeout:
      return "TO";
    case JobState::kOutOfMemory:
      return "OOM";
    case JobState::kNodeFail:
      return "NF";
    case JobState::kPreempted:
      return "PR";
  }
  return "??";
}

bool IsTerminalName(std::string_view name) {
  const std::optional<JobState> s = JobStateFromName(name);
  return s && IsTerminal(*s);
}

bool IsTerminal(JobState s) {
  switch (s) {
    case JobState::kCompleted:
    case JobState::kFailed:
    case JobState::kCancelled:
    case JobState::kTimeout:
    case JobState::kOutOfMemory:
    case JobState::kNodeFail:
    case JobState::kPreempted:
      return true;
    default:
      return false;
  }
}

bool IsValidTransition(JobState from, JobState to) {
  using S = JobState;
  if (IsTerminal(from)) return false;  // terminal states never change
  switch (from) {
    case S::kPending:
      // Start, hold, or end without running (cancel, dependency never satisfied).
      return to == S::kStarting || to == S::kRunning || to == S::kHeld || to == S::kCancelled || to == S::kFailed;
    case S::kHeld:
      return to == S::kPending || to == S::kCancelled;
    case S::kStarting:
    case S::kRunning:
    case S::kCompleting:
      // Any end, or back to pending for a retry, requeue or preemption.
      return to != S::kHeld && to != from;
    default:
      return false;
  }
}

const char* DependencyTypeName(DependencyType t) {
  switch (t) {
    case DependencyType::kAfterOk:
      return "afterok";
    case DependencyType::kAfterAny:
      return "afterany";
    case DependencyType::kAfterNotOk:
      return "afternotok";
    case DependencyType::kAfter:
      return "after";
    case DependencyType::kAfterCorr:
      return "aftercorr";
  }
  return "?";
}

const char* TopologyScopeName(TopologyScope s) {
  switch (s) {
    case TopologyScope::kNode:
      return "node";
    case TopologyScope::kLeaf:
      return "leaf";
    case TopologyScope::kSpine:
      return "spine";
    case TopologyScope::kAny:
      return "any";
  }
  return "?";
}

}  // namespace muster::core
