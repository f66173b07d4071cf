#include "scheduler/fairshare.h"

#include <gtest/gtest.h>

namespace muster::scheduler {
namespace {

const Time kT0 = Time::FromSeconds(1'000'000);

TEST(FairShare, UsageHalvesEveryHalfLife) {
  FairShare fs({Duration::Hours(24), 5000, {}});
  fs.Advance(kT0, {});
  fs.Advance(kT0 + Duration::Hours(1), {{0, 8}});  // 8 GPUs for an hour, barely decayed
  const double after_run = fs.Usage(0);
  EXPECT_NEAR(after_run, 8 * 3600.0, 8 * 3600.0 * 0.02);
  fs.Advance(kT0 + Duration::Hours(25), {});
  EXPECT_NEAR(fs.Usage(0), after_run / 2, after_run * 1e-9);
  fs.Advance(kT0 + Duration::Hours(49), {});
  EXPECT_NEAR(fs.Usage(0), after_run / 4, after_run * 1e-9);
}

TEST(FairShare, PointsFollowUsageAgainstShare) {
  FairShare fs({Duration::Hours(7 * 24), 4000, {}});
  fs.Advance(kT0, {});
  EXPECT_EQ(fs.Points(2), (std::vector<int64_t>{4000, 4000}));  // nobody used anything
  fs.Advance(kT0 + Duration::Hours(24), {{0, 8}});              // only queue 0 ran
  const auto p = fs.Points(2);
  EXPECT_EQ(p[0], 1000);  // 4000 x 2^(-1 / 0.5)
  EXPECT_EQ(p[1], 4000);
  // Equal usage at equal shares: both get half the weight.
  fs.Advance(kT0 + Duration::Hours(48), {{1, 8}});
  const auto q = fs.Points(2);
  EXPECT_NEAR(q[0], 2000, 100);
  EXPECT_NEAR(q[1], 2000, 100);
  EXPECT_GT(q[0], q[1]);  // queue 1's usage is more recent, so it weighs more
}

// With guarantees 48 and 8 on 64 GPUs and equal weights, the targets are 52
// and 12: usage at 52:12 gives both half the weight; usage at 32:32 favours
// the queue guaranteed 48.
TEST(FairShare, GuaranteesSetTheTargets) {
  FairShare fs({Duration::Hours(7 * 24), 4000, {}});
  std::vector<core::QueueQuota> quotas(2);
  quotas[0].guarantee_total = 48;
  quotas[1].guarantee_total = 8;
  fs.Advance(kT0, {});
  fs.Advance(kT0 + Duration::Hours(1), {{0, 52}, {1, 12}});
  const auto at_targets = fs.Points(2, quotas, 64);
  EXPECT_NEAR(at_targets[0], 2000, 10);
  EXPECT_NEAR(at_targets[1], 2000, 10);
  FairShare even({Duration::Hours(7 * 24), 4000, {}});
  even.Advance(kT0, {});
  even.Advance(kT0 + Duration::Hours(1), {{0, 32}, {1, 32}});
  const auto p = even.Points(2, quotas, 64);
  EXPECT_GT(p[0], p[1]);
  EXPECT_EQ(even.Points(2)[0], even.Points(2)[1]) << "without guarantees, equal weights";
  // Nested queues keep the weights alone.
  quotas[1].parent = 0;
  EXPECT_EQ(even.Points(2, quotas, 64)[0], even.Points(2)[0]);
}

TEST(FairShare, SharesScaleTheEntitlement) {
  FairShare fs({Duration::Hours(7 * 24), 4000, {}});
  fs.SetShare(0, 3);  // queue 0 is owed 3/4
  fs.Advance(kT0, {});
  fs.Advance(kT0 + Duration::Hours(10), {{0, 6}, {1, 2}});  // exactly the shares
  const auto p = fs.Points(2);
  EXPECT_EQ(p[0], 2000);
  EXPECT_EQ(p[1], 2000);
}

TEST(FairShare, OffMeansZeroPoints) {
  FairShare fs({Duration::Hours(24), 0, {}});
  fs.Advance(kT0, {});
  fs.Advance(kT0 + Duration::Hours(1), {{0, 8}});
  EXPECT_EQ(fs.Points(3), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(FairShareOptions({Duration::Zero(), 1, {}}).Validate().field(), "fairShare.halfLife");
}

}  // namespace
}  // namespace muster::scheduler
