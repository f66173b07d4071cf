// Accounting on a real cluster: `muster usage` after a known workload gives
// the GPU-hours and cost of the jobs' own runs (each attempt's span times
// its GPUs times its type's price in its node's pool), `muster history`
// their exit codes and efficiency, in a table, CSV and JSON; the cost
// metrics by pool.
#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "../agent/cluster_fixture.h"
#include "../run_binary.h"

namespace muster::testing {
namespace {

using nlohmann::json;

constexpr double kH100 = 3.60, kA100 = 2.20, kOther = 1.00;

class UsageTest : public ClusterFixture {
 protected:
  UsageTest()
      : ClusterFixture(
            "rateLimit: {perSecond: 100000, burst: 100000}\n"
            "agents: {defaultGrace: 1s}\n"
            "prices: {H100: 3.60, A100: 2.20, \"*\": 1.00}\n"
            "queues: [{name: vision, guarantee: 4}, {name: speech, guarantee: 4}]\n") {}

  // `muster ARGS` as the admin; its output.
  CommandResult Cli(const std::string& args) {
    return RunCommand("MUSTER_TOKEN=" + server_.admin_token() + " " + MUSTER_BINARY + " " + args + " --server " +
                      server_.url() + " 2>&1");
  }
};

// What each stored attempt charges: its span times its replicas' GPUs times
// their type's price.
struct Charged {
  double gpu_seconds = 0, cost = 0;
};

Charged ChargeOf(const json& job) {
  Charged c;
  for (const json& a : job.value("attemptHistory", json::array())) {
    // The API writes times to the millisecond, as they are stored.
    const int64_t start = Millis(a["startTime"]), end = Millis(a["endTime"]);
    EXPECT_TRUE(start >= 0 && end >= 0) << a.dump();
    const double seconds = static_cast<double>(end - start) / 1000;
    for (const json& r : a["replicas"]) {
      const double gpus = r.value("gpus", 0);
      const std::string type = r.value("gpuType", "");
      c.gpu_seconds += seconds * gpus;
      c.cost += seconds * gpus / 3600 * (type == "H100" ? kH100 : type == "A100" ? kA100 : kOther);
    }
  }
  return c;
}

TEST_F(UsageTest, UsageIsTheSumOfTheJobsRunsAndHistoryShowsEachJob) {
  // The H100s through the real NVML code path (the fake library: 40 to 90%
  // busy), the A100s fake GPUs of the agent's own (55 to 95% while busy).
  AddAgent({"--nvml-library", FAKE_NVML_LIBRARY}, {{"FAKE_NVML_GPUS", "4"}});
  AddAgent({"--fake-gpus", "4xA100"});
  WaitNodes(2);
  // A known workload: GPUs of both types, a gang, a failure, a retry, a
  // CPU-only job, in two queues.
  const std::vector<int64_t> jobs = {
      Submit("name: h100-pair\nqueue: vision\nresources: {gpus: 2, gpuType: H100}\ncommand: [sleep, '2']\n"),
      Submit("name: a100-gang\nqueue: vision\nreplicas: 2\nresources: {gpus: 1, gpuType: A100}\n"
             "command: [sleep, '2']\n"),
      Submit("name: fails\nqueue: speech\nresources: {gpus: 1, gpuType: H100}\n"
             "retry: {limit: 1, backoff: {initial: 1s, max: 1s}}\ncommand: [sh, -c, 'sleep 2; exit 3']\n"),
      Submit("name: cpu-only\nqueue: speech\ncommand: [sleep, '1']\n"),
  };
  std::map<std::string, Charged> by_queue;
  std::map<int64_t, json> ended;
  for (int64_t id : jobs) {
    ended[id] = WaitEnd(id);
    const Charged c = ChargeOf(ended[id]);
    by_queue[ended[id]["queue"]].gpu_seconds += c.gpu_seconds;
    by_queue[ended[id]["queue"]].cost += c.cost;
  }
  EXPECT_EQ(ended[jobs[2]]["state"], "FAILED");
  EXPECT_EQ(ended[jobs[2]]["attemptHistory"].size(), 2u);  // retried once
  // The runs themselves: each GPU job held its GPUs at least as long as it slept.
  EXPECT_GE(ChargeOf(ended[jobs[0]]).gpu_seconds, 2 * 2.0);
  EXPECT_GE(ChargeOf(ended[jobs[1]]).gpu_seconds, 2 * 2.0);
  EXPECT_GE(ChargeOf(ended[jobs[2]]).gpu_seconds, 2 * 1.0);
  EXPECT_LT(ChargeOf(ended[jobs[0]]).gpu_seconds, 2 * 30.0);

  // The API's report sums exactly those runs.
  const json usage = Get("/v1/usage?by=queue&from=2020-01-01T00:00:00Z");
  ASSERT_EQ(usage["items"].size(), 2u) << usage.dump();
  double total_seconds = 0, total_cost = 0;
  for (const json& line : usage["items"]) {
    const Charged& want = by_queue[line["queue"]];
    EXPECT_NEAR(line["gpuSeconds"].get<double>(), want.gpu_seconds, 1e-6) << line.dump();
    EXPECT_NEAR(line["gpuHours"].get<double>(), want.gpu_seconds / 3600, 1e-9) << line.dump();
    EXPECT_NEAR(line["cost"].get<double>(), want.cost, 1e-9) << line.dump();
    EXPECT_EQ(line["jobs"], 2) << line.dump();
    // The agents measured it.
    ASSERT_TRUE(line["efficiency"].is_number()) << line.dump();
    EXPECT_GE(line["efficiency"].get<double>(), 0.4);
    EXPECT_LE(line["efficiency"].get<double>(), 0.96);
    total_seconds += want.gpu_seconds;
    total_cost += want.cost;
  }
  EXPECT_NEAR(usage["total"]["gpuSeconds"].get<double>(), total_seconds, 1e-6);
  EXPECT_NEAR(usage["total"]["cost"].get<double>(), total_cost, 1e-9);
  EXPECT_EQ(usage["total"]["jobs"], 4);

  // The CLI: JSON is the API's; CSV has a line per queue and user.
  const CommandResult as_json = Cli("usage --since 2020-01-01 -o json");
  ASSERT_EQ(as_json.code, 0) << as_json.out;
  const json cli = json::parse(as_json.out, nullptr, false);
  ASSERT_TRUE(cli.is_object()) << as_json.out;
  EXPECT_NEAR(cli["total"]["cost"].get<double>(), total_cost, 1e-9);
  const CommandResult csv = Cli("usage --since 2020-01-01 --by queue,user -o csv");
  ASSERT_EQ(csv.code, 0) << csv.out;
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')), "QUEUE,USER,JOBS,GPU-HOURS,COST,EFFICIENCY\r") << csv.out;
  EXPECT_NE(csv.out.find("\nspeech,root,2,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("\nvision,root,2,"), std::string::npos) << csv.out;
  const CommandResult table = Cli("usage --since 2020-01-01");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("TOTAL"), std::string::npos) << table.out;

  // A window after everything ended: nothing.
  const json later = Get("/v1/usage?from=2099-01-01T00:00:00Z&to=2099-01-02T00:00:00Z");
  EXPECT_EQ(later["items"].size(), 0u);
  EXPECT_EQ(later["total"]["gpuSeconds"], 0.0);

  // History: each job, its exit code ("3:0" for the failure), GPU-hours and efficiency.
  const CommandResult history = Cli("history -o json");
  ASSERT_EQ(history.code, 0) << history.out;
  const json rows = json::parse(history.out, nullptr, false);
  ASSERT_TRUE(rows.is_array()) << history.out;
  ASSERT_EQ(rows.size(), 4u) << history.out;
  std::map<std::string, json> by_name;
  for (const json& r : rows) by_name[r["name"]] = r;
  EXPECT_EQ(by_name["fails"]["exitCode"], 3);
  EXPECT_EQ(by_name["fails"]["attempts"], 2);
  EXPECT_EQ(by_name["h100-pair"]["exitCode"], 0);
  EXPECT_NEAR(by_name["h100-pair"]["cost"].get<double>(), ChargeOf(ended[jobs[0]]).cost, 1e-9);
  EXPECT_TRUE(by_name["a100-gang"]["efficiency"].is_number());
  EXPECT_TRUE(by_name["h100-pair"]["efficiency"].is_number()) << "NVML's samples";
  EXPECT_EQ(by_name["cpu-only"]["gpuHours"], 0.0);  // it ran, on no GPU
  EXPECT_TRUE(by_name["cpu-only"]["efficiency"].is_null());
  const CommandResult last = Cli("history --limit 1 -o json");
  ASSERT_EQ(last.code, 0) << last.out;
  const json newest = json::parse(last.out, nullptr, false);
  ASSERT_EQ(newest.size(), 1u) << last.out;
  EXPECT_EQ(newest[0]["name"], "cpu-only");  // the most recent job
  const CommandResult failed = Cli("history --state failed");
  ASSERT_EQ(failed.code, 0) << failed.out;
  EXPECT_NE(failed.out.find("3:0"), std::string::npos) << failed.out;
  EXPECT_EQ(failed.out.find("h100-pair"), std::string::npos) << failed.out;

  // Bad input names the field.
  const CommandResult bad = Cli("usage --since yesterday");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--since"), std::string::npos) << bad.out;
  const auto [status, message] = GetError("/v1/usage?by=team");
  EXPECT_EQ(status, 400);
  EXPECT_NE(message.find("queue, user"), std::string::npos) << message;
}

// Three pools: spot nodes and a reserved one priced by `pools`, an
// on-demand node by `prices`.
class PoolUsageTest : public ClusterFixture {
 protected:
  PoolUsageTest()
      : ClusterFixture(
            "rateLimit: {perSecond: 100000, burst: 100000}\n"
            "agents: {defaultGrace: 1s}\n"
            "prices: {H100: 3.60, \"*\": 1.00}\n"
            "pools: {spot: {prices: {H100: 1.20}}, reserved-east: {prices: {\"*\": 2.00}}}\n") {}
};

// The value of the sample `name{labels}` in a /metrics text; -1 when absent.
double SampleOf(const std::string& text, const std::string& name, const std::string& labels) {
  const std::string key = name + "{" + labels + "} ";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
  }
  return -1;
}

TEST_F(PoolUsageTest, EachPoolPricesTheGpuTimeOfItsNodes) {
  AddAgent({"--fake-gpus", "4xH100", "--spot"});
  AddAgent({"--fake-gpus", "4xH100", "--pool", "reserved-east"});
  AddAgent({"--fake-gpus", "4xA100"});
  WaitNodes(3);
  std::map<std::string, std::string> pool_of;
  const json nodes = Get("/v1/nodes");
  for (const json& n : nodes["items"]) pool_of[n["name"]] = n["pool"];
  EXPECT_EQ(pool_of, (std::map<std::string, std::string>{
                         {Name(0), "spot"}, {Name(1), "reserved-east"}, {Name(2), "on-demand"}}));

  // One job in each pool: the reserved pool is a feature jobs may require.
  const int64_t on_spot =
      Submit("name: on-spot\nspot: true\nfeatures: [spot]\nresources: {gpus: 2}\ncommand: [sleep, '2']\n");
  const int64_t reserved =
      Submit("name: reserved\nfeatures: [reserved-east]\nresources: {gpus: 4}\ncommand: [sleep, '2']\n");
  const int64_t plain = Submit("name: plain\nresources: {gpus: 1, gpuType: A100}\ncommand: [sleep, '2']\n");
  const std::map<int64_t, std::pair<std::string, double>> want = {
      {on_spot, {"spot", 1.20}}, {reserved, {"reserved-east", 2.00}}, {plain, {"on-demand", 1.00}}};
  double total_cost = 0;
  for (const auto& [id, pool_price] : want) {
    const json job = WaitEnd(id);
    EXPECT_EQ(job["state"], "COMPLETED") << job.dump();
    ASSERT_TRUE(job["attemptHistory"].is_array() && job["attemptHistory"].size() == 1) << job.dump();
    const json& attempt = job["attemptHistory"][0];
    ASSERT_EQ(attempt["replicas"].size(), 1u) << job.dump();
    EXPECT_EQ(attempt["replicas"][0]["pool"], pool_price.first) << job.dump();
    const double gpu_seconds = ChargeOf(job).gpu_seconds;
    EXPECT_GE(gpu_seconds, 2.0) << job.dump();
    const json usage = Get("/v1/usage?by=job&from=2020-01-01T00:00:00Z&name=" + job["name"].get<std::string>());
    ASSERT_EQ(usage["items"].size(), 1u) << usage.dump();
    EXPECT_NEAR(usage["items"][0]["cost"].get<double>(), gpu_seconds / 3600 * pool_price.second, 1e-9) << usage.dump();
    total_cost += gpu_seconds / 3600 * pool_price.second;
  }
  EXPECT_NEAR(Get("/v1/usage?from=2020-01-01T00:00:00Z")["total"]["cost"].get<double>(), total_cost, 1e-9);
  // By pool: a line each, with that pool's job and cost.
  const json by_pool = Get("/v1/usage?by=pool&from=2020-01-01T00:00:00Z");
  EXPECT_EQ(by_pool["by"], "pool");
  ASSERT_EQ(by_pool["items"].size(), 3u) << by_pool.dump();
  for (const json& line : by_pool["items"]) {
    EXPECT_EQ(line["jobs"], 1) << line.dump();
    EXPECT_FALSE(line.contains("queue")) << line.dump();
    const auto it =
        std::find_if(want.begin(), want.end(), [&](const auto& w) { return w.second.first == line["pool"]; });
    ASSERT_NE(it, want.end()) << line.dump();
    EXPECT_NEAR(line["cost"].get<double>(), line["gpuSeconds"].get<double>() / 3600 * it->second.second, 1e-9)
        << line.dump();
  }
  EXPECT_NEAR(by_pool["total"]["cost"].get<double>(), total_cost, 1e-9);
  const CommandResult csv =
      RunCommand("MUSTER_TOKEN=" + server_.admin_token() + " " + MUSTER_BINARY +
                 " usage --since 2020-01-01 --by pool -o csv --server " + server_.url() + " 2>&1");
  ASSERT_EQ(csv.code, 0) << csv.out;
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')), "POOL,JOBS,GPU-HOURS,COST,EFFICIENCY\r") << csv.out;
  EXPECT_NE(csv.out.find("\nreserved-east,1,"), std::string::npos) << csv.out;

  // The metrics charge each pool's GPU time at its price, as it accrues.
  httplib::Client c(server_.url());
  auto r = c.Get("/metrics", httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}});
  ASSERT_TRUE(r && r->status == 200);
  const std::map<std::string, std::pair<std::string, double>> metric_want = {
      {"spot", {"H100", 1.20}}, {"reserved-east", {"H100", 2.00}}, {"on-demand", {"A100", 1.00}}};
  for (const auto& [pool, type_price] : metric_want) {
    const std::string labels = "pool=\"" + pool + "\",queue=\"default\"";
    const double gpu_seconds =
        SampleOf(r->body, "muster_queue_gpu_seconds_total", "gpu_type=\"" + type_price.first + "\"," + labels);
    EXPECT_GT(gpu_seconds, 0) << pool << "\n" << r->body;
    EXPECT_NEAR(SampleOf(r->body, "muster_queue_cost_total", labels), gpu_seconds / 3600 * type_price.second, 1e-9)
        << pool;
  }
}

}  // namespace
}  // namespace muster::testing
