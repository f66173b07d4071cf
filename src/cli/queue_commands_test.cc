#include "cli/queue_commands.h"

#include <gtest/gtest.h>

namespace muster::cli {
namespace {

std::string CountsError(const std::string& text) {
  auto r = ParseGpuCounts(text, "--limit");
  return r.ok() ? "accepted" : r.status().field() + ": " + r.status().message();
}

TEST(GpuCounts, ACountIsEveryTypeAndItemsAreByType) {
  EXPECT_EQ(*ParseGpuCounts("32", "--limit"), (std::map<std::string, int64_t>{{"*", 32}}));
  EXPECT_EQ(*ParseGpuCounts("H100=16,*=48", "--limit"), (std::map<std::string, int64_t>{{"H100", 16}, {"*", 48}}));
  EXPECT_EQ(CountsError("-1"), "--limit: must be a GPU count (0 to 999999999), got \"-1\"");
  EXPECT_EQ(CountsError("H100=x"), "--limit: must be a GPU count (0 to 999999999), got \"x\"");
  EXPECT_EQ(CountsError("H100=1,,"), "--limit: must be TYPE=COUNT items, comma-separated (H100=16,*=48), got \"\"");
  EXPECT_EQ(CountsError("=4"), "--limit: must be TYPE=COUNT items, comma-separated (H100=16,*=48), got \"=4\"");
  EXPECT_EQ(CountsError("H100=1,H100=2"), "--limit: names H100 twice");
}

}  // namespace
}  // namespace muster::cli
