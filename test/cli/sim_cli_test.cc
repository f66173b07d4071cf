// Runs the real `muster` binary as a user would and checks its exit codes,
// output and files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../run_binary.h"

namespace {

using Result = muster::testing::CommandResult;

Result Muster(const std::string& args) { return muster::testing::RunCommand(std::string(MUSTER_BINARY) + " " + args); }

const char* kSlice = "test/data/traces/itp-cluster04-first1500.csv";

TEST(SimCli, JsonReportHasTheDocumentedKeys) {
  const Result r = Muster(std::string("sim ") + kSlice + " --nodes 20x8 --nodes-per-leaf 4 -o json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"jobs", "completed", "unschedulable", "mean_jct_s", "p50_jct_s", "p99_jct_s", "mean_wait_s",
                          "p50_wait_s", "p99_wait_s", "max_wait_s", "makespan_s", "utilization", "per_class",
                          "per_tenant", "time_limit_factor", "reservations", "backfill_by"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["jobs"], 1500);
  EXPECT_EQ(j["completed"], 1500);
  EXPECT_EQ(j["policy"], "muster");
  EXPECT_EQ(j["time_limit_factor"], 2.0);
}

TEST(SimCli, TextReportStatesPolicyClusterAndFactor) {
  const Result r = Muster(std::string("sim ") + kSlice + " --nodes 20x8 --policy sjf --time-limit-factor 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("policy sjf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("20 nodes x 8 GPU"), std::string::npos);
  EXPECT_NE(r.out.find("time limit = 3 x duration"), std::string::npos);
  EXPECT_NE(r.out.find("backfill by limit"), std::string::npos);
}

TEST(SimCli, JobsCsvHasOneRowPerJob) {
  const std::string path = testing::TempDir() + "/muster_jobs.csv";
  const Result r = Muster(std::string("sim ") + kSlice + " --nodes 20x8 --single-pool --jobs-csv " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(path);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("id,submit,start,end,gpus,nodes,wait", 0), 0u);
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, 1500);
}

TEST(SimCli, ClusterFileWorksAndBadOnesAreExplained) {
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "/good.yaml") << "nodeGroups:\n  - {count: 10, gpus: 8, gpuType: V100, nodesPerLeaf: 5}\n";
  Result r = Muster(std::string("sim ") + kSlice + " --cluster " + dir + "/good.yaml --limit 200");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("10 nodes x 8 GPU (V100)"), std::string::npos) << r.out;
  std::ofstream(dir + "/bad.yaml") << "nodeGroups:\n  - {count: 10, gpus: 8, gpuTyp: V100}\n";
  r = Muster(std::string("sim ") + kSlice + " --cluster " + dir + "/bad.yaml");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("cluster.nodeGroups[0].gpuTyp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did you mean \"gpuType\""), std::string::npos) << r.out;
}

// A reclaim trace from a file: its notices stop the jobs on those nodes
// (the report counts them); a bad line is named with its number.
TEST(SimCli, AReclaimTraceIsReadAndABadLineNamed) {
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "/spot.yaml") << "nodeGroups: [{count: 2, gpus: 8, prefix: od-}, "
                                       "{count: 2, gpus: 8, prefix: spot-, spot: true}]\n";
  std::ofstream(dir + "/reclaims.csv") << "time_s,node\r\n600,spot-0\n\n900,spot-1\n";
  Result r = Muster(std::string("sim ") + kSlice + " --cluster " + dir + "/spot.yaml --limit 300 --reclaims " + dir +
                    "/reclaims.csv -o json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["reclaims"]["notices"], 2) << r.out;
  std::ofstream(dir + "/bad.csv") << "time_s,node\n600,spot-0\nsoon,spot-1\n";
  r = Muster(std::string("sim ") + kSlice + " --cluster " + dir + "/spot.yaml --reclaims " + dir + "/bad.csv");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("bad.csv line 3: must be time_s,node, got \"soon,spot-1\""), std::string::npos) << r.out;
  r = Muster(std::string("sim ") + kSlice + " --cluster " + dir + "/spot.yaml --reclaims " + dir + "/none.csv");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--reclaims"), std::string::npos) << r.out;
}

TEST(SimCli, ErrorsNameTheCauseAndUseTheRightExitCode) {
  Result r = Muster("sim /nonexistent.csv --nodes 2x8");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("cannot open trace file /nonexistent.csv"), std::string::npos) << r.out;

  r = Muster(std::string("sim ") + kSlice + " --nodes eighty");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--nodes: expected COUNTxGPUS"), std::string::npos) << r.out;

  r = Muster(std::string("sim ") + kSlice + " --nodes 2x8 --policy lottery");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("unknown policy \"lottery\""), std::string::npos) << r.out;

  const std::string bad = testing::TempDir() + "/bad_trace.csv";
  std::ofstream(bad) << "job_id,submit_time,num_gpus,duration\na,0,1,10\nb,5,two,10\n";
  r = Muster("sim " + bad + " --nodes 2x8");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(bad + ":3: num_gpus: not an integer: \"two\""), std::string::npos) << r.out;

  r = Muster(std::string("sim ") + kSlice + " --nodes 2x8 --backfill-by guess");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--backfill-by: must be prediction or limit, got \"guess\""), std::string::npos) << r.out;
  r = Muster(std::string("sim ") + kSlice + " --nodes 2x8 --time-limit 0s");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--time-limit"), std::string::npos) << r.out;

  r = Muster(std::string("sim ") + kSlice + " --nodes 2x8 --no-such-flag");
  EXPECT_EQ(r.code, 2) << r.out;
  r = Muster("");
  EXPECT_EQ(r.code, 2) << r.out;
  r = Muster("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("muster"), std::string::npos);
}

}  // namespace
