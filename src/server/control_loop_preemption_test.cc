// Preemption in the control loop, in process: victims stopped like a
// requeue (no retry spent, their age kept), the GPUs they free held for the
// preemptor, holds that lapse making their victims immune until their next
// attempt ends, a queue reclaiming its guarantee, and an interactive class
// cutting its victims' grace.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/testing/loop_harness.h"

namespace muster::server::testing {
namespace {

constexpr char kPreemptionConfig[] = R"(
agents: {defaultGrace: 1s}
scheduler: {preemption: {minRunTime: 1m}}
queues: [{name: team-a, guarantee: 2}]
)";

class ControlLoopPreemption : public ::testing::Test {
 protected:
  ControlLoopPreemption() : h_(kPreemptionConfig), n1_(h_, "n1", 2) { EXPECT_TRUE(n1_.Sync().ok()); }

  // A low-class job on both GPUs, running past minRunTime.
  int64_t RunLow(const std::string& queue = "team-b", const std::string& grace = "20s") {
    auto low = h_.Submit("name: low\nqueue: " + queue +
                         "\npriority: low\nresources: {gpus: 2}\ncheckpoint: {dir: /ckpt, gracePeriod: " + grace +
                         "}\ncommand: [train]\n");
    EXPECT_TRUE(low.ok()) << low.status().ToString();
    if (!low.ok()) return 0;
    EXPECT_TRUE(n1_.Sync().ok());
    EXPECT_TRUE(n1_.Runs(low->id));
    h_.Advance(Duration::Minutes(2), Duration::Minutes(1));
    return low->id;
  }
  // Syncs until the agent has nothing new to say (stops reported, binds heard).
  void SyncAll() {
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(n1_.Sync().ok());
  }

  LoopHarness h_;
  PlayedAgent n1_;
};

TEST_F(ControlLoopPreemption, AHighJobPreemptsALowOneWhichComesBackWithItsAgeAndNoRetrySpent) {
  const int64_t low = RunLow();
  const store::JobRow before = h_.Stored(low);
  auto high = h_.Submit("name: high\npriority: high\nresources: {gpus: 1}\ncommand: [serve]\n");
  ASSERT_TRUE(high.ok());
  EXPECT_TRUE(h_.HasEvent(high->id, "Preempting"));
  EXPECT_TRUE(h_.HasEvent(low, "Preempted"));
  n1_.HoldStops(true);  // the victim checkpoints in its grace
  ASSERT_TRUE(n1_.Sync().ok());
  EXPECT_TRUE(n1_.Runs(low)) << "still in its grace";
  EXPECT_FALSE(n1_.Runs(high->id)) << "the preemptor waits for the victim's GPUs";
  n1_.HoldStops(false);
  SyncAll();
  EXPECT_TRUE(n1_.Runs(high->id));
  const store::JobRow after = h_.Stored(low);
  EXPECT_EQ(after.submit_ms, before.submit_ms) << "a preempted job keeps its age";
  const nlohmann::json status = nlohmann::json::parse(after.status_json);
  EXPECT_EQ(status["attemptHistory"][0]["result"], "REQUEUED") << status.dump();
  EXPECT_NE(
      status["attemptHistory"][0]["reason"].get<std::string>().find("Preempted: for job " + std::to_string(high->id)),
      std::string::npos)
      << status.dump();
  EXPECT_EQ(status.value("retries", -1), 0);
  n1_.Exit(high->id, 0);
  SyncAll();
  EXPECT_TRUE(n1_.Runs(low)) << "back once the preemptor is done";
  EXPECT_EQ(n1_.Assignment(low)->attempt, 2);
}

TEST_F(ControlLoopPreemption, TheGpusAVictimFreesAreHeldForThePreemptorAgainstLowerJobs) {
  const int64_t low = RunLow();
  auto high = h_.Submit("name: high\npriority: high\nresources: {gpus: 2}\ncommand: [serve]\n");
  n1_.HoldStops(true);
  ASSERT_TRUE(n1_.Sync().ok());
  // Another job of the victim's class arrives while the victim stops.
  auto other = h_.Submit("name: other\npriority: normal\nresources: {gpus: 1}\ncommand: [train]\n");
  ASSERT_TRUE(n1_.Sync().ok());
  EXPECT_FALSE(n1_.Runs(other->id)) << "no GPU of the node is free";
  n1_.HoldStops(false);
  SyncAll();
  EXPECT_TRUE(n1_.Runs(high->id));
  EXPECT_FALSE(n1_.Runs(other->id)) << "the held GPUs went to the preemptor";
  EXPECT_FALSE(n1_.Runs(low));
}

TEST_F(ControlLoopPreemption, AJobYoungerThanTheMinimumRunTimeIsNotPreempted) {
  auto low = h_.Submit("name: low\npriority: low\nresources: {gpus: 2}\ncommand: [train]\n");
  ASSERT_TRUE(n1_.Sync().ok());
  h_.Advance(Duration::Seconds(30));
  auto high = h_.Submit("name: high\npriority: high\nresources: {gpus: 1}\ncommand: [serve]\n");
  SyncAll();
  EXPECT_TRUE(n1_.Runs(low->id));
  EXPECT_FALSE(h_.HasEvent(low->id, "Preempted"));
  h_.Advance(Duration::Seconds(31));
  SyncAll();
  EXPECT_TRUE(n1_.Runs(high->id)) << "preempted once past its minimum run time";
}

TEST_F(ControlLoopPreemption, AVictimWhosePreemptorDidNotStartIsImmuneUntilItsNextAttemptEnds) {
  const int64_t low = RunLow();
  auto first = h_.Submit("name: p1\npriority: high\nresources: {gpus: 2}\ncommand: [serve]\n");
  n1_.HoldStops(true);
  ASSERT_TRUE(n1_.Sync().ok());
  ASSERT_TRUE(h_.Act(first->id, ControlLoop::Action::kCancel).ok());
  n1_.HoldStops(false);
  SyncAll();
  ASSERT_TRUE(n1_.Runs(low)) << "requeued and running again";
  EXPECT_EQ(n1_.Assignment(low)->attempt, 2);
  // The hold lapses at its deadline: the victim becomes immune.
  h_.Advance(Duration::Minutes(4), Duration::Seconds(30));
  EXPECT_TRUE(h_.HasEvent(low, "PreemptionLapsed")) << ::testing::PrintToString(h_.Events(low));
  auto second = h_.Submit("name: p2\npriority: high\nresources: {gpus: 2}\ncommand: [serve]\n");
  SyncAll();
  h_.Advance(Duration::Minutes(1));
  SyncAll();
  EXPECT_TRUE(n1_.Runs(low)) << "immune: not evicted again";
  EXPECT_EQ(h_.CountEvents(low, "Preempted"), 1);
  EXPECT_EQ(h_.State(second->id), "PENDING");
  // Once that attempt ends, it may be preempted again.
  ASSERT_TRUE(h_.Act(low, ControlLoop::Action::kRequeue).ok());
  SyncAll();
  EXPECT_TRUE(n1_.Runs(second->id));
}

TEST_F(ControlLoopPreemption, AQueueReclaimsItsGuaranteeFromABorrower) {
  const int64_t borrower = RunLow("team-b");
  auto owner = h_.Submit("name: a\nqueue: team-a\nresources: {gpus: 2}\ncommand: [train]\n");
  ASSERT_TRUE(owner.ok());
  SyncAll();
  EXPECT_TRUE(n1_.Runs(owner->id));
  EXPECT_FALSE(n1_.Runs(borrower));
  EXPECT_EQ(h_.EventMessage(owner->id, "Preempting").rfind("reclaiming its queue's guarantee: stopping job ", 0), 0u)
      << h_.EventMessage(owner->id, "Preempting");
  EXPECT_NE(h_.EventMessage(borrower, "Preempted").find("whose queue team-a reclaims its guaranteed GPUs"),
            std::string::npos)
      << h_.EventMessage(borrower, "Preempted");
  auto queues = h_.Queues();
  ASSERT_TRUE(queues.ok());
  for (const ControlLoop::QueueView& q : *queues) {
    if (q.name != "team-a") continue;
    EXPECT_EQ(q.guarantee.at("*"), 2);
    EXPECT_EQ(q.gpus_in_use, 2);
    EXPECT_EQ(q.running, 1);
  }
}

TEST_F(ControlLoopPreemption, AnInteractiveJobCutsItsVictimsGraceAndTheAgentHearsIt) {
  const int64_t low = RunLow("team-b", "5m");
  auto shell = h_.Submit("name: shell\npriority: interactive\nresources: {gpus: 1}\ncommand: [bash]\n");
  ASSERT_TRUE(shell.ok()) << shell.status().ToString();
  n1_.HoldStops(true);
  ASSERT_TRUE(n1_.Sync().ok());
  ASSERT_EQ(n1_.last().grace_cuts.size(), 1u);
  EXPECT_EQ(n1_.last().grace_cuts[0].job, low);
  EXPECT_EQ(n1_.last().grace_cuts[0].grace_ms, 30'000) << "the class's preemptGrace (30 s), not the job's 5 min";
  n1_.HoldStops(false);
  SyncAll();
  EXPECT_TRUE(n1_.Runs(shell->id));
  EXPECT_TRUE(n1_.last().grace_cuts.empty()) << "forgotten once the victim's attempt is gone";
}

}  // namespace
}  // namespace muster::server::testing
