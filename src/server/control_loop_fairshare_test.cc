// Fair share and usage in the control loop, in process: running jobs'
// GPU time charged to their queues (fair share and the metrics' GPU-time
// and cost counters), an idle queue overtaking a busy one, usage kept in
// the store across a restart, and a job whose static node is gone after a
// restart waiting again.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/testing/loop_harness.h"

namespace muster::server::testing {
namespace {

constexpr char kFairShareConfig[] = R"(
nodes:
  - {name: a, gpus: 8, gpuType: H100}
fairShare: {weight: 5000, halfLife: 1h}
prices: {H100: 3.60}
)";

int64_t FairSharePoints(LoopHarness& h, int64_t job) {
  auto why = h.Explain(job);
  EXPECT_TRUE(why.ok() && why->priority.has_value()) << job;
  return why.ok() && why->priority ? why->priority->fairshare_points : -1;
}

int64_t SubmitTo(LoopHarness& h, const std::string& queue) {
  auto job = h.Submit("queue: " + queue + "\nresources: {gpus: 8}\ntimeLimit: 10h\ncommand: [train]\n");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? job->id : 0;
}

TEST(ControlLoopFairShare, AnIdleQueueOvertakesABusyOne) {
  LoopHarness h(kFairShareConfig);
  const int64_t a1 = SubmitTo(h, "team-a");
  EXPECT_EQ(h.State(a1), "RUNNING");
  h.Advance(Duration::Minutes(30), Duration::Minutes(1));  // team-a accrues usage
  const int64_t a2 = SubmitTo(h, "team-a");
  const int64_t b1 = SubmitTo(h, "team-b");
  EXPECT_EQ(FairSharePoints(h, b1), 5000) << "no usage: the full weight";
  EXPECT_LT(FairSharePoints(h, a2), FairSharePoints(h, b1));
  ASSERT_TRUE(h.Act(a1, ControlLoop::Action::kCancel).ok());
  EXPECT_EQ(h.State(b1), "RUNNING") << "the younger job of the idle queue went first";
  EXPECT_EQ(h.State(a2), "PENDING");
}

TEST(ControlLoopFairShare, UsageIsKeptInTheStoreAcrossARestart) {
  LoopHarness h(kFairShareConfig);
  const int64_t heavy = SubmitTo(h, "heavy");
  h.Advance(Duration::Minutes(30), Duration::Minutes(1));
  ASSERT_TRUE(h.Act(heavy, ControlLoop::Action::kCancel).ok());  // ended: only the saved usage counts after
  ASSERT_TRUE(h.Restart().ok());
  auto saved = h.store().GetMeta("fairShareUsage");
  ASSERT_TRUE(saved.ok() && saved->has_value());
  EXPECT_GT(nlohmann::json::parse(**saved)["usage"].value("heavy", 0.0), 0.0) << **saved;
  SubmitTo(h, "other");  // holds the node, so the two below wait
  const int64_t again = SubmitTo(h, "heavy"), light = SubmitTo(h, "light");
  EXPECT_EQ(FairSharePoints(h, light), 5000);
  EXPECT_LT(FairSharePoints(h, again), 5000) << "the heavy queue's usage was remembered";
}

TEST(ControlLoopFairShare, RunningJobsGpuTimeAndCostAreChargedToTheirQueues) {
  LoopHarness h(kFairShareConfig);
  const int64_t job = SubmitTo(h, "research");
  EXPECT_EQ(h.State(job), "RUNNING");
  h.Advance(Duration::Minutes(10), Duration::Seconds(10));
  using R = ServerMetrics::Gauges;
  auto g = h.Await<R>([&](ControlLoop::Done<StatusOr<R>> done) { h.loop().Gauges(done); });
  ASSERT_TRUE(g.ok());
  const std::string text = h.metrics().Scrape(*g);
  // 8 GPUs for 600 s: 4800 GPU-seconds, at 3.60 an hour: 4.80.
  EXPECT_NE(text.find("muster_queue_gpu_seconds_total{gpu_type=\"H100\",pool=\"on-demand\",queue=\"research\"} 4800"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("queue=\"research\"} 4.8"), std::string::npos) << text;
}

TEST(ControlLoopFairShare, AJobWhoseStaticNodeIsGoneAfterARestartWaitsAgain) {
  LoopHarness h("nodes:\n  - {name: a, gpus: 8, gpuType: H100}\n  - {name: b, gpus: 8, gpuType: H100}\n");
  const int64_t first = SubmitTo(h, "q"), second = SubmitTo(h, "q");
  ASSERT_EQ(h.State(first), "RUNNING");
  ASSERT_EQ(h.State(second), "RUNNING");
  const std::string first_node = nlohmann::json::parse(h.Stored(first).status_json)["allocations"][0]["node"];
  ASSERT_TRUE(h.Restart("nodes:\n  - {name: a, gpus: 8, gpuType: H100}\n").ok());
  const int64_t on_b = first_node == "b" ? first : second, on_a = first_node == "b" ? second : first;
  EXPECT_EQ(h.State(on_a), "RUNNING");
  EXPECT_EQ(h.State(on_b), "PENDING");
  EXPECT_TRUE(h.HasEvent(on_b, "Requeued/NodeMissing")) << ::testing::PrintToString(h.Events(on_b, true));
}

}  // namespace
}  // namespace muster::server::testing
