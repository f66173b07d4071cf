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

}  // namespace
}  // namespace muster::agent
