#include "server/usage_report.h"

#include "server/pool_prices.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

namespace muster::server {
namespace {

using nlohmann::json;

constexpr int64_t kHour = 3'600'000;

// H100 3, A100 2, others 1; on spot nodes H100 1 (the rest as on-demand).
double Price(const std::string& pool, const std::string& type) {
  static const PoolPrices prices{{{"H100", 3.0}, {"A100", 2.0}, {"*", 1.0}}, {{"spot", {{"H100", 1.0}}}}};
  return prices.PerGpuHour(pool, type);
}

store::JobRow Job(int64_t id, const std::string& queue, const std::string& user, const json& status,
                  const std::string& state = "COMPLETED") {
  store::JobRow r;
  r.id = id;
  r.name = "job" + std::to_string(id);
  r.queue = queue;
  r.user = user;
  r.state = state;
  r.spec_json = R"({"resources":{"gpus":2,"gpuType":"A100"},"replicas":1})";
  r.status_json = status.dump();
  return r;
}

// (Vectors, not json lists: a json from a one-element list is an array
// under GCC but a copy of the element under clang.)
json Record(int attempt, int64_t start, int64_t end, std::vector<json> replicas, const json& extra = json::object()) {
  json r = {{"attempt", attempt}, {"startTime", start}, {"endTime", end}, {"replicas", replicas}};
  r.update(extra);
  return r;
}

json History(std::vector<json> records) { return records; }

json Replica(int gpus, const std::string& type, const std::string& pool = "on-demand") {
  return {{"node", "n"}, {"gpus", gpus}, {"gpuType", type}, {"pool", pool}};
}

TEST(UsageReport, SumsAttemptsByQueueWithPricesAndEfficiency) {
  UsageReport u(0, 100 * kHour, 100 * kHour, UsageGrouping::kQueue, Price);
  // Two replicas of 4 H100 for 2 hours, half busy; then a retry of 1 hour, unmeasured.
  u.Add(Job(1, "a", "alice",
            {{"attemptHistory",
              {Record(1, 0, 2 * kHour, {Replica(4, "H100"), Replica(4, "H100")}, {{"gpuUtilization", 0.5}}),
               Record(2, 3 * kHour, 4 * kHour, {Replica(4, "H100"), Replica(4, "H100")}, {{"exitCode", 0}})}}}));
  // One A100 for 3 hours, fully busy.
  u.Add(Job(2, "b", "bob",
            {{"attemptHistory", History({Record(1, 0, 3 * kHour, {Replica(1, "A100")}, {{"gpuUtilization", 1.0}})})}}));
  const auto lines = u.Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].queue, "a");
  EXPECT_EQ(lines[0].user, "");
  EXPECT_EQ(lines[0].totals.jobs, 1);
  EXPECT_DOUBLE_EQ(lines[0].totals.gpu_seconds, (16 + 8) * 3600.0);
  EXPECT_DOUBLE_EQ(lines[0].totals.cost, 24 * 3.0);
  EXPECT_DOUBLE_EQ(*lines[0].totals.Efficiency(), 0.5);  // only the measured attempt
  EXPECT_DOUBLE_EQ(lines[1].totals.cost, 3 * 2.0);
  EXPECT_EQ(u.Total().jobs, 2);
  EXPECT_DOUBLE_EQ(u.Total().gpu_seconds, 27 * 3600.0);
  EXPECT_DOUBLE_EQ(*u.Total().Efficiency(), (8 + 3) / 19.0);
}

TEST(UsageReport, EachReplicaIsChargedAtThePriceOfItsPool) {
  UsageReport u(0, 100 * kHour, 100 * kHour, UsageGrouping::kQueue, Price);
  // A gang of 8 H100 for an hour on spot nodes and 8 on an on-demand node.
  u.Add(Job(1, "a", "alice",
            {{"attemptHistory", History({Record(1, 0, kHour, {Replica(8, "H100", "spot"), Replica(8, "H100")})})}}));
  // A running job: 4 H100 on spot since hour 1, and 2 A100 on spot (no spot
  // price for A100: the price by type).
  json running = json::object();
  running["attempt"] = {{"attempt", 1}, {"startTime", kHour}};
  running["allocations"] = json::array({{{"gpuType", "H100"}, {"gpus", {0, 1, 2, 3}}, {"node", "s1"}, {"pool", "spot"}},
                                        {{"gpuType", "A100"}, {"gpus", {0, 1}}, {"node", "s2"}, {"pool", "spot"}}});
  u.Add(Job(2, "b", "bob", running, "RUNNING"));
  const auto lines = u.Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_DOUBLE_EQ(lines[0].totals.cost, 8 * 1.0 + 8 * 3.0);
  // 99 hours to `now` (hour 100).
  EXPECT_DOUBLE_EQ(lines[1].totals.cost, 99 * (4 * 1.0 + 2 * 2.0));
  // A record written before replicas named their pool: the price by type.
  UsageReport old(0, 100 * kHour, 100 * kHour, UsageGrouping::kQueue, Price);
  json replica = Replica(8, "H100");
  replica.erase("pool");
  old.Add(Job(3, "a", "alice", {{"attemptHistory", History({Record(1, 0, kHour, {replica})})}}));
  EXPECT_DOUBLE_EQ(old.Total().cost, 8 * 3.0);
}

TEST(UsageReport, ByPoolAJobsGpuHoursAreSplitBetweenThePoolsItRanIn) {
  UsageReport u(0, 100 * kHour, 100 * kHour, UsageGrouping::kPool, Price);
  // A gang across a spot node and an on-demand one; a job on spot only; an
  // old record that names no pool.
  u.Add(Job(1, "a", "alice",
            {{"attemptHistory", History({Record(1, 0, kHour, {Replica(8, "H100", "spot"), Replica(8, "H100")})})}}));
  u.Add(Job(2, "b", "bob", {{"attemptHistory", History({Record(1, 0, 2 * kHour, {Replica(2, "H100", "spot")})})}}));
  json old = Replica(1, "A100");
  old.erase("pool");
  u.Add(Job(3, "b", "bob", {{"attemptHistory", History({Record(1, 0, kHour, {old})})}}));
  const auto lines = u.Lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].pool, "");
  EXPECT_EQ(lines[0].totals.jobs, 1);
  EXPECT_DOUBLE_EQ(lines[0].totals.cost, 1 * 2.0);
  EXPECT_EQ(lines[1].pool, "on-demand");
  EXPECT_EQ(lines[1].totals.jobs, 1);
  EXPECT_DOUBLE_EQ(lines[1].totals.gpu_seconds, 8 * 3600.0);
  EXPECT_DOUBLE_EQ(lines[1].totals.cost, 8 * 3.0);
  EXPECT_EQ(lines[2].pool, "spot");
  EXPECT_EQ(lines[2].totals.jobs, 2);  // the gang counts in both of its pools
  EXPECT_DOUBLE_EQ(lines[2].totals.gpu_seconds, (8 + 4) * 3600.0);
  EXPECT_DOUBLE_EQ(lines[2].totals.cost, (8 + 4) * 1.0);
  EXPECT_EQ(lines[2].queue, "");
  EXPECT_EQ(u.Total().jobs, 3);  // ... and once in the total
  EXPECT_DOUBLE_EQ(u.Total().cost, 2.0 + 24.0 + 12.0);
}

TEST(UsageReport, AnElasticJobsReplicasAreChargedForTheirOwnSpans) {
  UsageReport u(0, 100 * kHour, 100 * kHour, UsageGrouping::kQueue, Price);
  // Replica 0 for the whole 4 hours; replica 1 added after 1 hour and given
  // back after 3; replica 2 added at 3 hours.
  json grown = Replica(4, "H100"), later = Replica(4, "H100");
  grown.update({{"startTime", 1 * kHour}, {"endTime", 3 * kHour}});
  later.update({{"startTime", 3 * kHour}, {"endTime", 4 * kHour}});
  u.Add(Job(1, "a", "alice",
            {{"attemptHistory", History({Record(1, 0, 4 * kHour, {Replica(4, "H100"), grown, later})})}}));
  EXPECT_DOUBLE_EQ(u.Total().gpu_seconds, (4 * 4 + 4 * 2 + 4 * 1) * 3600.0);
}

TEST(UsageReport, CutsAttemptsToTheWindowAndCountsRunningOnesToNow) {
  UsageReport u(kHour, 3 * kHour, 10 * kHour, UsageGrouping::kUser, Price);
  u.Add(Job(1, "a", "alice",
            {{"attemptHistory", History({Record(1, 0, 2 * kHour, {Replica(1, "H100")})})}}));  // 1 h inside
  u.Add(
      Job(2, "a", "alice", {{"attemptHistory", History({Record(1, 0, kHour / 2, {Replica(1, "H100")})})}}));  // before
  u.Add(Job(3, "b", "alice",
            {{"attemptHistory", History({Record(1, 4 * kHour, 5 * kHour, {Replica(1, "H100")})})}}));  // after
  // Running since 2 h on two allocations of 2 GPUs: 1 h inside, x4.
  u.Add(Job(4, "b", "alice",
            {{"attempt", {{"attempt", 1}, {"startTime", 2 * kHour}}},
             {"allocations", {{{"gpuType", "H100"}, {"gpus", {0, 1}}}, {{"gpuType", "H100"}, {"gpus", {2, 3}}}}}},
            "RUNNING"));
  const auto lines = u.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].user, "alice");
  EXPECT_EQ(lines[0].queue, "");
  EXPECT_EQ(lines[0].totals.jobs, 2);
  EXPECT_DOUBLE_EQ(lines[0].totals.gpu_seconds, 5 * 3600.0);
  EXPECT_FALSE(lines[0].totals.Efficiency().has_value());
}

TEST(UsageReport, ByJobKeepsTheExitCodeAndOldRecordsUseTheSpec) {
  UsageReport u(0, 10 * kHour, 10 * kHour, UsageGrouping::kJob, Price);
  json old_replica = {{"node", "n"}, {"result", "exited 0"}};  // before records named GPUs
  u.Add(Job(7, "a", "alice",
            {{"attemptHistory", History({Record(1, 0, kHour, {old_replica}, {{"exitCode", 3}, {"signal", 0}})})}},
            "FAILED"));
  u.Add(Job(5, "a", "alice", {{"attemptHistory", json::array()}}, "CANCELLED"));  // never ran
  const auto lines = u.Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].job, 7);
  EXPECT_EQ(lines[1].state, "FAILED");
  EXPECT_EQ(lines[1].exit_code, 3);
  EXPECT_EQ(lines[1].attempts, 1);
  EXPECT_DOUBLE_EQ(lines[1].totals.gpu_seconds, 2 * 3600.0);  // the spec's 2 A100
  EXPECT_DOUBLE_EQ(lines[1].totals.cost, 2 * 2.0);
  // Cancelled before it ran: listed as sacct lists it, with no usage.
  EXPECT_EQ(lines[0].job, 5);
  EXPECT_EQ(lines[0].state, "CANCELLED");
  EXPECT_EQ(lines[0].attempts, 0);
  EXPECT_FALSE(lines[0].exit_code.has_value());
  EXPECT_EQ(lines[0].totals.gpu_seconds, 0);
  // By queue it is no job of the window's usage.
  UsageReport q(0, 10 * kHour, 10 * kHour, UsageGrouping::kQueue, Price);
  q.Add(Job(5, "a", "alice", {{"attemptHistory", json::array()}}, "CANCELLED"));
  EXPECT_TRUE(q.Lines().empty());
}

// A spec as the server stores it names every field, null where unset.
TEST(UsageReport, CpuOnlyJobsAndNullFieldsCountWithoutGpuHours) {
  UsageReport u(0, 10 * kHour, 10 * kHour, UsageGrouping::kQueue, Price);
  store::JobRow row = Job(3, "a", "alice", {{"attemptHistory", History({Record(1, 0, kHour, {{{"node", "n"}}})})}});
  row.spec_json = R"({"resources":{"gpus":0,"gpuType":null},"replicas":1})";
  u.Add(row);
  row.id = 4;
  row.status_json = R"({"attemptHistory":[{"attempt":1,"startTime":0,"endTime":1000,"replicas":null}],"attempt":null})";
  u.Add(row);
  ASSERT_EQ(u.Lines().size(), 1u);
  EXPECT_EQ(u.Total().jobs, 2);
  EXPECT_EQ(u.Total().gpu_seconds, 0);
}

TEST(UsageReport, GroupingNames) {
  EXPECT_EQ(*ParseUsageGrouping("user,queue"), UsageGrouping::kQueueUser);
  for (const UsageGrouping by : {UsageGrouping::kQueue, UsageGrouping::kUser, UsageGrouping::kQueueUser,
                                 UsageGrouping::kJob, UsageGrouping::kPool}) {
    EXPECT_EQ(*ParseUsageGrouping(UsageGroupingName(by)), by) << UsageGroupingName(by);
  }
  const auto bad = ParseUsageGrouping("team");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "by");
}

}  // namespace
}  // namespace muster::server
