#include "lifecycle/replica_exit.h"

#include <array>
#include <utility>

namespace muster::lifecycle {

namespace {

constexpr std::array<std::pair<ExitCause, const char*>, 11> kNames = {{
    {ExitCause::kExited, "exited"},
    {ExitCause::kStoppedByAgent, "stopped"},
    {ExitCause::kOutOfMemory, "oom"},
    {ExitCause::kTimeLimit, "timeout"},
    {ExitCause::kFenced, "fenced"},
    {ExitCause::kLost, "lost"},
    {ExitCause::kAgentShutdown, "agent-exit"},
    {ExitCause::kLaunchFailed, "launch"},
    {ExitCause::kNodeFault, "node"},
    {ExitCause::kStalled, "stalled"},
    {ExitCause::kNeverStarted, "unstarted"},
}};

}  // namespace

const char* ExitCauseName(ExitCause c) {
  for (const auto& [cause, name] : kNames) {
    if (cause == c) return name;
  }
  return "?";
}

bool ExitCauseFromName(std::string_view name, ExitCause& out) {
  for (const auto& [cause, n] : kNames) {
    if (name == n) {
      out = cause;
      return true;
    }
  }
  return false;
}

ExitMeaning Classify(const ReplicaExit& e) {
  using core::JobState;
  const std::string message = e.message.substr(0, 512);
  switch (e.cause) {
    case ExitCause::kOutOfMemory:
      return {JobState::kOutOfMemory, "ran out of memory (the cgroup's OOM killer ended it)"};
    case ExitCause::kTimeLimit:
      return {JobState::kTimeout, "reached its time limit"};
    case ExitCause::kFenced:
      return {JobState::kNodeFail, "was stopped by its agent, which lost contact with the server"};
    case ExitCause::kLost:
      return {JobState::kNodeFail, e.message};
    // The infrastructure's doing: the job is requeued without spending a retry.
    case ExitCause::kAgentShutdown:
      return {JobState::kNodeFail, "was stopped because its agent shut down"};
    case ExitCause::kLaunchFailed:
      return {JobState::kFailed, "could not be started: " + message};
    case ExitCause::kNodeFault:
      return {JobState::kNodeFail, "could not be started by its node: " + message};
    case ExitCause::kStalled:
      return {JobState::kFailed, e.message};
    case ExitCause::kNeverStarted:
      return {JobState::kFailed, "was stopped before its node started it"};
    case ExitCause::kExited:
    case ExitCause::kStoppedByAgent:
      break;
  }
  if (e.Succeeded()) return {JobState::kCompleted, "exited 0"};
  std::string what = e.signal != 0 ? "was killed by signal " + std::to_string(e.signal)
                                   : "exited with code " + std::to_string(e.exit_code);
  if (e.cause == ExitCause::kStoppedByAgent) what += " after its agent stopped it";
  if (!message.empty()) what += ": " + message;
  return {JobState::kFailed, what};
}

}  // namespace muster::lifecycle
