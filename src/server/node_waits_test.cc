#include "server/node_waits.h"

#include <gtest/gtest.h>

#include <vector>

namespace muster::server {
namespace {

TEST(NodeWaitsTest, AWaitEndsWhenItsNodesVersionChangesAndNoOtherNodes) {
  SimClock clock(Time::FromMillis(1'000));
  NodeWaits waits(clock);
  waits.Publish("a", 1);
  waits.Publish("b", 1);
  std::vector<std::string> ended;
  EXPECT_TRUE(waits.WhenChanges("a", 1, Duration::Seconds(30), [&] { ended.push_back("a"); }));
  EXPECT_TRUE(waits.WhenChanges("b", 1, Duration::Seconds(30), [&] { ended.push_back("b"); }));
  EXPECT_EQ(waits.Waiting(), 2);
  EXPECT_TRUE(waits.HasWaiter("a"));
  waits.Publish("a", 2);
  EXPECT_EQ(ended, std::vector<std::string>{"a"});
  EXPECT_EQ(waits.Waiting(), 1);
  EXPECT_FALSE(waits.HasWaiter("a"));
  EXPECT_TRUE(waits.HasWaiter("b"));
}

TEST(NodeWaitsTest, AWaitForAVersionAlreadyPassedEndsAtOnce) {
  SimClock clock;
  NodeWaits waits(clock);
  waits.Publish("a", 3);
  int ended = 0;
  EXPECT_FALSE(waits.WhenChanges("a", 2, Duration::Seconds(30), [&] { ++ended; }));
  EXPECT_EQ(ended, 1);
  EXPECT_EQ(waits.Waiting(), 0);
}

TEST(NodeWaitsTest, AWaitEndsByItsDeadlineShortenedByTheSpreadButNeverAfterMaxWait) {
  SimClock clock;
  NodeWaits waits(clock);
  int ended = 0;
  const Duration max_wait = Duration::Seconds(10);
  ASSERT_TRUE(waits.WhenChanges("a", 0, max_wait, [&] { ++ended; }));
  const Duration until = waits.UntilNextDeadline(clock.Now());
  EXPECT_GT(until, Duration::Zero());
  EXPECT_LE(until, max_wait);
  clock.Advance(until - Duration::Millis(1));
  waits.EndExpired(clock.Now());
  EXPECT_EQ(ended, 0);
  clock.Advance(Duration::Millis(1));
  waits.EndExpired(clock.Now());
  EXPECT_EQ(ended, 1);
  EXPECT_EQ(waits.Waiting(), 0);
}

TEST(NodeWaitsTest, CloseEndsEveryWaitAndLaterOnesAtOnce) {
  SimClock clock;
  NodeWaits waits(clock);
  int ended = 0;
  for (const char* node : {"a", "b", "c"}) waits.WhenChanges(node, 0, Duration::Seconds(30), [&] { ++ended; });
  EXPECT_EQ(waits.Waiting(), 3);
  waits.Close();
  EXPECT_EQ(ended, 3);
  EXPECT_EQ(waits.Waiting(), 0);
  EXPECT_FALSE(waits.WhenChanges("a", 0, Duration::Seconds(30), [&] { ++ended; }));
  EXPECT_EQ(ended, 4);
}

}  // namespace
}  // namespace muster::server
