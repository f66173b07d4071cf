#include "lifecycle/retry_policy.h"

#include <algorithm>

namespace muster::lifecycle {

using core::JobState;

Duration Backoff(const RetryPolicy& p, int32_t retries) {
  const int64_t max = p.max.millis();
  int64_t wait = std::min(p.initial.millis(), max);
  for (int32_t i = 0; i < retries && wait < max; ++i) {
    wait = p.factor > 0 && wait > max / p.factor ? max : wait * std::max<int32_t>(p.factor, 0);
  }
  return Duration::Millis(std::min(wait, max));
}

RetryDecision Decide(const RetryPolicy& p, JobState state, const ReplicaExit& failure, int32_t retries) {
  if (state == JobState::kNodeFail) return {true, false, Duration::Zero()};
  if (state == JobState::kTimeout || state == JobState::kCancelled || state == JobState::kCompleted) return {};
  if (state == JobState::kOutOfMemory && !p.retry_on_oom) return {};
  if (failure.cause == ExitCause::kLaunchFailed) return {};
  if (failure.signal == 0 && (failure.exit_code == 126 || failure.exit_code == 127)) return {};
  if (failure.signal == 0 && failure.exit_code >= 0 &&
      std::find(p.fail_on_exit_codes.begin(), p.fail_on_exit_codes.end(), failure.exit_code) !=
          p.fail_on_exit_codes.end()) {
    return {};
  }
  if (retries >= p.limit) return {};
  return {true, true, Backoff(p, retries)};
}

}  // namespace muster::lifecycle
