// The control loop's handling of jobs, in process (server/testing/
// loop_harness.h): submit, bind, run, end, cancel, hold, release, requeue,
// idempotency, arrays, dependencies and restarts, on a simulated clock.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/testing/loop_harness.h"

namespace muster::server::testing {
namespace {

using Action = ControlLoop::Action;

constexpr char kOneGpu[] = "name: one\nresources: {gpus: 1}\ncommand: [train]\n";

TEST(ControlLoopJobs, ASubmittedJobIsDurablePendingThenBoundToTheAgentThatSyncs) {
  LoopHarness h;
  auto job = h.Submit(kOneGpu);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(h.State(job->id), "PENDING");
  EXPECT_EQ(h.Reason(job->id), "Unschedulable") << "no node yet";
  PlayedAgent n1(h, "n1");
  ASSERT_TRUE(n1.Sync().ok());  // registers; the cycle binds
  ASSERT_TRUE(n1.Sync().ok());  // the bind is durable: the desired state lists it
  EXPECT_TRUE(n1.Runs(job->id));
  EXPECT_EQ(h.State(job->id), "RUNNING");
  const proto::TaskAssignment* a = n1.Assignment(job->id);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->gpus.size(), 1u);
  EXPECT_EQ(a->user, "alice");
  EXPECT_EQ(a->argv, std::vector<std::string>{"train"});
  n1.Exit(job->id, 0);
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_EQ(h.State(job->id), "COMPLETED");
  EXPECT_TRUE(n1.last().recorded.size() == 1u) << "the end is acknowledged to the agent";
  const std::vector<std::string> events = h.Events(job->id);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "Submitted");
  EXPECT_EQ(events.back(), "Completed");
}

TEST(ControlLoopJobs, AFailingJobIsRetriedAfterItsBackoffThenFailsAtTheLimit) {
  LoopHarness h;
  PlayedAgent n1(h, "n1");
  ASSERT_TRUE(n1.Sync().ok());
  auto job = h.Submit("resources: {gpus: 1}\ncommand: [train]\nretry: {limit: 1, backoff: {initial: 30s}}\n");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(n1.Sync().ok());
  ASSERT_TRUE(n1.Runs(job->id));
  n1.Exit(job->id, 3);
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_EQ(h.State(job->id), "PENDING");
  auto why = h.Explain(job->id);
  ASSERT_TRUE(why.ok());
  EXPECT_EQ(why->job.reason, "Backoff") << why->reason_text;
  h.Advance(Duration::Seconds(29));
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_FALSE(n1.Runs(job->id)) << "not before its backoff";
  h.Advance(Duration::Seconds(2));
  ASSERT_TRUE(n1.Sync().ok());
  ASSERT_TRUE(n1.Runs(job->id)) << "its retry";
  EXPECT_EQ(n1.Assignment(job->id)->attempt, 2);
  n1.Exit(job->id, 3);
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_EQ(h.State(job->id), "FAILED") << "its one retry spent";
  EXPECT_EQ(h.Stored(job->id).attempts, 2);
}

TEST(ControlLoopJobs, OutOfMemoryEndsTheJobWithoutARetry) {
  LoopHarness h;
  PlayedAgent n1(h, "n1");
  ASSERT_TRUE(n1.Sync().ok());
  auto job = h.Submit(kOneGpu);
  ASSERT_TRUE(n1.Sync().ok());
  n1.OutOfMemory(job->id);
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_EQ(h.State(job->id), "OUT_OF_MEMORY");
}

TEST(ControlLoopJobs, CancelOfARunningJobStopsItsTaskAndFreesTheGpuForTheNext) {
  LoopHarness h;
  PlayedAgent n1(h, "n1", 1);
  ASSERT_TRUE(n1.Sync().ok());
  auto first = h.Submit(kOneGpu);
  auto second = h.Submit(kOneGpu);
  ASSERT_TRUE(n1.Sync().ok());
  ASSERT_TRUE(n1.Runs(first->id));
  EXPECT_EQ(h.Reason(second->id), "Resources");
  auto cancelled = h.Act(first->id, Action::kCancel);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  ASSERT_TRUE(n1.Sync().ok());  // the stop: no longer listed
  EXPECT_FALSE(n1.Runs(first->id));
  ASSERT_TRUE(n1.Sync().ok());  // reports it stopped
  EXPECT_EQ(h.State(first->id), "CANCELLED");
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_TRUE(n1.Runs(second->id)) << "the freed GPU went to the next job";
}

TEST(ControlLoopJobs, OnlyTheOwnerOrAnAdminMayCancel) {
  LoopHarness h;
  auto job = h.Submit(kOneGpu);
  auto by_bob = h.Act(job->id, Action::kCancel, LoopHarness::User("bob"));
  ASSERT_FALSE(by_bob.ok());
  EXPECT_EQ(by_bob.status().code(), StatusCode::kPermissionDenied) << by_bob.status().ToString();
  EXPECT_EQ(h.State(job->id), "PENDING");
  auto by_root = h.Act(job->id, Action::kCancel, LoopHarness::Admin());
  ASSERT_TRUE(by_root.ok());
  EXPECT_EQ(h.State(job->id), "CANCELLED");
  auto again = h.Act(job->id, Action::kCancel);
  EXPECT_FALSE(again.ok()) << "an ended job cannot be cancelled again";
}

TEST(ControlLoopJobs, AHeldJobIsNotScheduledUntilReleased) {
  LoopHarness h;
  auto job = h.Submit(kOneGpu);
  ASSERT_TRUE(h.Act(job->id, Action::kHold).ok());
  EXPECT_EQ(h.State(job->id), "HELD");
  PlayedAgent n1(h, "n1");
  ASSERT_TRUE(n1.Sync().ok());
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_FALSE(n1.Runs(job->id));
  ASSERT_TRUE(h.Act(job->id, Action::kRelease).ok());
  EXPECT_EQ(h.State(job->id), "RUNNING") << "bound by the cycle the release asked for";
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_TRUE(n1.Runs(job->id));
}

TEST(ControlLoopJobs, ARequeueStopsTheAttemptAndStartsANewOneWithoutSpendingARetry) {
  LoopHarness h;
  PlayedAgent n1(h, "n1");
  ASSERT_TRUE(n1.Sync().ok());
  auto job = h.Submit("resources: {gpus: 1}\ncommand: [train]\nretry: {limit: 0}\n");
  ASSERT_TRUE(n1.Sync().ok());
  ASSERT_TRUE(n1.Runs(job->id));
  ASSERT_TRUE(h.Act(job->id, Action::kRequeue).ok());
  ASSERT_TRUE(n1.Sync().ok());  // stopped
  ASSERT_TRUE(n1.Sync().ok());  // reported; requeued and bound again
  ASSERT_TRUE(n1.Sync().ok());
  ASSERT_TRUE(n1.Runs(job->id));
  EXPECT_EQ(n1.Assignment(job->id)->attempt, 2) << "a second attempt, though retries are 0";
  const nlohmann::json status = nlohmann::json::parse(h.Stored(job->id).status_json);
  ASSERT_EQ(status["attemptHistory"].size(), 1u) << status.dump();
  EXPECT_EQ(status["attemptHistory"][0]["result"], "REQUEUED");
  EXPECT_EQ(status["attemptHistory"][0]["reason"], "requeued by alice");
  EXPECT_EQ(status.value("retries", -1), 0);
}

TEST(ControlLoopJobs, AnIdempotentSubmitIsAnsweredWithTheFirstJob) {
  LoopHarness h;
  auto first = h.Submit(kOneGpu, "alice", "key-1");
  auto again = h.Submit(kOneGpu, "alice", "key-1");
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->id, again->id);
  auto other_spec = h.Submit("resources: {gpus: 2}\ncommand: [train]\n", "alice", "key-1");
  ASSERT_FALSE(other_spec.ok());
  EXPECT_EQ(other_spec.status().code(), StatusCode::kAlreadyExists);
  auto other_user = h.Submit(kOneGpu, "bob", "key-1");
  ASSERT_TRUE(other_user.ok());
  EXPECT_NE(other_user->id, first->id) << "keys are per user";
}

TEST(ControlLoopJobs, AnArrayIsConsecutiveJobsEachWithItsIndex) {
  LoopHarness h;
  auto first = h.Submit("resources: {gpus: 1}\ncommand: [train]\narray: 3\n");
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 3; ++i) {
    const nlohmann::json status = nlohmann::json::parse(h.Stored(first->id + i).status_json);
    EXPECT_EQ(status.value("arrayFirstId", int64_t{0}), first->id);
    EXPECT_EQ(status.value("arrayIndex", -1), i);
  }
}

TEST(ControlLoopJobs, ADependentJobWaitsForItsDependencyAndFailsWhenItCannotBeMet) {
  LoopHarness h;
  PlayedAgent n1(h, "n1");
  ASSERT_TRUE(n1.Sync().ok());
  auto first = h.Submit(kOneGpu);
  auto after_ok =
      h.Submit("resources: {gpus: 1}\ncommand: [eval]\ndependencies: afterok:" + std::to_string(first->id) + "\n");
  ASSERT_TRUE(after_ok.ok()) << after_ok.status().ToString();
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_TRUE(n1.Runs(first->id));
  EXPECT_FALSE(n1.Runs(after_ok->id));
  EXPECT_EQ(h.Reason(after_ok->id), "Dependency");
  n1.Exit(first->id, 1);
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_EQ(h.State(first->id), "PENDING") << "to be retried: not ended yet";
  EXPECT_EQ(h.State(after_ok->id), "PENDING");
  ASSERT_TRUE(h.Act(first->id, Action::kCancel).ok());
  EXPECT_EQ(h.State(after_ok->id), "FAILED") << "its dependency can never be met";
  const std::vector<std::string> events = h.Events(after_ok->id, true);
  EXPECT_EQ(events.back(), "Failed/DependencyNeverSatisfied");
}

TEST(ControlLoopJobs, ARestartKeepsEveryJobAndTheRunningOneOnItsNode) {
  LoopHarness h;
  PlayedAgent n1(h, "n1", 1);
  ASSERT_TRUE(n1.Sync().ok());
  auto running = h.Submit(kOneGpu);
  auto pending = h.Submit(kOneGpu);
  ASSERT_TRUE(n1.Sync().ok());
  ASSERT_TRUE(n1.Runs(running->id));
  ASSERT_TRUE(h.Restart().ok());
  EXPECT_EQ(h.State(running->id), "RUNNING");
  EXPECT_EQ(h.State(pending->id), "PENDING");
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_TRUE(n1.Runs(running->id)) << "the agent's task is the same attempt";
  EXPECT_EQ(n1.Assignment(running->id)->attempt, 1);
  EXPECT_GT(n1.last().epoch, 1) << "a new epoch";
  n1.Exit(running->id, 0);
  ASSERT_TRUE(n1.Sync().ok());
  ASSERT_TRUE(n1.Sync().ok());
  EXPECT_EQ(h.State(running->id), "COMPLETED");
  EXPECT_TRUE(n1.Runs(pending->id));
}

}  // namespace
}  // namespace muster::server::testing
