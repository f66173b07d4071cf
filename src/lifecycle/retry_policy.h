// Retries: whether an attempt that ended badly runs again, and when.
//
// Decide() is the whole rule, in this order:
//   1. NODE_FAIL (the node, its agent or the lease ended it): requeued at
//      once, free of charge: infrastructure failures never spend a retry.
//   2. TIMEOUT, CANCELLED and COMPLETED end the job.
//   3. OUT_OF_MEMORY ends the job unless the spec asks to retry it
//      (retry.retryOnOom): the same input would run out again.
//   4. A replica the node could not launch, and exit codes 126 and 127 (the
//      command is not executable or not found), end the job: running it
//      again would fail the same way. So do the spec's permanent exit codes
//      (retry.failOnExitCodes).
//   5. With retries left (retries so far < retry.limit) it is retried and
//      spends one, after a backoff of initial x factor^retries, at most max.
// Example: initial 30 s, factor 2, max 10 min: the waits before retries 1,
// 2, 3, ... are 30 s, 60 s, 120 s, ... 600 s, 600 s.
//
// Integers only: the backoff saturates at max and never overflows.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/time.h"
#include "core/job.h"
#include "lifecycle/replica_exit.h"

namespace muster::lifecycle {

struct RetryPolicy {
  int32_t limit = 3;
  Duration initial = Duration::Seconds(30);
  int32_t factor = 2;
  Duration max = Duration::Minutes(10);
  std::vector<int32_t> fail_on_exit_codes;
  bool retry_on_oom = false;
};

struct RetryDecision {
  bool retry = false;                   // runs again (a new attempt)
  bool spends = false;                  // counts against the limit (a user failure)
  Duration backoff = Duration::Zero();  // not before now + backoff
};

// `state`: what the attempt's end implies (Classify); `failure`: the first
// failing replica's exit; `retries`: retries spent so far.
RetryDecision Decide(const RetryPolicy& policy, core::JobState state, const ReplicaExit& failure, int32_t retries);

// The wait before retry number retries + 1.
Duration Backoff(const RetryPolicy& policy, int32_t retries);

}  // namespace muster::lifecycle
