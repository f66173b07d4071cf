#include "common/rfc3339.h"

#include <gtest/gtest.h>

namespace muster {
namespace {

TEST(Rfc3339Test, ParsesUtcTimestamps) {
  EXPECT_EQ(ParseRfc3339Utc("1970-01-01T00:00:00Z"), Time::FromMillis(0));
  EXPECT_EQ(ParseRfc3339Utc("2026-11-26T10:00:00Z"), Time::FromSeconds(1795687200));
  EXPECT_EQ(ParseRfc3339Utc("2026-11-26T10:00:00.25Z"), Time::FromMillis(1795687200250));
  EXPECT_EQ(ParseRfc3339Utc("2026-11-26T10:00:00.123456789Z"), Time::FromMillis(1795687200123));
  EXPECT_EQ(ParseRfc3339Utc("2024-02-29T23:59:59Z"), Time::FromSeconds(1709251199));
  EXPECT_EQ(ParseRfc3339Utc("2000-02-29T00:00:00Z"), Time::FromSeconds(951782400));
}

TEST(Rfc3339Test, NumericOffsetsAreLocalTimes) {
  EXPECT_EQ(ParseRfc3339Utc("2026-11-26T11:00:00+01:00"), Time::FromSeconds(1795687200));
  EXPECT_EQ(ParseRfc3339Utc("2026-11-26T04:30:00.25-05:30"), Time::FromMillis(1795687200250));
  EXPECT_EQ(ParseRfc3339Utc("2026-11-26T10:00:00+00:00"), Time::FromSeconds(1795687200));
  // Across midnight and a month's end.
  EXPECT_EQ(ParseRfc3339Utc("2026-12-01T01:00:00+02:00"), ParseRfc3339Utc("2026-11-30T23:00:00Z"));
  // Within range only once in UTC.
  EXPECT_EQ(ParseRfc3339Utc("1970-01-01T01:00:00+01:00"), Time::FromMillis(0));
  EXPECT_FALSE(ParseRfc3339Utc("1970-01-01T00:30:00+01:00").has_value());
  EXPECT_FALSE(ParseRfc3339Utc("9999-12-31T23:30:00-01:00").has_value());
}

TEST(Rfc3339Test, RefusesAnythingElse) {
  for (const char* bad : {"",
                          "2026-11-26",
                          "2026-11-26T10:00:00",
                          "2026-11-26 10:00:00Z",
                          "2026-11-26t10:00:00z",
                          "2026-11-26T10:00:00+0200",
                          "2026-11-26T10:00:00+02",
                          "2026-11-26T10:00:00+24:00",
                          "2026-11-26T10:00:00+02:60",
                          "2026-11-26T10:00:00+02:00Z",
                          "2026-11-26T10:00:00 +02:00",
                          "2026-13-01T00:00:00Z",
                          "2026-00-01T00:00:00Z",
                          "2026-04-31T00:00:00Z",
                          "2026-02-29T00:00:00Z",
                          "1900-02-29T00:00:00Z",
                          "1969-12-31T23:59:59Z",
                          "2026-11-26T24:00:00Z",
                          "2026-11-26T10:60:00Z",
                          "2026-11-26T10:00:60Z",
                          "2026-11-26T10:00:00.Z",
                          "2026-11-26T10:00:00.1234567890Z",
                          "2026-11-26T10:00:00ZZ",
                          "+2026-11-26T10:00:00Z",
                          "2026-1-26T10:00:00Z",
                          "２０２６-11-26T10:00:00Z"}) {
    EXPECT_FALSE(ParseRfc3339Utc(bad).has_value()) << bad;
  }
}

TEST(Rfc3339Test, FormatParsesBack) {
  EXPECT_EQ(FormatRfc3339Utc(Time::FromSeconds(1795687200)), "2026-11-26T10:00:00Z");
  EXPECT_EQ(FormatRfc3339Utc(Time::FromMillis(1795687200250)), "2026-11-26T10:00:00.250Z");
  for (int64_t ms : {int64_t{0}, int64_t{951782400000}, int64_t{1709251199999}, int64_t{253402300799000}}) {
    const std::string s = FormatRfc3339Utc(Time::FromMillis(ms));
    EXPECT_EQ(ParseRfc3339Utc(s), Time::FromMillis(ms)) << s;
  }
}

}  // namespace
}  // namespace muster
