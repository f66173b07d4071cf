#include "cli/slurm_jobs.h"

#include <gtest/gtest.h>

#include "cli/command_options.h"

namespace muster::cli {
namespace {

using nlohmann::json;

TEST(SlurmJobs, AJobReadsInSlurmsTerms) {
  const json j = json::parse(R"({"id": 12, "name": "t", "user": "ana", "queue": "research", "priority": "high",
    "state": "PENDING", "reason": "ArrayTaskLimit", "replicas": 2, "resources": {"cpus": 4, "gpus": 8},
    "timeLimit": "1h30m", "arrayIndex": 2, "arrayFirstId": 10, "array": "100-300:100%1",
    "slurm": {"partition": "gpu"}, "submitTime": "2026-11-29T11:42:34.508Z"})");
  const SlurmJob s = SlurmJobFromJson(j);
  EXPECT_EQ(s.IdText(), "10_300") << "Slurm's index, not the position";
  EXPECT_EQ(s.array_limit, 1);
  EXPECT_EQ(s.partition, "gpu");
  EXPECT_EQ(s.qos, "high");
  EXPECT_EQ(s.account, "research");
  EXPECT_EQ(s.code, "PD");
  EXPECT_EQ(s.reason, "JobArrayTaskLimit");
  EXPECT_EQ(s.node_count, 2);
  EXPECT_EQ(s.cpus, 8);
  EXPECT_EQ(s.time_limit, Duration::Minutes(90));
  json held = j;
  held["state"] = "HELD";
  EXPECT_EQ(SlurmJobFromJson(held).slurm_state, "PENDING");
  EXPECT_EQ(SlurmJobFromJson(held).reason, "JobHeldUser");
  json ran = j;
  ran["state"] = "TIMEOUT";
  ran["attemptHistory"] = json::array(
      {{{"exitCode", 0}, {"signal", 15}, {"replicas", {{{"node", "n10"}}, {{"node", "n9"}}, {{"node", "m1"}}}}}});
  const SlurmJob r = SlurmJobFromJson(ran);
  EXPECT_EQ(r.code, "TO");
  EXPECT_EQ(r.reason, "None");
  EXPECT_EQ(r.nodes, (std::vector<std::string>{"m1", "n9", "n10"})) << "in the cluster's order, numbers by value";
  EXPECT_EQ(r.exit_signal, 15);
}

TEST(SlurmJobs, DurationsAndFormatsAsSlurmPrintsThem) {
  EXPECT_EQ(SlurmDuration(0, false), "0:00");
  EXPECT_EQ(SlurmDuration(65, false), "1:05");
  EXPECT_EQ(SlurmDuration(3600, false), "1:00:00");
  EXPECT_EQ(SlurmDuration(90061, false), "1-01:01:01");
  EXPECT_EQ(SlurmDuration(65, true), "00:01:05");
  const std::vector<FormatPiece> p = ParsePercentFormat("%.18i %9P|%j %#N%");
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(p[0].field, 'i');
  EXPECT_TRUE(p[0].right);
  EXPECT_EQ(p[0].width, 18);
  EXPECT_EQ(p[1].literal, " ");
  EXPECT_FALSE(p[2].right);
  EXPECT_EQ(p[3].literal, "|");
  EXPECT_TRUE(p[6].fit);
  EXPECT_EQ(p[7].literal, "%");
  EXPECT_EQ(FitField(p[0], "12"), std::string(16, ' ') + "12");
  EXPECT_EQ(FitField(p[2], "partition-long"), "partition");
  EXPECT_EQ(FitField(p[4], "any length"), "any length");
}

TEST(CommandOptions, ReadAsGetoptLongReadsThem) {
  static constexpr CommandOption kTable[] = {
      {'h', "noheader"}, {'o', "format", true}, {'u', "user", true}, {0, "users-only"}, {0, "me"}};
  auto cl = ReadCommandLine({"-ho", "%i", "--user=a,b", "-ub", "12", "--me", "--", "-x"}, kTable);
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_TRUE(cl->Has("noheader"));
  EXPECT_EQ(cl->Last("format"), "%i");
  EXPECT_EQ(cl->List("user"), (std::vector<std::string>{"a", "b", "b"}));
  EXPECT_EQ(cl->words, (std::vector<std::string>{"12", "-x"}));
  EXPECT_EQ(ReadCommandLine({"--use=x"}, kTable).status().message(),
            "option '--use' is ambiguous; possibilities: --user, --users-only");
  EXPECT_EQ(ReadCommandLine({"--bogus"}, kTable).status().message(), "unrecognized option '--bogus'");
  EXPECT_EQ(ReadCommandLine({"-o"}, kTable).status().message(), "option requires an argument -- 'o'");
  EXPECT_EQ(ReadCommandLine({"--me=1"}, kTable).status().message(), "option '--me' doesn't allow an argument");
}

}  // namespace
}  // namespace muster::cli
