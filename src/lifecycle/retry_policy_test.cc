#include "lifecycle/retry_policy.h"

#include <gtest/gtest.h>

namespace muster::lifecycle {
namespace {

using core::JobState;

ReplicaExit Exited(int32_t code) {
  ReplicaExit e;
  e.exit_code = code;
  return e;
}

TEST(RetryPolicy, BackoffGrowsByTheFactorUpToTheMaximum) {
  RetryPolicy p;  // 30 s x 2 up to 10 min
  EXPECT_EQ(Backoff(p, 0), Duration::Seconds(30));
  EXPECT_EQ(Backoff(p, 1), Duration::Seconds(60));
  EXPECT_EQ(Backoff(p, 4), Duration::Seconds(480));
  EXPECT_EQ(Backoff(p, 5), Duration::Minutes(10));
  EXPECT_EQ(Backoff(p, 1'000'000), Duration::Minutes(10));  // saturates, no overflow
  p.initial = Duration::Hours(1);
  EXPECT_EQ(Backoff(p, 0), Duration::Minutes(10));  // the maximum bounds the first wait too
  p.factor = 1;
  p.initial = Duration::Seconds(5);
  EXPECT_EQ(Backoff(p, 7), Duration::Seconds(5));
}

TEST(RetryPolicy, AFailureSpendsARetryUntilTheLimit) {
  RetryPolicy p;
  p.limit = 2;
  const RetryDecision first = Decide(p, JobState::kFailed, Exited(1), 0);
  EXPECT_TRUE(first.retry);
  EXPECT_TRUE(first.spends);
  EXPECT_EQ(first.backoff, Duration::Seconds(30));
  EXPECT_TRUE(Decide(p, JobState::kFailed, Exited(1), 1).retry);
  EXPECT_FALSE(Decide(p, JobState::kFailed, Exited(1), 2).retry);
}

TEST(RetryPolicy, TheNodesFailureIsRequeuedFreeOfChargeEvenPastTheLimit) {
  RetryPolicy p;
  p.limit = 0;
  ReplicaExit lost;
  lost.cause = ExitCause::kLost;
  const RetryDecision d = Decide(p, JobState::kNodeFail, lost, 5);
  EXPECT_TRUE(d.retry);
  EXPECT_FALSE(d.spends);
  EXPECT_EQ(d.backoff, Duration::Zero());
}

TEST(RetryPolicy, FailuresThatWouldRepeatAreNotRetried) {
  RetryPolicy p;
  p.fail_on_exit_codes = {3};
  EXPECT_FALSE(Decide(p, JobState::kFailed, Exited(3), 0).retry);
  EXPECT_TRUE(Decide(p, JobState::kFailed, Exited(4), 0).retry);
  EXPECT_FALSE(Decide(p, JobState::kFailed, Exited(126), 0).retry);  // not executable
  EXPECT_FALSE(Decide(p, JobState::kFailed, Exited(127), 0).retry);  // not found
  ReplicaExit launch;
  launch.cause = ExitCause::kLaunchFailed;
  EXPECT_FALSE(Decide(p, JobState::kFailed, launch, 0).retry);
  ReplicaExit killed;
  killed.signal = 9;
  killed.exit_code = 127;  // with a signal the code means nothing
  EXPECT_TRUE(Decide(p, JobState::kFailed, killed, 0).retry);
}

TEST(RetryPolicy, OutOfMemoryIsRetriedOnlyWhenTheSpecAsks) {
  RetryPolicy p;
  ReplicaExit oom;
  oom.cause = ExitCause::kOutOfMemory;
  EXPECT_FALSE(Decide(p, JobState::kOutOfMemory, oom, 0).retry);
  p.retry_on_oom = true;
  EXPECT_TRUE(Decide(p, JobState::kOutOfMemory, oom, 0).spends);
}

TEST(RetryPolicy, EndsThatAreNotFailuresAreFinal) {
  RetryPolicy p;
  for (JobState s : {JobState::kCompleted, JobState::kCancelled, JobState::kTimeout}) {
    EXPECT_FALSE(Decide(p, s, Exited(0), 0).retry) << core::JobStateName(s);
  }
}

TEST(ReplicaExit, ClassifyNamesTheStateAndTheWords) {
  EXPECT_EQ(Classify(Exited(0)).state, JobState::kCompleted);
  EXPECT_EQ(Classify(Exited(3)).words, "exited with code 3");
  ReplicaExit stopped;
  stopped.cause = ExitCause::kStoppedByAgent;
  stopped.signal = 15;
  EXPECT_EQ(Classify(stopped).words, "was killed by signal 15 after its agent stopped it");
  EXPECT_EQ(Classify(stopped).state, JobState::kFailed);
  ReplicaExit fenced;
  fenced.cause = ExitCause::kFenced;
  EXPECT_EQ(Classify(fenced).state, JobState::kNodeFail);
  ReplicaExit timeout;
  timeout.cause = ExitCause::kTimeLimit;
  EXPECT_EQ(Classify(timeout).state, JobState::kTimeout);
  ReplicaExit gpu_gone;
  gpu_gone.cause = ExitCause::kNodeFault;
  EXPECT_EQ(Classify(gpu_gone).state, JobState::kNodeFail);  // requeued free, not FAILED for good
  for (const char* name : {"exited", "stopped", "oom", "timeout", "fenced", "lost", "agent-exit", "launch", "node",
                           "stalled", "unstarted"}) {
    ExitCause c;
    ASSERT_TRUE(ExitCauseFromName(name, c)) << name;
    EXPECT_STREQ(ExitCauseName(c), name);
  }
  ExitCause c;
  EXPECT_FALSE(ExitCauseFromName("bogus", c));
}

}  // namespace
}  // namespace muster::lifecycle
