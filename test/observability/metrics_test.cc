// /metrics on a real cluster: what it says checked by Prometheus's own
// `promtool check metrics`, its numbers against the cluster's, and a real
// Prometheus (Debian's) scraping it with a bearer token and answering a
// query with the cluster's GPU count.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "../agent/cluster_fixture.h"
#include "../free_port.h"
#include "../wait_for.h"

namespace muster::testing {
namespace {

using nlohmann::json;

// The value of the sample `name{labels}` (labels as written, "" for none).
double Sample(const std::string& text, const std::string& name, const std::string& labels = "") {
  const std::string key = labels.empty() ? name + " " : name + "{" + labels + "} ";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
  }
  return -1;
}

std::string AccessLogPath() { return "/tmp/muster-access-" + std::to_string(::getpid()) + ".log"; }

const char* MetricsConfig() {
  static const std::string config =
      "rateLimit: {perSecond: 100000, burst: 100000}\n"
      "agents: {defaultGrace: 1s}\n"
      "prices: {H100: 3.60, \"*\": 1.00}\n"
      "queues: [{name: default, guarantee: 8, limit: 12}]\n"
      "accessLog: " +
      AccessLogPath() + "\n";
  return config.c_str();
}

class MetricsTest : public ClusterFixture {
 protected:
  MetricsTest() : ClusterFixture(MetricsConfig()) {}
  ~MetricsTest() override { std::filesystem::remove(AccessLogPath()); }
  std::string Metrics() {
    httplib::Client c(server_.url());
    auto r = c.Get("/metrics", httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}});
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    if (r) {
      EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    }
    return r ? r->body : "";
  }
};

TEST_F(MetricsTest, PromtoolFindsThemCleanAndTheyMatchTheCluster) {
  AddAgent({"--fake-gpus", "8xH100"});
  AddAgent({"--fake-gpus", "4xH100"});
  WaitNodes(2);
  const int64_t running = Submit("name: holds\nresources: {gpus: 3}\ncommand: [sleep, '300']\n");
  WaitState(running, "RUNNING");
  const int64_t done = Submit("name: quick\ncommand: ['true']\n");
  WaitEnd(done);
  // Waits on the running job (one no node could hold is refused at submit).
  Submit("name: waits\ndependencies: \"afterok:" + std::to_string(running) + "\"\ncommand: ['true']\n");

  const std::string text = Metrics();
  const std::string file = Tmp("metrics.txt");
  std::ofstream(file) << text;
  const CommandResult check = RunCommand("promtool check metrics < " + file);
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_EQ(check.out, "") << "promtool's lint";

  EXPECT_EQ(Sample(text, "muster_cluster_gpus"), 12);
  EXPECT_EQ(Sample(text, "muster_gpus", "state=\"allocated\""), 3);
  EXPECT_EQ(Sample(text, "muster_gpus", "state=\"idle\""), 9);
  EXPECT_EQ(Sample(text, "muster_nodes", "condition=\"Ready\""), 2);
  EXPECT_EQ(Sample(text, "muster_jobs", "queue=\"default\",state=\"RUNNING\""), 1);
  EXPECT_EQ(Sample(text, "muster_jobs", "queue=\"default\",state=\"PENDING\""), 1);
  EXPECT_EQ(Sample(text, "muster_jobs_ended_total", "queue=\"default\",state=\"COMPLETED\""), 1);
  EXPECT_EQ(Sample(text, "muster_queue_gpus", "queue=\"default\""), 3);
  EXPECT_EQ(Sample(text, "muster_leader"), 1);
  EXPECT_EQ(Sample(text, "muster_submit_duration_seconds_count"), 3);
  EXPECT_EQ(Sample(text, "muster_job_wait_seconds_count", "queue=\"default\""), 2);
  EXPECT_GT(Sample(text, "muster_scheduler_cycle_duration_seconds_count"), 0);
  EXPECT_GT(Sample(text, "muster_agent_sync_duration_seconds_count"), 0);
  EXPECT_GT(Sample(text, "muster_store_commit_duration_seconds_count"), 0);
  EXPECT_EQ(Sample(text, "muster_queue_guarantee_gpus", "queue=\"default\""), 8);
  EXPECT_EQ(Sample(text, "muster_queue_limit_gpus", "queue=\"default\""), 12);
  EXPECT_GE(Sample(text, "muster_queue_oldest_pending_seconds", "queue=\"default\""), 0);  // -1: absent
  const double cycle_age =
      static_cast<double>(std::time(nullptr)) - Sample(text, "muster_scheduler_last_cycle_timestamp_seconds");
  EXPECT_GE(cycle_age, -1);
  EXPECT_LT(cycle_age, 10);
  // Cost: the running job's GPU time at the H100 price, charged each cycle
  // (at least every second).
  std::string later;
  double gpu_seconds = -1;
  WaitFor(
      [&] {
        later = Metrics();
        gpu_seconds =
            Sample(later, "muster_queue_gpu_seconds_total", "gpu_type=\"H100\",pool=\"on-demand\",queue=\"default\"");
        return gpu_seconds > 0;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(50));
  EXPECT_GT(gpu_seconds, 0) << later;
  EXPECT_NEAR(Sample(later, "muster_queue_cost_total", "pool=\"on-demand\",queue=\"default\""),
              gpu_seconds / 3600 * 3.60, 1e-6);

  // Without a credential: nothing.
  httplib::Client anonymous(server_.url());
  auto r = anonymous.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
}

// A job that waits for most of a node: the backfill plan reserves that
// node's free GPUs for it, and the metrics and the node list say so.
TEST_F(MetricsTest, GpusReservedForABlockedGangAreCountedApart) {
  AddAgent({"--fake-gpus", "8xH100"});
  WaitNodes(1);
  const int64_t holds = Submit("name: holds\nresources: {gpus: 5}\ntimeLimit: 1h\ncommand: [sleep, '300']\n");
  WaitState(holds, "RUNNING");
  // (7: the queue's limit is 12)
  const int64_t gang = Submit("name: most-of-the-node\nresources: {gpus: 7}\ncommand: [sleep, '300']\n");
  std::string text;
  WaitFor(
      [&] {
        text = Metrics();
        return Sample(text, "muster_gpus", "state=\"reserved\"") == 3;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(50));
  EXPECT_EQ(Sample(text, "muster_gpus", "state=\"allocated\""), 5);
  EXPECT_EQ(Sample(text, "muster_gpus", "state=\"reserved\""), 3) << text;
  EXPECT_EQ(Sample(text, "muster_gpus", "state=\"idle\""), 0);
  const json nodes = Get("/v1/nodes");
  ASSERT_EQ(nodes["items"].size(), 1u);
  EXPECT_EQ(nodes["items"][0]["reservedGpus"], 3) << nodes.dump();
  EXPECT_EQ(nodes["items"][0]["reservedFor"], gang);
  EXPECT_EQ(nodes["items"][0]["gpuUse"].size(), 5u);
  EXPECT_EQ(nodes["items"][0]["gpuUse"][0]["job"], holds);
}

TEST_F(MetricsTest, AnAgentSaysWhichJobUsesEachGpuAndHowMuch) {
  AgentProcess& agent = AddAgent({"--fake-gpus", "4xH100", "--metrics-listen", "127.0.0.1:0"});
  WaitNodes(1);
  const int64_t job = Submit("name: two\nresources: {gpus: 2}\ncommand: [sleep, '300']\n");
  WaitState(job, "RUNNING");
  // The agent says where it serves them.
  int port = 0;
  WaitFor(
      [&] {
        const std::string log = agent.log();
        const size_t at = log.find("metrics on 127.0.0.1:");
        if (at != std::string::npos) port = std::atoi(log.c_str() + at + 21);
        return port != 0;
      },
      std::chrono::seconds(5), std::chrono::milliseconds(50));
  ASSERT_GT(port, 0) << agent.log();
  std::string text;
  WaitFor(
      [&] {  // until the agent's reports show the task running
        httplib::Client c("127.0.0.1", port);
        auto r = c.Get("/metrics");
        EXPECT_TRUE(r && r->status == 200);
        text = r ? r->body : "";
        return Sample(text, "muster_agent_tasks_running") == 1;
      },
      std::chrono::seconds(5), std::chrono::milliseconds(50));
  const std::string file = Tmp("agent-metrics.txt");
  std::ofstream(file) << text;
  const CommandResult check = RunCommand("promtool check metrics < " + file);
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_EQ(check.out, "");
  EXPECT_EQ(Sample(text, "muster_agent_tasks_running"), 1) << text;
  // The job's two GPUs carry its id, busy; the other two are idle.
  int busy = 0, idle = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("muster_agent_gpu_utilization_ratio{", 0) != 0) continue;
    const double v = std::stod(line.substr(line.rfind(' ') + 1));
    if (line.find("job=\"" + std::to_string(job) + "\"") != std::string::npos) {
      ++busy;
      EXPECT_GE(v, 0.55) << line;
      EXPECT_LE(v, 0.95) << line;
    } else {
      ++idle;
      EXPECT_EQ(v, 0) << line;
    }
  }
  EXPECT_EQ(busy, 2) << text;
  EXPECT_EQ(idle, 2) << text;
  EXPECT_GT(Sample(text, "muster_agent_last_sync_timestamp_seconds"), 0);
}

TEST_F(MetricsTest, AnAgentRefusesAMetricsAddressThatIsNotHostAndPort) {
  const std::string token = Tmp("node.token");
  ASSERT_TRUE(WriteTokenFile(token, server_.UserToken("someone")));  // any well-formed token: refused before use
  for (const std::string bad : {"127.0.0.1:abc", "127.0.0.1", ":9477", "127.0.0.1:70000", "127.0.0.1:"}) {
    const CommandResult r = RunCommand("timeout 20 " + std::string(MUSTER_BINARY) + " agent --server " + server_.url() +
                                       " --fake-gpus 1xH100 --no-cgroups --state-dir " + Tmp("bad-agent") +
                                       " --token-file " + token + " --metrics-listen '" + bad + "'");
    EXPECT_EQ(r.code, 1) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--metrics-listen: must be HOST:PORT"), std::string::npos) << bad << ": " << r.out;
  }
}

TEST_F(MetricsTest, RequestsGoToTheAccessLogAndLogLinesHaveTimeAndLevel) {
  const std::string bob = server_.UserToken("bob");
  httplib::Client c(server_.url());
  ASSERT_TRUE(c.Get("/v1/jobs?limit=3", httplib::Headers{{"Authorization", "Bearer " + bob}}));
  ASSERT_TRUE(c.Get("/v1/jobs"));  // no credential
  ASSERT_TRUE(c.Get("/v1/nope", httplib::Headers{{"Authorization", "Bearer " + bob}}));
  ASSERT_EQ(server_.Stop(), 0);  // written out at exit (else within a second)
  std::ifstream in(AccessLogPath());
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  const std::regex line(
      R"re(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z 127\.0\.0\.1 (\S+) "(\S+) (\S+)" (\d{3}) \d+ \d+\.\d{6}$)re");
  std::vector<std::string> seen;
  std::istringstream lines(log);
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    seen.push_back(m[1].str() + " " + m[2].str() + " " + m[3].str() + " " + m[4].str());
  }
  auto has = [&](const std::string& s) { return std::find(seen.begin(), seen.end(), s) != seen.end(); };
  EXPECT_TRUE(has("bob GET /v1/jobs?limit=3 200")) << log;
  EXPECT_TRUE(has("- GET /v1/jobs 401")) << log;
  EXPECT_TRUE(has("bob GET /v1/nope 404")) << log;
  // And the server's own log: a time, a level, the component; no request
  // at the default level.
  const std::string server_log = server_.log();
  EXPECT_TRUE(std::regex_search(
      server_log, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info  muster server: listening on )")))
      << server_log;
  EXPECT_EQ(server_log.find("/v1/jobs?limit=3"), std::string::npos) << server_log;
}

TEST_F(MetricsTest, ARealPrometheusScrapesItWithAToken) {
  AddAgent({"--fake-gpus", "8xH100"});
  AddAgent({"--fake-gpus", "8xA100"});
  WaitNodes(2);
  // Prometheus reads its credential from a file, as a site would set it up.
  const std::string token_file = Tmp("prometheus.token");
  ASSERT_TRUE(WriteTokenFile(token_file, server_.UserToken("prometheus")));
  const int port = FreeLoopbackPort();
  const std::string dir = Tmp("prometheus");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/prometheus.yml") << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                                         << "scrape_configs:\n"
                                         << "  - job_name: muster\n"
                                         << "    authorization: {credentials_file: " << token_file << "}\n"
                                         << "    static_configs: [{targets: ['127.0.0.1:" << server_.port() << "']}]\n";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string log = dir + "/prometheus.log";
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    (void)f;
    ::dup2(::fileno(stdout), 2);
    const std::string config = "--config.file=" + dir + "/prometheus.yml";
    const std::string data = "--storage.tsdb.path=" + dir + "/data";
    const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port);
    ::execl("/usr/bin/prometheus", "prometheus", config.c_str(), data.c_str(), listen.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  json answer;
  std::string value;
  WaitFor(
      [&] {  // Prometheus starts, then scrapes
        httplib::Client p("127.0.0.1", port);
        auto r = p.Get("/api/v1/query?query=muster_cluster_gpus");
        if (!r || r->status != 200) return false;
        answer = json::parse(r->body, nullptr, false);
        if (answer.is_object() && !answer["data"]["result"].empty()) {
          value = answer["data"]["result"][0]["value"][1].get<std::string>();
        }
        return !value.empty();
      },
      std::chrono::seconds(30), std::chrono::milliseconds(100));
  // And by GPU state, summed: the same count.
  std::string summed;
  if (!value.empty()) {
    httplib::Client p("127.0.0.1", port);
    auto r = p.Get("/api/v1/query?query=sum(muster_gpus)");
    if (r && r->status == 200) {
      const json s = json::parse(r->body, nullptr, false);
      if (s.is_object() && !s["data"]["result"].empty()) summed = s["data"]["result"][0]["value"][1].get<std::string>();
    }
  }
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(value, "16") << answer.dump() << "\n" << std::ifstream(dir + "/prometheus.log").rdbuf();
  EXPECT_EQ(summed, "16");
}

}  // namespace
}  // namespace muster::testing
