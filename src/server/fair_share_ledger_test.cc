#include "server/fair_share_ledger.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace muster::server {
namespace {

constexpr int64_t kLedgerGi = int64_t{1} << 30;
const Time kLedgerT0 = Time::FromMillis(1'767'225'600'000);

// One H100 node of 8 GPUs running `research`'s 8-GPU job from kLedgerT0.
class FairShareLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    core::NodeSpec n;
    n.name = "a";
    n.gpu_type = "H100";
    n.capacity = {8, 64'000, 512 * kLedgerGi};
    ASSERT_TRUE(state_.AddNode(n).ok());
    core::JobSpec spec;
    spec.name = "train";
    spec.queue = "research";
    spec.replicas = 1;
    spec.per_replica = {8, 8'000, 64 * kLedgerGi};
    spec.gpu_type = "H100";
    spec.time_limit = Duration::Hours(10);
    auto id = state_.Submit(spec, kLedgerT0);
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(state_.Bind({*id, {{0, 1, spec.per_replica}}}, kLedgerT0).ok());
  }
  static scheduler::FairShareOptions Options() {
    scheduler::FairShareOptions o;
    o.weight = 5000;
    o.half_life = Duration::Hours(1);
    return o;
  }

  core::ClusterState state_;
  PoolPrices prices_;
};

TEST_F(FairShareLedgerTest, UsageIsChargedEachCycleAndSavedAtMostEveryTenSeconds) {
  FairShareLedger ledger(Options());
  EXPECT_TRUE(ledger.Save(kLedgerT0, state_).empty()) << "nothing charged yet";
  ledger.Charge(kLedgerT0, state_, prices_, nullptr);
  ledger.Charge(kLedgerT0 + Duration::Minutes(1), state_, prices_, nullptr);
  store::WriteBatch b = ledger.Save(kLedgerT0 + Duration::Minutes(1), state_);
  ASSERT_EQ(b.meta.size(), 1u);
  EXPECT_EQ(b.meta[0].first, FairShareLedger::kMetaKey);
  const nlohmann::json saved = nlohmann::json::parse(b.meta[0].second);
  EXPECT_EQ(saved["at"], (kLedgerT0 + Duration::Minutes(1)).millis());
  EXPECT_GT(saved["usage"]["research"].get<double>(), 470.0) << "about 8 GPUs x 60 s, a little decayed";
  EXPECT_TRUE(ledger.SaveIfDue(kLedgerT0 + Duration::Minutes(1) + Duration::Seconds(9), state_).empty());
  EXPECT_FALSE(ledger.SaveIfDue(kLedgerT0 + Duration::Minutes(1) + Duration::Seconds(10), state_).empty());
}

TEST_F(FairShareLedgerTest, ARestoredLedgerRanksTheQueueAsTheSavedOneDid) {
  FairShareLedger before(Options());
  before.Charge(kLedgerT0, state_, prices_, nullptr);
  before.Charge(kLedgerT0 + Duration::Minutes(30), state_, prices_, nullptr);
  const std::string saved = before.Save(kLedgerT0 + Duration::Minutes(30), state_).meta.at(0).second;
  const int32_t research = state_.QueueId("research");
  const int32_t idle = state_.QueueId("idle");
  core::ClusterSnapshot snap = state_.Snapshot(kLedgerT0 + Duration::Minutes(30));
  const std::vector<int64_t> points = before.UpdatePoints(state_.num_queues(), snap);

  FairShareLedger after(Options());
  ASSERT_TRUE(after.Restore(saved, state_, kLedgerT0 + Duration::Minutes(30)).ok());
  after.Charge(kLedgerT0 + Duration::Minutes(30), state_, prices_, nullptr);
  const std::vector<int64_t> restored = after.UpdatePoints(state_.num_queues(), snap);
  EXPECT_EQ(restored[research], points[research]);
  EXPECT_EQ(restored[idle], 5000) << "no usage: the whole weight";
  EXPECT_LT(restored[research], 5000);
}

TEST_F(FairShareLedgerTest, ADamagedSavedUsageIsDataLossNamingTheMeta) {
  FairShareLedger ledger(Options());
  EXPECT_TRUE(ledger.Restore(std::nullopt, state_, kLedgerT0).ok()) << "none saved: a new cluster";
  const Status s = ledger.Restore(std::string(R"({"at": "yesterday"})"), state_, kLedgerT0);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("meta fairShareUsage is damaged"), std::string::npos) << s.ToString();
}

TEST_F(FairShareLedgerTest, TheMetricsAreChargedGpuTimeAndCostByQueueTypeAndPool) {
  FairShareLedger ledger(Options());
  ServerMetrics metrics;
  prices_.by_type["H100"] = 3.6;
  ledger.Charge(kLedgerT0, state_, prices_, &metrics);
  ledger.Charge(kLedgerT0 + Duration::Minutes(10), state_, prices_, &metrics);
  const std::string text = metrics.Scrape({});
  EXPECT_NE(text.find(R"(muster_queue_gpu_seconds_total{gpu_type="H100",pool="on-demand",queue="research"} 4800)"),
            std::string::npos)
      << text;
  // 4800 GPU-seconds at 3.60 a GPU-hour.
  EXPECT_NE(text.find(R"(muster_queue_cost_total{pool="on-demand",queue="research"} 4.8)"), std::string::npos) << text;
}

}  // namespace
}  // namespace muster::server
