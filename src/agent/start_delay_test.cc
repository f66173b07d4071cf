#include "agent/start_delay.h"

#include <gtest/gtest.h>

#include <set>

namespace muster::agent {
namespace {

TEST(StartDelayTest, EachNodeWaitsItsOwnPartFixedByItsName) {
  const Duration jitter = Duration::Seconds(1);
  EXPECT_EQ(StartDelay("gpu-7", jitter), StartDelay("gpu-7", jitter)) << "the same after every restart";
  EXPECT_EQ(StartDelay("gpu-7", Duration::Zero()), Duration::Zero());
  // 1,000 nodes are spread over the whole second: every tenth of it is used,
  // none by more than twice its share.
  int buckets[10] = {};
  for (int i = 0; i < 1000; ++i) {
    const Duration d = StartDelay("node-" + std::to_string(i), jitter);
    ASSERT_GE(d, Duration::Zero());
    ASSERT_LT(d, jitter);
    ++buckets[d.millis() / 100];
  }
  for (int b : buckets) {
    EXPECT_GT(b, 50);
    EXPECT_LT(b, 200);
  }
}

TEST(SyncRetryDelayTest, SoonAtFirstThenEverySecondAndSpreadByNode) {
  // Each in its step's range, growing, then at most 1.5 s.
  for (const auto& [failures, low] :
       std::vector<std::pair<int, int64_t>>{{1, 200}, {2, 400}, {3, 800}, {4, 1000}, {50, 1000}}) {
    const Duration d = SyncRetryDelay("gpu-7", failures);
    EXPECT_GE(d.millis(), low) << failures;
    EXPECT_LT(d.millis(), low * 3 / 2) << failures;
    EXPECT_EQ(d, SyncRetryDelay("gpu-7", failures)) << "fixed by the name";
  }
  // Agents that failed together come back spread over the step.
  std::set<int64_t> first;
  for (int i = 0; i < 100; ++i) first.insert(SyncRetryDelay("node-" + std::to_string(i), 1).millis());
  EXPECT_GT(first.size(), 50u);
}

}  // namespace
}  // namespace muster::agent
