#include "api/output_pattern.h"

#include <gtest/gtest.h>

namespace muster::api {
namespace {

TEST(OutputPattern, ExpandsSlurmsSymbols) {
  OutputNames n{42, 40, 2, 1, 3, "train", "alice", "gpu-07"};
  EXPECT_EQ(ExpandOutputPattern("/shared/%x-%j.%t.out", n), "/shared/train-42.1.out");
  EXPECT_EQ(ExpandOutputPattern("%A_%a-%u@%N 100%%", n), "40_2-alice@gpu-07 100%");
  EXPECT_EQ(ExpandOutputPattern("node%n.out", n), "node3.out");
  OutputNames single{7, 0, -1, 0, 0, "job", "bob", "n1"};
  EXPECT_EQ(ExpandOutputPattern("logs/%A.%a", single), "logs/7.0");
  EXPECT_EQ(ExpandOutputPattern("plain.log", single), "plain.log");
}

TEST(OutputPattern, RefusesUnknownSymbolsNamingTheField) {
  EXPECT_TRUE(CheckOutputPattern("/x/%j-%%-%N", "spec.stdout").ok());
  for (const char* bad : {"/x/%4j", "/x/%s", "/x/%"}) {
    const Status s = CheckOutputPattern(bad, "spec.stdout");
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.field(), "spec.stdout");
    EXPECT_NE(s.message().find("%j (job id)"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace muster::api
