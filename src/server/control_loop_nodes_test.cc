// Nodes in the control loop, in process: registration by an agent's sync,
// silent agents (unreachable, then lost with their gangs requeued whole),
// operators' commands (cordon, drain, declare lost, remove, reclaim), a
// fatal GPU fault, and the gauges a scrape reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/testing/loop_harness.h"

namespace muster::server::testing {
namespace {

constexpr char kNodesConfig[] = R"(
auth: {operators: [ops]}
agents: {unreachableAfter: 20s, lostAfter: 60s, lease: 30s, defaultGrace: 5s}
)";

class ControlLoopNodes : public ::testing::Test {
 protected:
  ControlLoopNodes() : h_(kNodesConfig), n1_(h_, "n1", 2), n2_(h_, "n2", 2) {
    EXPECT_TRUE(n1_.Sync().ok());
    EXPECT_TRUE(n2_.Sync().ok());
  }
  StatusOr<ControlLoop::NodeView> Cordon(const std::string& node, bool cordon, const std::string& who = "ops",
                                         bool drain = false) {
    using R = ControlLoop::NodeView;
    return h_.Await<R>([&](ControlLoop::Done<StatusOr<R>> done) {
      h_.loop().Cordon(node, cordon, LoopHarness::User(who), drain, done);
    });
  }
  StatusOr<ControlLoop::NodeView> DeclareLost(const std::string& node, const std::string& who = "root") {
    using R = ControlLoop::NodeView;
    return h_.Await<R>(
        [&](ControlLoop::Done<StatusOr<R>> done) { h_.loop().DeclareLost(node, LoopHarness::User(who), done); });
  }
  StatusOr<ControlLoop::NodeView> Remove(const std::string& node) {
    using R = ControlLoop::NodeView;
    return h_.Await<R>(
        [&](ControlLoop::Done<StatusOr<R>> done) { h_.loop().RemoveNode(node, LoopHarness::Admin(), done); });
  }
  void SyncBoth() {
    for (int i = 0; i < 3; ++i) {
      for (PlayedAgent* a : {&n1_, &n2_}) {
        if (!a->silent()) {
          ASSERT_TRUE(a->Sync().ok());
        }
      }
    }
  }
  // A gang of two replicas, one per node.
  int64_t RunGang() {
    auto gang = h_.Submit("name: gang\nreplicas: 2\nresources: {gpus: 2}\ncommand: [train]\n");
    EXPECT_TRUE(gang.ok()) << gang.status().ToString();
    SyncBoth();
    EXPECT_TRUE(n1_.Runs(gang->id) && n2_.Runs(gang->id));
    return gang.ok() ? gang->id : 0;
  }

  LoopHarness h_;
  PlayedAgent n1_, n2_;
};

TEST_F(ControlLoopNodes, AnAgentsFirstSyncRegistersItsNodeWithWhatItReports) {
  PlayedAgent::Options o;
  o.gpus = 4;
  o.gpu_type = "A100";
  o.labels = {{"leaf", "l7"}};
  PlayedAgent n3(h_, "n3", o);
  ASSERT_TRUE(n3.Sync().ok());
  auto view = h_.Node("n3");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->spec.capacity.gpus, 4);
  EXPECT_EQ(view->spec.gpu_type, "A100");
  EXPECT_EQ(view->spec.topology.leaf, "l7");
  EXPECT_EQ(view->condition, "Ready");
  EXPECT_EQ(view->last_seen_ms, h_.clock().Now().millis());
  auto nodes = h_.store().ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->size(), 3u) << "registered nodes are persisted";
}

TEST_F(ControlLoopNodes, ASilentNodeIsUnreachableThenLostAndItsGangRequeuedWholeWithoutARetry) {
  const int64_t gang = RunGang();
  n2_.Silence(true);
  h_.Advance(Duration::Seconds(25));
  EXPECT_EQ(h_.Node("n2")->condition, "Unreachable");
  EXPECT_EQ(h_.State(gang), "RUNNING") << "not lost before lostAfter";
  h_.Advance(Duration::Seconds(60));
  EXPECT_EQ(h_.Node("n2")->condition, "Lost");
  EXPECT_FALSE(n1_.Runs(gang)) << "the surviving replica is stopped";
  const nlohmann::json status = nlohmann::json::parse(h_.Stored(gang).status_json);
  EXPECT_EQ(status.value("retries", -1), 0) << status.dump();
  EXPECT_EQ(status.value("requeues", 0), 1) << "a node's failure counts as a requeue";
  EXPECT_EQ(h_.State(gang), "PENDING") << "one node is left: the gang of two waits";
}

TEST_F(ControlLoopNodes, AnAgentBackBeforeItsNodeIsLostKeepsItsTasks) {
  const int64_t gang = RunGang();
  n2_.Silence(true);
  h_.Advance(Duration::Seconds(25));
  ASSERT_EQ(h_.Node("n2")->condition, "Unreachable");
  n2_.Silence(false);
  h_.Advance(Duration::Seconds(1));
  EXPECT_EQ(h_.Node("n2")->condition, "Ready");
  EXPECT_TRUE(n2_.Runs(gang) && n1_.Runs(gang));
  EXPECT_EQ(h_.State(gang), "RUNNING");
}

TEST_F(ControlLoopNodes, ACordonKeepsRunningJobsButTakesNoNewWorkAndOnlyOperatorsMayCordon) {
  auto by_alice = Cordon("n1", true, "alice");
  ASSERT_FALSE(by_alice.ok());
  EXPECT_EQ(by_alice.status().code(), StatusCode::kPermissionDenied);
  auto job = h_.Submit("resources: {gpus: 2}\ncommand: [train]\n");
  SyncBoth();
  const bool on_n1 = n1_.Runs(job->id);
  auto view = Cordon(on_n1 ? "n1" : "n2", true);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_FALSE(view->schedulable);
  EXPECT_EQ(view->cordon, "cordoned by ops");
  SyncBoth();
  EXPECT_EQ(h_.State(job->id), "RUNNING") << "a cordon leaves running jobs";
  auto next = h_.Submit("resources: {gpus: 2}\ncommand: [train]\n");
  auto third = h_.Submit("resources: {gpus: 2}\ncommand: [train]\n");
  SyncBoth();
  EXPECT_EQ(h_.State(next->id), "RUNNING") << "on the other node";
  EXPECT_EQ(h_.State(third->id), "PENDING") << "not on the cordoned one";
  ASSERT_TRUE(Cordon(on_n1 ? "n1" : "n2", false).ok());
  n1_.Exit(job->id, 0);
  n2_.Exit(job->id, 0);
  SyncBoth();
  EXPECT_EQ(h_.State(third->id), "RUNNING") << "uncordoned";
}

TEST_F(ControlLoopNodes, ADrainRequeuesTheNodesJobsWithoutSpendingARetry) {
  auto job = h_.Submit("resources: {gpus: 2}\ncommand: [train]\n");
  SyncBoth();
  const std::string node = n1_.Runs(job->id) ? "n1" : "n2";
  auto view = Cordon(node, true, "ops", /*drain=*/true);
  ASSERT_TRUE(view.ok());
  SyncBoth();
  EXPECT_EQ(h_.State(job->id), "RUNNING");
  PlayedAgent& other = node == "n1" ? n2_ : n1_;
  EXPECT_TRUE(other.Runs(job->id)) << "moved to the other node";
  EXPECT_TRUE(h_.HasEvent(job->id, "Requeuing/Drain")) << ::testing::PrintToString(h_.Events(job->id, true));
  const nlohmann::json status = nlohmann::json::parse(h_.Stored(job->id).status_json);
  EXPECT_EQ(status.value("retries", -1), 0);
}

TEST_F(ControlLoopNodes, DeclareLostIsRefusedWhileTheAgentSyncsThenRequeuesAtOnce) {
  const int64_t gang = RunGang();
  auto refused = DeclareLost("n2");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().ToString();
  auto by_ops = DeclareLost("n2", "ops");
  EXPECT_EQ(by_ops.status().code(), StatusCode::kPermissionDenied) << "admins only";
  n2_.Silence(true);
  h_.Advance(Duration::Seconds(31));
  auto early = DeclareLost("n2");
  ASSERT_FALSE(early.ok()) << "its tasks may still run: the lease (30 s), their grace (5 s) and 2 s have not passed";
  EXPECT_NE(early.status().message().find("declare it lost once it has been silent for 37s"), std::string::npos)
      << early.status().ToString();
  h_.Advance(Duration::Seconds(7));
  ASSERT_NE(h_.Node("n2")->condition, "Lost");
  auto lost = DeclareLost("n2");
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  EXPECT_EQ(lost->condition, "Lost");
  EXPECT_EQ(h_.State(gang), "COMPLETING") << "its replica on n1 is being stopped";
  ASSERT_TRUE(n1_.Sync().ok());
  ASSERT_TRUE(n1_.Sync().ok());
  EXPECT_EQ(h_.State(gang), "PENDING") << "requeued without waiting for lostAfter";
}

TEST_F(ControlLoopNodes, ALostNodeThatRunsNothingCanBeRemovedAndStaysGoneAfterARestart) {
  auto refused = Remove("n2");
  ASSERT_FALSE(refused.ok()) << "not while it is Ready";
  n2_.Silence(true);
  h_.Advance(Duration::Seconds(70), Duration::Seconds(5));
  ASSERT_EQ(h_.Node("n2")->condition, "Lost");
  ASSERT_TRUE(Remove("n2").ok());
  EXPECT_FALSE(h_.Node("n2").ok());
  ASSERT_TRUE(h_.Restart().ok());
  EXPECT_FALSE(h_.Node("n2").ok()) << "removed from the store";
  EXPECT_TRUE(h_.Node("n1").ok());
}

TEST_F(ControlLoopNodes, AFatalXidCordonsTheNodeAndRequeuesItsJobWithoutARetry) {
  auto job = h_.Submit("resources: {gpus: 2}\ncommand: [train]\n");
  SyncBoth();
  PlayedAgent& on = n1_.Runs(job->id) ? n1_ : n2_;
  on.ReportXid(0, 79);
  ASSERT_TRUE(on.Sync().ok());
  auto view = h_.Node(on.node());
  ASSERT_TRUE(view.ok());
  EXPECT_FALSE(view->schedulable);
  EXPECT_NE(view->cordon.find("79"), std::string::npos) << view->cordon;
  SyncBoth();
  EXPECT_FALSE(on.Runs(job->id));
  const nlohmann::json status = nlohmann::json::parse(h_.Stored(job->id).status_json);
  EXPECT_EQ(status.value("retries", -1), 0) << status.dump();
}

TEST_F(ControlLoopNodes, AReclaimNoticeCordonsTheNodeMovesItsJobsAndTellsTheAgentTheDeadline) {
  auto job = h_.Submit("resources: {gpus: 2}\ncommand: [train]\n");
  SyncBoth();
  PlayedAgent& on = n1_.Runs(job->id) ? n1_ : n2_;
  PlayedAgent& other = &on == &n1_ ? n2_ : n1_;
  on.ReportReclaim(Duration::Minutes(2));
  on.HoldStops(true);
  ASSERT_TRUE(on.Sync().ok());
  EXPECT_GT(on.last().reclaim_in_ms, 0);
  EXPECT_LE(on.last().reclaim_in_ms, Duration::Minutes(2).millis());
  auto view = h_.Node(on.node());
  ASSERT_TRUE(view.ok());
  EXPECT_FALSE(view->schedulable);
  ASSERT_TRUE(view->reclaim_at.has_value());
  on.HoldStops(false);
  SyncBoth();
  EXPECT_TRUE(other.Runs(job->id)) << "moved off the reclaimed node";
}

TEST_F(ControlLoopNodes, TheGaugesCountGpusByWhatHoldsThem) {
  auto job = h_.Submit("resources: {gpus: 2}\ncommand: [train]\n");
  SyncBoth();
  ASSERT_TRUE(Cordon(n1_.Runs(job->id) ? "n2" : "n1", true).ok());
  using R = ServerMetrics::Gauges;
  auto g = h_.Await<R>([&](ControlLoop::Done<StatusOr<R>> done) { h_.loop().Gauges(done); });
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->gpus, 4);
  EXPECT_EQ(g->gpus_allocated, 2);
  EXPECT_EQ(g->gpus_cordoned, 2);
  EXPECT_EQ((g->jobs[{"default", "RUNNING"}]), 1);
  EXPECT_EQ(g->nodes["Ready"], 2);
}

}  // namespace
}  // namespace muster::server::testing
