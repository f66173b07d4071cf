#include "common/random.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace muster {
namespace {

std::vector<uint64_t> Draw(Random& r, int n) {
  std::vector<uint64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(r.Next());
  return out;
}

TEST(RandomTest, KeepsSeed) {
  EXPECT_EQ(Random(42).seed(), 42u);
  Random r(7);
  r.Next();
  EXPECT_EQ(r.seed(), 7u);
}

TEST(RandomTest, SameSeedSameSequence) {
  Random a(12345), b(12345);
  EXPECT_EQ(Draw(a, 100), Draw(b, 100));
}

TEST(RandomTest, SameSeedSameUniformSequence) {
  Random a(99), b(99);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(a.Uniform(-50, 50), b.Uniform(-50, 50));
    EXPECT_EQ(a.UniformDouble(), b.UniformDouble());
  }
}

TEST(RandomTest, DifferentSeedsDiffer) {
  Random a(1), b(2);
  const std::vector<uint64_t> x = Draw(a, 10), y = Draw(b, 10);
  int equal = 0;
  for (size_t i = 0; i < x.size(); ++i) equal += x[i] == y[i];
  EXPECT_EQ(equal, 0);
}

TEST(RandomTest, SequenceIsNotConstant) {
  Random r(5);
  const std::vector<uint64_t> v = Draw(r, 100);
  EXPECT_EQ(std::set<uint64_t>(v.begin(), v.end()).size(), 100u);
}

// SplitMix64 seeding followed by xoshiro256**, as documented; the values were
// computed with an independent implementation of the reference algorithms.
// They pin the sequence so that seeds replay on every platform.
TEST(RandomTest, MatchesReferenceSequence) {
  Random zero(0);
  EXPECT_EQ(zero.Next(), 0x99ec5f36cb75f2b4ULL);
  EXPECT_EQ(zero.Next(), 0xbf6e1f784956452aULL);
  EXPECT_EQ(zero.Next(), 0x1a5f849d4933e6e0ULL);
  Random r42(42);
  EXPECT_EQ(r42.Next(), 0x15780b2e0c2ec716ULL);
  EXPECT_EQ(r42.Next(), 0x6104d9866d113a7eULL);
  EXPECT_EQ(r42.Next(), 0xae17533239e499a1ULL);
}

TEST(RandomTest, UniformStaysInBounds) {
  Random r(3);
  for (int i = 0; i < 10'000; ++i) {
    const int64_t v = r.Uniform(-3, 7);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 7);
  }
}

TEST(RandomTest, UniformCoversEveryValue) {
  Random r(11);
  std::set<int64_t> seen;
  for (int i = 0; i < 10'000; ++i) seen.insert(r.Uniform(0, 9));
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 9);
}

TEST(RandomTest, UniformIsRoughlyFlat) {
  Random r(17);
  std::vector<int> counts(4, 0);
  const int n = 40'000;
  for (int i = 0; i < n; ++i) ++counts[r.Uniform(0, 3)];
  for (int c : counts) {
    EXPECT_GT(c, n / 4 - 800);
    EXPECT_LT(c, n / 4 + 800);
  }
}

TEST(RandomTest, UniformWithEqualBoundsReturnsThatValue) {
  Random r(4);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(r.Uniform(5, 5), 5);
    ASSERT_EQ(r.Uniform(-8, -8), -8);
    ASSERT_EQ(r.Uniform(0, 0), 0);
  }
}

TEST(RandomTest, UniformNearInt64Limits) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Random r(8);
  for (int i = 0; i < 1'000; ++i) {
    ASSERT_GE(r.Uniform(kMax - 2, kMax), kMax - 2);
    ASSERT_LE(r.Uniform(kMin, kMin + 2), kMin + 2);
    ASSERT_EQ(r.Uniform(kMax, kMax), kMax);
  }
}

TEST(RandomTest, UniformFullRangeHasNoSignedOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Random r(9);
  bool negative = false, positive = false;
  for (int i = 0; i < 1'000; ++i) {
    const int64_t v = r.Uniform(kMin, kMax);
    negative |= v < 0;
    positive |= v > 0;
    ASSERT_GE(r.Uniform(-1, kMax), -1);
  }
  EXPECT_TRUE(negative);
  EXPECT_TRUE(positive);
}

TEST(RandomTest, UniformDoubleInHalfOpenUnitInterval) {
  Random r(21);
  double lo = 1.0, hi = 0.0, sum = 0.0;
  const int n = 100'000;
  for (int i = 0; i < n; ++i) {
    const double d = r.UniformDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    sum += d;
  }
  EXPECT_LT(lo, 0.001);
  EXPECT_GT(hi, 0.999);
  EXPECT_NEAR(sum / n, 0.5, 0.01);
}

TEST(RandomTest, BernoulliExtremes) {
  Random r(6);
  for (int i = 0; i < 1'000; ++i) {
    ASSERT_FALSE(r.Bernoulli(0.0));
    ASSERT_TRUE(r.Bernoulli(1.0));
  }
}

TEST(RandomTest, BernoulliFrequency) {
  Random r(13);
  int hits = 0;
  const int n = 20'000;
  for (int i = 0; i < n; ++i) hits += r.Bernoulli(0.25);
  EXPECT_NEAR(static_cast<double>(hits) / n, 0.25, 0.02);
}

}  // namespace
}  // namespace muster
