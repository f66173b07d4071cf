#include "lifecycle/node_liveness.h"

#include <gtest/gtest.h>

#include <map>

namespace muster::lifecycle {
namespace {

// Defaults: unreachable 20 s, lost 120 s, lease 60 s, fraction 0.3, burst
// window 60 s, hold 10 min.
class NodeLivenessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 30; ++i) {
      core::NodeSpec n;
      n.name = "n" + std::to_string(i);
      n.capacity.gpus = 8;
      ASSERT_TRUE(state_.AddNode(n).ok());
      live_.Watch(static_cast<core::NodeIndex>(i), true);
    }
  }
  // Every node but those in [from, to) syncs; then the clock moves `step`
  // and the liveness is swept. Returns the nodes lost in that sweep.
  std::vector<core::NodeIndex> Tick(int from, int to, Duration step = Duration::Seconds(5)) {
    for (int i = 0; i < 30; ++i) {
      if ((i < from || i >= to) && !silent_forever_.count(i)) live_.Heard(static_cast<core::NodeIndex>(i));
    }
    clock_.Advance(step);
    return live_.Sweep(fx_).lost;
  }
  // Ticks until `until` has passed; returns every node lost meanwhile.
  std::vector<core::NodeIndex> Run(int from, int to, Duration until) {
    std::vector<core::NodeIndex> lost;
    const Time end = clock_.Now() + until;
    while (clock_.Now() < end) {
      for (core::NodeIndex n : Tick(from, to)) lost.push_back(n);
    }
    return lost;
  }
  bool Has(EventType t) const {
    for (const LifecycleEvent& e : fx_.events) {
      if (e.type == t) return true;
    }
    return false;
  }

  SimClock clock_{Time::FromSeconds(1000)};
  core::ClusterState state_;
  std::map<core::NodeIndex, Duration> grace_;  // the longest grace of the tasks on a node
  NodeLiveness live_{state_, clock_, LivenessOptions(), [this](core::NodeIndex n) {
                       auto it = grace_.find(n);
                       return it == grace_.end() ? Duration::Zero() : it->second;
                     }};
  Effects fx_;
  std::set<int> silent_forever_;
};

TEST_F(NodeLivenessTest, ASilentNodeIsUnreachableThenLost) {
  EXPECT_TRUE(Run(0, 1, Duration::Seconds(20)).empty());
  EXPECT_EQ(live_.Of(0), NodeCondition::kReady);
  Tick(0, 1);
  EXPECT_EQ(live_.Of(0), NodeCondition::kUnreachable);
  const std::vector<core::NodeIndex> lost = Run(0, 1, Duration::Seconds(100));
  ASSERT_EQ(lost, std::vector<core::NodeIndex>{0});
  EXPECT_EQ(live_.Of(0), NodeCondition::kLost);
  EXPECT_TRUE(live_.Heard(0));  // its agent is back: Ready
  EXPECT_EQ(live_.Of(0), NodeCondition::kReady);
}

TEST_F(NodeLivenessTest, ABurstOfSilenceIsHeldBackThenGivesWay) {
  // 10 of 30 nodes go silent together: more than 30 %.
  EXPECT_TRUE(Run(0, 10, Duration::Minutes(5)).empty());
  EXPECT_TRUE(Has(EventType::kManyNodesSilent));
  EXPECT_EQ(live_.Of(3), NodeCondition::kUnreachable);
  // The hold (10 min from the first loss held back, at 120 s) gives way.
  const std::vector<core::NodeIndex> lost = Run(0, 10, Duration::Minutes(10));
  EXPECT_EQ(lost.size(), 10u);
  EXPECT_TRUE(Has(EventType::kSilenceHoldEnded));
}

TEST_F(NodeLivenessTest, ASilenceThatEndsWithinTheHoldLosesNothing) {
  EXPECT_TRUE(Run(0, 10, Duration::Minutes(4)).empty());
  EXPECT_TRUE(Run(30, 30, Duration::Minutes(20)).empty());  // everyone syncs again
  for (int i = 0; i < 10; ++i) EXPECT_EQ(live_.Of(static_cast<core::NodeIndex>(i)), NodeCondition::kReady);
}

TEST_F(NodeLivenessTest, APermanentlyDeadThirdDoesNotHoldBackALaterLoss) {
  for (int i = 0; i < 10; ++i) silent_forever_.insert(i);
  Run(30, 30, Duration::Minutes(15));  // the dead third is lost once the hold gives way
  for (int i = 0; i < 10; ++i) ASSERT_EQ(live_.Of(static_cast<core::NodeIndex>(i)), NodeCondition::kLost);
  // One more node dies: lost after lostAfter, not held.
  const std::vector<core::NodeIndex> lost = Run(20, 21, Duration::Seconds(130));
  EXPECT_EQ(lost, std::vector<core::NodeIndex>{20});
}

TEST_F(NodeLivenessTest, NodesRestoredAfterARestartThatNeverSyncAreLostInBoundedTime) {
  // A restart: 10 nodes restored from the store whose agents are gone.
  NodeLiveness restarted(state_, clock_, LivenessOptions());
  for (int i = 0; i < 30; ++i) restarted.Watch(static_cast<core::NodeIndex>(i), /*synced=*/i >= 10);
  Effects fx;
  size_t lost = 0;
  for (int t = 0; t < 20 * 60 / 5; ++t) {
    for (int i = 10; i < 30; ++i) restarted.Heard(static_cast<core::NodeIndex>(i));
    clock_.Advance(Duration::Seconds(5));
    lost += restarted.Sweep(fx).lost.size();
  }
  EXPECT_EQ(lost, 10u);
}

TEST_F(NodeLivenessTest, DeclareLostIsRefusedWhileTheNodeMayStillRunTasks) {
  Effects fx;
  Status alive = live_.DeclareLost(4, "ann", fx);
  EXPECT_EQ(alive.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(alive.message().find("is alive"), std::string::npos) << alive.message();
  Run(4, 5, Duration::Seconds(40));  // unreachable, but within the lease
  EXPECT_FALSE(live_.DeclareLost(4, "ann", fx).ok());
  Run(4, 5, Duration::Seconds(25));  // past the lease: its tasks have fenced themselves
  ASSERT_TRUE(live_.DeclareLost(4, "ann", fx).ok());
  EXPECT_EQ(live_.Of(4), NodeCondition::kLost);
  EXPECT_EQ(live_.DeclareLost(4, "ann", fx).code(), StatusCode::kFailedPrecondition);  // already lost
  core::NodeSpec extra;
  extra.name = "static";
  extra.capacity.gpus = 1;
  const core::NodeIndex n = *state_.AddNode(extra);
  EXPECT_FALSE(live_.DeclareLost(n, "ann", fx).ok());  // no agent serves it
}

// A shim stops its task when the lease runs out and kills it only after the
// task's grace: until then the node is not lost, whatever lostAfter says,
// and an operator may not declare it lost either.
TEST_F(NodeLivenessTest, ANodeIsLostOnlyOnceItsTasksGraceHasRunOutToo) {
  grace_[3] = Duration::Seconds(90);  // fenced 60 + 90 + 2 s after its last sync
  EXPECT_EQ(live_.FencedAfter(3), Duration::Seconds(152));
  EXPECT_EQ(live_.FencedAfter(4), Duration::Seconds(62));
  std::vector<core::NodeIndex> lost = Run(3, 5, Duration::Seconds(125));
  EXPECT_EQ(lost, std::vector<core::NodeIndex>{4});  // past lostAfter (120 s)
  EXPECT_EQ(live_.Of(3), NodeCondition::kUnreachable);
  Effects fx;
  const Status early = live_.DeclareLost(3, "ann", fx);
  EXPECT_EQ(early.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(early.message().find("grace period"), std::string::npos) << early.message();
  lost = Run(3, 5, Duration::Seconds(30));
  EXPECT_EQ(lost, std::vector<core::NodeIndex>{3});
}

}  // namespace
}  // namespace muster::lifecycle
