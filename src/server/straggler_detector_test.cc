#include "server/straggler_detector.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

Time At(double seconds) { return Time::FromMillis(static_cast<int64_t>(seconds * 1000)); }

StragglerOptions Fast() {
  StragglerOptions o;
  o.window = Duration::Seconds(60);
  o.after = Duration::Seconds(10);
  o.min_reports = 3;
  return o;
}

// Four replicas step every second; replica 2 at `slow` steps a second.
std::vector<StragglerDetector::Change> Gang(StragglerDetector& d, double from, double to, double slow) {
  std::vector<StragglerDetector::Change> all;
  for (double t = from; t <= to; t += 1) {
    for (int r = 0; r < 4; ++r) d.Note(7, 1, r, static_cast<int64_t>(t * (r == 2 ? slow : 1.0)), At(t));
    for (auto& c : d.Evaluate(7, At(t))) all.push_back(c);
  }
  return all;
}

TEST(StragglerDetector, FlagsTheSlowReplicaOnceItHasBeenSlowLongEnough) {
  StragglerDetector d(Fast());
  auto changes = Gang(d, 0, 30, 0.3);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].replica, 2);
  EXPECT_TRUE(changes[0].straggling);
  EXPECT_NEAR(changes[0].rate, 0.3, 0.05);
  EXPECT_NEAR(changes[0].siblings_rate, 1.0, 1e-9);
  EXPECT_EQ(d.Straggling(), 1);
  auto rates = d.Rates(7, At(30));
  ASSERT_EQ(rates.size(), 4u);
  EXPECT_TRUE(rates[2].straggling);
  EXPECT_FALSE(rates[1].straggling);
  EXPECT_NEAR(*rates[1].rate, 1.0, 1e-9);
}

TEST(StragglerDetector, NotBeforeItsTimeAndItRecovers) {
  StragglerDetector d(Fast());
  EXPECT_TRUE(Gang(d, 0, 8, 0.3).empty());  // slow, but not yet for 10 s
  EXPECT_EQ(Gang(d, 9, 20, 0.3).size(), 1u);
  // It catches up: once its rate over the window reaches half the others'.
  auto changes = Gang(d, 21, 200, 1.8);
  ASSERT_FALSE(changes.empty());
  EXPECT_FALSE(changes.back().straggling);
  EXPECT_EQ(d.Straggling(), 0);
}

TEST(StragglerDetector, EvenGangsAndLoneReplicasHaveNoStraggler) {
  StragglerDetector d(Fast());
  EXPECT_TRUE(Gang(d, 0, 60, 0.9).empty());  // 90% of the others: within the ratio
  StragglerDetector lone(Fast());
  for (int t = 0; t < 60; ++t) {
    lone.Note(1, 1, 0, t, At(t));
    EXPECT_TRUE(lone.Evaluate(1, At(t)).empty());
  }
}

TEST(StragglerDetector, ANewAttemptStartsAfresh) {
  StragglerDetector d(Fast());
  ASSERT_EQ(Gang(d, 0, 30, 0.2).size(), 1u);
  d.Note(7, 2, 0, 0, At(31));
  EXPECT_EQ(d.Straggling(), 0);
  d.Note(7, 1, 2, 99, At(32));  // a late report of the old attempt: ignored
  EXPECT_EQ(d.Rates(7, At(32)).size(), 1u);
  d.Forget(7);
  EXPECT_TRUE(d.Rates(7, At(33)).empty());
}

}  // namespace
}  // namespace muster::server
