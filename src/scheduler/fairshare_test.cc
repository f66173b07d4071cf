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
