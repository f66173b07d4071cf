#include "cli/window_time.h"

#include <gtest/gtest.h>

#include "common/rfc3339.h"

namespace muster::cli {
namespace {

const Time kNow = *ParseRfc3339Utc("2026-11-28T12:00:00Z");

std::string At(const std::string& text) {
  auto t = ParseWindowTime(text, kNow, "since");
  return t.ok() ? FormatRfc3339Utc(*t) : "error: " + t.status().message();
}

TEST(WindowTime, TimesDatesAndAges) {
  EXPECT_EQ(At("2026-11-01T08:30:00Z"), "2026-11-01T08:30:00Z");
  EXPECT_EQ(At("2026-11-01T08:30:00+01:00"), "2026-11-01T07:30:00Z");
  EXPECT_EQ(At("2026-11-01"), "2026-11-01T00:00:00Z");
  EXPECT_EQ(At("now"), "2026-11-28T12:00:00Z");
  EXPECT_EQ(At("90m"), "2026-11-28T10:30:00Z");
  EXPECT_EQ(At("36h"), "2026-11-27T00:00:00Z");
  EXPECT_EQ(At("7d"), "2026-11-21T12:00:00Z");
  EXPECT_EQ(At("2w"), "2026-11-14T12:00:00Z");
}

TEST(WindowTime, RefusesWhatItCannotReadNamingTheFlag) {
  for (const char* bad : {"", "7", "d", "-3d", "7y", "2026-13-01", "yesterday", "3.5h", "7 d"}) {
    auto t = ParseWindowTime(bad, kNow, "since");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().field(), "since");
  }
}

}  // namespace
}  // namespace muster::cli
