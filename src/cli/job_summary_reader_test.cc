#include "cli/job_summary_reader.h"

#include <gtest/gtest.h>

namespace muster::cli {
namespace {

const char* kPage =
    R"({"items":[)"
    R"({"id":7,"name":"train","user":"ana","queue":"research","priority":"high","state":"RUNNING","reason":"",)"
    R"("submitTime":"2026-11-26T10:00:00.000Z","startTime":"2026-11-26T10:00:01.000Z","gpus":8,"replicas":2,"nodes":["n1","n2"]},)"
    R"({"id":8,"name":"caf\u00e9 \"x\"","user":"bo","queue":"default","priority":"normal","state":"PENDING",)"
    R"("reason":"Priority","submitTime":"2026-11-26T10:00:02.000Z","gpus":0,"replicas":1,"nodes":[]})"
    R"(],"continue":"8"})";

TEST(ReadJobSummaryPage, ReadsEveryItemsFields) {
  std::vector<JobSummaryItem> items;
  auto n = ReadJobSummaryPage(kPage, INT64_MAX, [&](const JobSummaryItem& j) { items.push_back(j); });
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].id, "7");
  EXPECT_EQ(items[0].name, "train");
  EXPECT_EQ(items[0].user, "ana");
  EXPECT_EQ(items[0].queue, "research");
  EXPECT_EQ(items[0].priority, "high");
  EXPECT_EQ(items[0].state, "RUNNING");
  EXPECT_EQ(items[0].submit_time, "2026-11-26T10:00:00.000Z");
  EXPECT_EQ(items[0].gpus, 8);
  EXPECT_EQ(items[0].replicas, 2);
  EXPECT_EQ(items[0].nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(items[1].name, "caf\xc3\xa9 \"x\"");
  EXPECT_EQ(items[1].reason, "Priority");
  EXPECT_TRUE(items[1].nodes.empty());
}

TEST(ReadJobSummaryPage, StopsAtTheLimitAndRefusesWhatIsNotJson) {
  int calls = 0;
  auto one = ReadJobSummaryPage(kPage, 1, [&](const JobSummaryItem&) { ++calls; });
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, 1);
  EXPECT_EQ(calls, 1);
  auto none = ReadJobSummaryPage(R"({"items":[],"continue":""})", INT64_MAX, [&](const JobSummaryItem&) { ++calls; });
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  auto bad = ReadJobSummaryPage(R"({"items":[{"id":1,)", INT64_MAX, [&](const JobSummaryItem&) { ++calls; });
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not JSON"), std::string::npos);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace muster::cli
