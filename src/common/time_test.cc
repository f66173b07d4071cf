#include "common/time.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace muster {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

TEST(DurationTest, FactoriesUseMilliseconds) {
  EXPECT_EQ(Duration::Millis(250).millis(), 250);
  EXPECT_EQ(Duration::Seconds(3).millis(), 3'000);
  EXPECT_EQ(Duration::Minutes(2).millis(), 120'000);
  EXPECT_EQ(Duration::Hours(1).millis(), 3'600'000);
  EXPECT_EQ(Duration::Zero().millis(), 0);
  EXPECT_EQ(Duration().millis(), 0);
  EXPECT_EQ(Duration::Millis(2'999).seconds(), 2);
  EXPECT_EQ(Duration::Infinite().millis(), kInt64Max);
}

TEST(DurationTest, IsInfiniteOnlyForInfinite) {
  EXPECT_TRUE(Duration::Infinite().is_infinite());
  EXPECT_FALSE(Duration::Hours(1'000'000).is_infinite());
  EXPECT_FALSE(Duration::Zero().is_infinite());
}

TEST(DurationTest, Comparison) {
  EXPECT_LT(Duration::Seconds(59), Duration::Minutes(1));
  EXPECT_EQ(Duration::Seconds(60), Duration::Minutes(1));
  EXPECT_GT(Duration::Infinite(), Duration::Hours(1'000'000));
  EXPECT_LT(Duration::Millis(-1), Duration::Zero());
}

TEST(DurationTest, Arithmetic) {
  EXPECT_EQ(Duration::Hours(1) + Duration::Minutes(30), Duration::Minutes(90));
  EXPECT_EQ(Duration::Hours(1) - Duration::Minutes(30), Duration::Minutes(30));
  EXPECT_EQ(Duration::Seconds(1) - Duration::Seconds(3), Duration::Seconds(-2));
  EXPECT_EQ(Duration::Minutes(5) * 3, Duration::Minutes(15));
  EXPECT_EQ(Duration::Minutes(5) * 0, Duration::Zero());
}

TEST(DurationTest, AdditionSaturatesAtInfinite) {
  EXPECT_TRUE((Duration::Infinite() + Duration::Hours(1)).is_infinite());
  EXPECT_TRUE((Duration::Hours(1) + Duration::Infinite()).is_infinite());
  EXPECT_TRUE((Duration::Infinite() + Duration::Infinite()).is_infinite());
  EXPECT_TRUE((Duration::Infinite() + Duration::Millis(-5)).is_infinite());
}

TEST(DurationTest, MultiplicationKeepsInfinite) {
  EXPECT_TRUE((Duration::Infinite() * 2).is_infinite());
  EXPECT_TRUE((Duration::Infinite() * 1'000'000).is_infinite());
}

TEST(DurationTest, ToString) {
  EXPECT_EQ(Duration::Zero().ToString(), "0s");
  EXPECT_EQ(Duration::Millis(250).ToString(), "250ms");
  EXPECT_EQ(Duration::Seconds(90).ToString(), "1m30s");
  EXPECT_EQ((Duration::Hours(1) + Duration::Minutes(30) + Duration::Seconds(5)).ToString(), "1h30m5s");
  EXPECT_EQ(Duration::Hours(2).ToString(), "2h");
  EXPECT_EQ(Duration::Hours(25).ToString(), "25h");
  EXPECT_EQ(Duration::Millis(3'723'004).ToString(), "1h2m3s4ms");
  EXPECT_EQ(Duration::Millis(1'001).ToString(), "1s1ms");
  EXPECT_EQ(Duration::Infinite().ToString(), "inf");
  EXPECT_EQ(Duration::Seconds(-90).ToString(), "-1m30s");
  EXPECT_EQ(Duration::Millis(-5).ToString(), "-5ms");
}

TEST(TimeTest, FactoriesAndAccessors) {
  EXPECT_EQ(Time::FromMillis(1'500).millis(), 1'500);
  EXPECT_EQ(Time::FromMillis(1'500).seconds(), 1);
  EXPECT_EQ(Time::FromSeconds(7).millis(), 7'000);
  EXPECT_EQ(Time::Zero().millis(), 0);
  EXPECT_EQ(Time().millis(), 0);
  EXPECT_EQ(Time::Max().millis(), kInt64Max);
  EXPECT_TRUE(Time::Max().is_max());
  EXPECT_FALSE(Time::FromSeconds(1'000'000'000).is_max());
}

TEST(TimeTest, Comparison) {
  EXPECT_LT(Time::FromSeconds(1), Time::FromSeconds(2));
  EXPECT_EQ(Time::FromSeconds(2), Time::FromMillis(2'000));
  EXPECT_LT(Time::FromSeconds(1'000'000'000), Time::Max());
}

TEST(TimeTest, PlusAndMinusDuration) {
  const Time t = Time::FromSeconds(100);
  EXPECT_EQ(t + Duration::Seconds(20), Time::FromSeconds(120));
  EXPECT_EQ(t - Duration::Seconds(20), Time::FromSeconds(80));
  EXPECT_EQ(t + Duration::Millis(-500), Time::FromMillis(99'500));
  EXPECT_EQ(t + Duration::Zero(), t);
}

TEST(TimeTest, DifferenceIsDuration) {
  EXPECT_EQ(Time::FromSeconds(120) - Time::FromSeconds(100), Duration::Seconds(20));
  EXPECT_EQ(Time::FromSeconds(100) - Time::FromSeconds(120), Duration::Seconds(-20));
  EXPECT_EQ(Time::FromSeconds(5) - Time::FromSeconds(5), Duration::Zero());
}

TEST(TimeTest, AddingInfiniteGivesMax) {
  EXPECT_TRUE((Time::FromSeconds(100) + Duration::Infinite()).is_max());
  EXPECT_TRUE((Time::Zero() + Duration::Infinite()).is_max());
}

TEST(TimeTest, MaxStaysMaxWhenAdding) {
  EXPECT_TRUE((Time::Max() + Duration::Hours(1)).is_max());
  EXPECT_TRUE((Time::Max() + Duration::Zero()).is_max());
  EXPECT_TRUE((Time::Max() + Duration::Millis(-1)).is_max());
  EXPECT_TRUE((Time::Max() + Duration::Infinite()).is_max());
}

TEST(TimeTest, MaxMinusTimeIsInfinite) {
  EXPECT_TRUE((Time::Max() - Time::FromSeconds(100)).is_infinite());
  EXPECT_TRUE((Time::Max() - Time::Zero()).is_infinite());
}

TEST(TimeTest, FiniteSumPastMaxSaturates) {
  const Time near_max = Time::FromMillis(kInt64Max - 10);
  EXPECT_TRUE((near_max + Duration::Millis(100)).is_max());
  EXPECT_TRUE((Duration::Millis(kInt64Max - 10) + Duration::Millis(100)).is_infinite());
}

}  // namespace
}  // namespace muster
