#include "common/quantity.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace muster {
namespace {

constexpr int64_t kKi = int64_t{1} << 10;
constexpr int64_t kMi = int64_t{1} << 20;
constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kTi = int64_t{1} << 40;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Expects `result` to be an InvalidArgument error whose message quotes `input`.
template <typename T>
void ExpectRejected(const StatusOr<T>& result, const std::string& input) {
  ASSERT_FALSE(result.ok()) << "input \"" << input << "\" was accepted";
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << input;
  EXPECT_TRUE(Contains(result.status().message(), "\"" + input + "\""))
      << "message does not quote the input: " << result.status().message();
}

int64_t Bytes(const std::string& text) {
  StatusOr<int64_t> r = ParseMemoryBytes(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : -1;
}

TEST(ParseMemoryBytesTest, BinarySuffixes) {
  EXPECT_EQ(Bytes("512Gi"), 512 * kGi);
  EXPECT_EQ(Bytes("1500Mi"), 1500 * kMi);
  EXPECT_EQ(Bytes("4Ki"), 4 * kKi);
  EXPECT_EQ(Bytes("2Ti"), 2 * kTi);
}

TEST(ParseMemoryBytesTest, DecimalSuffixes) {
  EXPECT_EQ(Bytes("16G"), int64_t{16'000'000'000});
  EXPECT_EQ(Bytes("3K"), 3'000);
  EXPECT_EQ(Bytes("7M"), 7'000'000);
  EXPECT_EQ(Bytes("1T"), int64_t{1'000'000'000'000});
}

TEST(ParseMemoryBytesTest, PlainBytes) {
  EXPECT_EQ(Bytes("1048576"), 1'048'576);
  EXPECT_EQ(Bytes("0"), 0);
}

TEST(ParseMemoryBytesTest, Fractions) {
  EXPECT_EQ(Bytes("1.5Gi"), kGi + kGi / 2);
  EXPECT_EQ(Bytes("0.5Mi"), kMi / 2);
  EXPECT_EQ(Bytes("2.25G"), int64_t{2'250'000'000});
}

TEST(ParseMemoryBytesTest, RejectsBadInput) {
  for (const std::string bad : {"abc", "-1Gi", "", "Gi", "1.5.5Gi", "12Xi", "1 Gi", "1.2345Gi"}) {
    SCOPED_TRACE(bad);
    ExpectRejected(ParseMemoryBytes(bad), bad);
  }
}

TEST(ParseMemoryBytesTest, MessageNamesExpectedForm) {
  StatusOr<int64_t> r = ParseMemoryBytes("abc");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "512Gi")) << r.status().message();
  EXPECT_EQ(r.status().field(), "");  // callers add the field path
}

int64_t Milli(const std::string& text) {
  StatusOr<int64_t> r = ParseCpuMilli(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : -1;
}

TEST(ParseCpuMilliTest, Accepts) {
  EXPECT_EQ(Milli("4"), 4'000);
  EXPECT_EQ(Milli("2.5"), 2'500);
  EXPECT_EQ(Milli("500m"), 500);
  EXPECT_EQ(Milli("0.25"), 250);
  EXPECT_EQ(Milli("0"), 0);
  EXPECT_EQ(Milli("1500m"), 1'500);
}

TEST(ParseCpuMilliTest, RejectsBadInput) {
  for (const std::string bad : {"abc", "", "-1", "m", "1.5m", "2.", "1.2345", "4 cores", "-500m"}) {
    SCOPED_TRACE(bad);
    ExpectRejected(ParseCpuMilli(bad), bad);
  }
}

Duration Dur(const std::string& text) {
  StatusOr<Duration> r = ParseDuration(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : Duration::Millis(-1);
}

TEST(FormatQuantityTest, CpusAndMemoryParseBack) {
  EXPECT_EQ(FormatCpus(64000), "64");
  EXPECT_EQ(FormatCpus(2500), "2.5");
  EXPECT_EQ(FormatCpus(130250), "130.25");
  EXPECT_EQ(FormatCpus(5), "0.005");
  EXPECT_EQ(FormatMemory(int64_t{1} << 40), "1Ti");
  EXPECT_EQ(FormatMemory(int64_t{512} << 30), "512Gi");
  EXPECT_EQ(FormatMemory(int64_t{1536} << 20), "1536Mi");
  EXPECT_EQ(FormatMemory(1000), "1000");
  EXPECT_EQ(FormatMemory(0), "0");
  for (int64_t milli : {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1001}, int64_t{123456}}) {
    EXPECT_EQ(*ParseCpuMilli(FormatCpus(milli)), milli) << milli;
  }
  for (int64_t bytes : {int64_t{1}, int64_t{1024}, int64_t{1} << 20, (int64_t{3} << 40) + 1024, int64_t{7} << 30}) {
    EXPECT_EQ(*ParseMemoryBytes(FormatMemory(bytes)), bytes) << bytes;
  }
}

TEST(ParseDurationTest, UnitForm) {
  EXPECT_EQ(Dur("90s"), Duration::Seconds(90));
  EXPECT_EQ(Dur("2h30m"), Duration::Hours(2) + Duration::Minutes(30));
  EXPECT_EQ(Dur("1h"), Duration::Hours(1));
  EXPECT_EQ(Dur("250ms"), Duration::Millis(250));
  EXPECT_EQ(Dur("1d"), Duration::Hours(24));
  EXPECT_EQ(Dur("1d2h3m4s500ms"),
            Duration::Hours(26) + Duration::Minutes(3) + Duration::Seconds(4) + Duration::Millis(500));
}

TEST(ParseDurationTest, BareNumberIsMinutesAsInSlurm) {
  EXPECT_EQ(Dur("30"), Duration::Minutes(30));
  EXPECT_EQ(Dur("0"), Duration::Zero());
}

TEST(ParseDurationTest, SlurmColonForms) {
  EXPECT_EQ(Dur("05:30"), Duration::Minutes(5) + Duration::Seconds(30));  // MM:SS
  EXPECT_EQ(Dur("1:02:03"),
            Duration::Hours(1) + Duration::Minutes(2) + Duration::Seconds(3));  // HH:MM:SS
}

TEST(ParseDurationTest, SlurmDayForms) {
  const Duration two_days = Duration::Hours(48);
  EXPECT_EQ(Dur("2-03"), two_days + Duration::Hours(3));
  EXPECT_EQ(Dur("2-03:04"), two_days + Duration::Hours(3) + Duration::Minutes(4));
  EXPECT_EQ(Dur("2-03:04:05"), two_days + Duration::Hours(3) + Duration::Minutes(4) + Duration::Seconds(5));
}

TEST(ParseDurationTest, Unlimited) {
  EXPECT_TRUE(Dur("inf").is_infinite());
  EXPECT_TRUE(Dur("unlimited").is_infinite());
  EXPECT_TRUE(Dur("UNLIMITED").is_infinite());
}

TEST(ParseDurationTest, RejectsBadInput) {
  for (const std::string bad :
       {"1x", "", "1:2:3:4", "h", "1h30", "-5", "2-", "1::2", "1:", "abc", "1.5h", "1 h", "2-03:04:05:06"}) {
    SCOPED_TRACE(bad);
    ExpectRejected(ParseDuration(bad), bad);
  }
}

TEST(ParseDurationTest, RejectsOverflow) {
  ExpectRejected(ParseDuration("99999999999999999999s"), "99999999999999999999s");
  ExpectRejected(ParseDuration("9223372036854775807d"), "9223372036854775807d");
}

TEST(ClosestMatchTest, FindsTypo) {
  const std::vector<std::string> known = {"gpuType", "count"};
  EXPECT_EQ(ClosestMatch("gpuTyp", known), "gpuType");
  EXPECT_EQ(ClosestMatch("cuont", known), "count");
  EXPECT_EQ(ClosestMatch("GPUTYPE", known), "gpuType");  // case-insensitive
}

TEST(ClosestMatchTest, UnrelatedWordGivesEmpty) {
  const std::vector<std::string> known = {"gpuType", "count"};
  EXPECT_EQ(ClosestMatch("elephant", known), "");
  EXPECT_EQ(ClosestMatch("zzzz", known), "");
}

TEST(ClosestMatchTest, PicksNearestCandidate) {
  EXPECT_EQ(ClosestMatch("nodesPerLeef", {"leavesPerSpine", "nodesPerLeaf", "nodes"}), "nodesPerLeaf");
}

TEST(ClosestMatchTest, NoCandidatesGivesEmpty) { EXPECT_EQ(ClosestMatch("gpus", {}), ""); }

}  // namespace
}  // namespace muster
