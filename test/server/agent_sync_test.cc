// The agent protocol against a real server, spoken by hand: the answer to a
// report that frees GPUs carries the work bound to them, and only once that
// bind is durable.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../wait_for.h"
#include "server_process.h"

namespace muster::testing {
namespace {

using nlohmann::json;

// Credentials: the admin's (the test's MUSTER_TOKEN, written by
// ServerProcess) for the user API, and each node's for its syncs, made
// through the server the first time.
httplib::Headers Admin() {
  const char* t = std::getenv("MUSTER_TOKEN");
  return {{"Authorization", std::string("Bearer ") + (t ? t : "")}};
}
std::string g_url;  // the test's server, once started
httplib::Headers Node(const json& body) {
  static std::map<std::string, std::string> tokens;
  const std::string node = body.value("node", "n1");
  std::string& t = tokens[g_url + " " + node];
  if (t.empty()) {
    const char* admin = std::getenv("MUSTER_TOKEN");
    t = TokenFromServer(g_url, admin ? admin : "", "--node", node);
  }
  return {{"Authorization", "Bearer " + t}};
}

// A one-GPU node's sync; `tasks` is its report.
json SyncBody(int64_t report_seq, int64_t version, const json& tasks) {
  return {{"node", "n1"},
          {"agentVersion", "test"},
          {"address", "127.0.0.1"},
          {"gpuType", "H100"},
          {"gpus", json::array({{{"index", 0}, {"uuid", "GPU-test-0"}, {"name", "NVIDIA H100"}, {"healthy", true}}})},
          {"cpuMilli", 8000},
          {"memoryBytes", int64_t{64} << 30},
          {"tasks", tasks},
          {"reportSeq", report_seq},
          {"version", version},
          {"reportsVersion", version},
          {"waitMs", 0}};
}

json Sync(httplib::Client& cli, const json& body) {
  auto r = cli.Post("/v1/agent/sync", Node(body), body.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  return r && r->status == 200 ? json::parse(r->body) : json::object();
}

int64_t Submit(httplib::Client& cli) {
  auto r =
      cli.Post("/v1/jobs", Admin(), R"({"name":"one","resources":{"gpus":1},"command":["true"]})", "application/json");
  EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
  return r && r->status == 201 ? json::parse(r->body)["id"].get<int64_t>() : 0;
}

// The agents' syncs the server holds open now (its muster_agent_syncs_waiting
// gauge): what a test waits for before it acts on waiting syncs.
int64_t SyncsWaiting(const std::string& url) {
  httplib::Client cli(url);
  auto r = cli.Get("/metrics", Admin());
  if (!r || r->status != 200) return -1;
  const std::string name = "\nmuster_agent_syncs_waiting ";
  const size_t at = r->body.find(name);
  return at == std::string::npos ? -1 : std::stoll(r->body.substr(at + name.size()));
}

// A report flooding GPU health events stores a bounded number of them one by
// one and counts the rest; the cluster's events come in pages.
TEST(AgentSync, AFloodOfHealthEventsIsStoredBoundedAndListedInPages) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  g_url = server.url();
  httplib::Client cli(server.url());
  json body = SyncBody(1, 0, json::array());
  body["healthEvents"] = json::array();
  for (int i = 0; i < 40; ++i) {
    body["healthEvents"].push_back(
        {{"uuid", "GPU-test-0"}, {"xid", 13}, {"kind", "xid"}, {"fatal", false}, {"timeMs", i}});
  }
  EXPECT_EQ(Sync(cli, body)["healthEventsRecorded"], 40);
  auto r = cli.Get("/v1/events?limit=10", Admin());
  ASSERT_TRUE(r && r->status == 200);
  const json first = json::parse(r->body);
  EXPECT_EQ(first["items"].size(), 10u);
  r = cli.Get("/v1/events?limit=10&continue=" + first["continue"].get<std::string>(), Admin());
  ASSERT_TRUE(r && r->status == 200);
  const json rest = json::parse(r->body);
  ASSERT_EQ(rest["items"].size(), 7u) << rest.dump();  // 16 one by one, and one for the other 24
  EXPECT_EQ(rest["continue"], "");
  EXPECT_EQ(rest["items"][6]["reason"], "Many");
  EXPECT_NE(rest["items"][6]["message"].get<std::string>().find("24 more GPU health events"), std::string::npos)
      << rest.dump();
}

TEST(AgentSync, TheReportThatFreesAGpuIsAnsweredWithTheWorkBoundToItOnceDurable) {
  ServerProcess server;
  ASSERT_TRUE(server.Start());
  g_url = server.url();
  httplib::Client cli(server.url());
  Sync(cli, SyncBody(1, 0, json::array()));  // registers the node
  const int64_t first = Submit(cli);
  const int64_t second = Submit(cli);

  // The first job is bound to the only GPU; the agent hears of it.
  json answer;
  WaitFor(
      [&] {
        answer = Sync(cli, SyncBody(1, 0, json::array()));
        return answer.contains("tasks") && !answer["tasks"].empty();
      },
      std::chrono::seconds(5));
  ASSERT_EQ(answer["tasks"].size(), 1u) << answer.dump();
  EXPECT_EQ(answer["tasks"][0]["job"], first);
  const int64_t version = answer["version"];
  json task = {{"job", first}, {"attempt", 1}, {"replica", 0}, {"running", true}, {"startMs", 1}};
  Sync(cli, SyncBody(2, version, json::array({task})));

  // Its end: the same answer names the second job, bound to the GPU it freed.
  task["running"] = false;
  task["exitCode"] = 0;
  task["endMs"] = 2;
  answer = Sync(cli, SyncBody(3, version, json::array({task})));
  ASSERT_EQ(answer["recorded"].size(), 1u) << answer.dump();
  EXPECT_EQ(answer["recorded"][0]["job"], first);
  ASSERT_EQ(answer["tasks"].size(), 1u) << answer.dump();
  EXPECT_EQ(answer["tasks"][0]["job"], second);
  EXPECT_GT(answer["version"].get<int64_t>(), version);

  // It was durable before the agent heard of it: a server killed now still
  // has the second job bound after a restart, and the first one completed.
  server.Kill();
  ASSERT_TRUE(server.Start());
  g_url = server.url();
  httplib::Client again(server.url());
  auto r = again.Get("/v1/jobs/" + std::to_string(second), Admin());
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(json::parse(r->body)["state"], "RUNNING") << r->body;
  r = again.Get("/v1/jobs/" + std::to_string(first), Admin());
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(json::parse(r->body)["state"], "COMPLETED") << r->body;
}

// SIGTERM ends a server promptly even while agents hold long polls open
// (here one of 60 s): the waits end at once, and idle keep-alive
// connections do not hold the stop either. The fixture SIGKILLs a server
// that has not exited 30 s after the signal, which Stop() reports as 137.
TEST(AgentSync, AServerStopsWithoutSittingOutTheAgentsLongPolls) {
  ServerProcess server("agents: {syncWait: 60s, lease: 180s, unreachableAfter: 200s, lostAfter: 400s}\n");
  ASSERT_TRUE(server.Start());
  g_url = server.url();
  httplib::Client cli(server.url());
  const json registered = Sync(cli, SyncBody(1, 0, json::array()));
  json waiting = SyncBody(1, registered["version"].get<int64_t>(), json::array());
  waiting["epoch"] = registered["epoch"];  // as an agent does: versions count within an epoch
  waiting["waitMs"] = 60'000;
  std::thread poll([&] {
    httplib::Client long_poll(server.url());
    long_poll.set_read_timeout(90, 0);
    (void)long_poll.Post("/v1/agent/sync", Node(waiting), waiting.dump(), "application/json");
  });
  ASSERT_TRUE(WaitFor([&] { return SyncsWaiting(server.url()) == 1; })) << "the poll never waited";
  EXPECT_EQ(server.Stop(), 0);
  poll.join();
}

// A sync waiting for news holds no worker thread: with 2 workers and 6
// agents waiting, a list (a blocking request) is answered while they wait,
// and a bind answers the waiting sync of its node (only that one).
TEST(AgentSync, WaitingSyncsHoldNoWorkerThread) {
  ServerProcess server("threads: 2\nagents: {syncWait: 60s, lease: 180s, unreachableAfter: 200s, lostAfter: 400s}\n");
  ASSERT_TRUE(server.Start());
  g_url = server.url();
  httplib::Client cli(server.url());
  std::vector<std::thread> polls;
  std::atomic<int> answered{0};
  std::atomic<int> got_work{0};
  for (int i = 1; i <= 6; ++i) {
    json body = SyncBody(1, 0, json::array());
    body["node"] = "n" + std::to_string(i);
    body["gpus"][0]["uuid"] = "GPU-test-" + std::to_string(i);
    const json registered = Sync(cli, body);
    body["version"] = registered["version"];
    body["reportsVersion"] = registered["version"];
    body["epoch"] = registered["epoch"];  // as an agent does: versions count within an epoch
    body["waitMs"] = 60'000;
    polls.emplace_back([&, body] {
      httplib::Client long_poll(server.url());
      long_poll.set_read_timeout(90, 0);
      auto r = long_poll.Post("/v1/agent/sync", Node(body), body.dump(), "application/json");
      ++answered;
      if (r && r->status == 200 && !json::parse(r->body)["tasks"].empty()) ++got_work;
    });
  }
  EXPECT_TRUE(WaitFor([&] { return SyncsWaiting(server.url()) == 6; })) << SyncsWaiting(server.url());
  auto list = cli.Get("/v1/jobs", Admin());
  ASSERT_TRUE(list);
  EXPECT_EQ(list->status, 200);
  EXPECT_EQ(answered.load(), 0) << "a waiting sync was answered without news";
  // A one-GPU job: the waiting sync of the node it is bound to is answered with it.
  ASSERT_GT(Submit(cli), 0);
  WaitFor([&] { return answered.load() != 0; }, std::chrono::seconds(5));
  // The other five still wait: the bind woke only its node's sync.
  EXPECT_TRUE(WaitFor([&] { return SyncsWaiting(server.url()) == 5; })) << SyncsWaiting(server.url());
  EXPECT_EQ(answered.load(), 1);
  EXPECT_EQ(got_work.load(), 1);
  EXPECT_EQ(server.Stop(), 0);  // answers the rest at once
  for (std::thread& t : polls) t.join();
  EXPECT_EQ(answered.load(), 6);
}

// Log fetches from an agent that never answers (the server waits 10 s for
// it) hold a worker each, but at most a quarter of them: one more is
// refused at once (503, Retry-After), and a job's view, an action and the
// queues are answered meanwhile. (With every worker held by such fetches,
// lists and views once waited 10 s.)
TEST(ApiAsync, LogFetchesHoldAtMostAQuarterOfTheWorkers) {
  // An agent log port that takes connections and never answers.
  const int silent = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(silent, 8), 0);
  socklen_t len = sizeof a;
  ::getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);

  ServerProcess server("threads: 8\n");
  ASSERT_TRUE(server.Start());
  g_url = server.url();
  httplib::Client cli(server.url());
  json body = SyncBody(1, 0, json::array());
  body["logPort"] = ntohs(a.sin_port);
  Sync(cli, body);  // registers the node, its logs on the silent port
  const int64_t running = Submit(cli);
  const int64_t waiting = Submit(cli);  // the only GPU is taken: it stays pending
  const std::string job = "/v1/jobs/" + std::to_string(running);
  WaitFor(
      [&] {
        auto r = cli.Get(job, Admin());
        return r && r->status == 200 && json::parse(r->body)["state"] == "RUNNING";
      },
      std::chrono::seconds(5));

  std::atomic<int> logs_done{0};
  std::vector<std::thread> logs;
  logs.reserve(2);
  for (int i = 0; i < 2; ++i) {
    logs.emplace_back([&] {
      httplib::Client c(server.url());
      c.set_read_timeout(30, 0);
      (void)c.Get(job + "/logs", Admin());
      ++logs_done;
    });
  }
  // Both fetches reach the silent agent (accepted here, never answered):
  // two workers now wait on it.
  std::vector<int> held;
  for (int i = 0; i < 2; ++i) {
    const int fd = ::accept(silent, nullptr, nullptr);
    EXPECT_GE(fd, 0);
    held.push_back(fd);
  }
  EXPECT_EQ(logs_done.load(), 0);
  auto third = cli.Get(job + "/logs", Admin());
  EXPECT_TRUE(third && third->status == 503 && third->get_header_value("Retry-After") == "1")
      << (third ? third->body : "no answer");
  // (No ASSERT until the fetches are joined.)
  auto view = cli.Get(job, Admin());
  EXPECT_TRUE(view && view->status == 200);
  auto hold = cli.Post("/v1/jobs/" + std::to_string(waiting) + "/hold", Admin(), "", "application/json");
  EXPECT_TRUE(hold && hold->status == 200 && json::parse(hold->body)["state"] == "HELD") << (hold ? hold->body : "");
  auto queues = cli.Get("/v1/queues", Admin());
  EXPECT_TRUE(queues && queues->status == 200);
  EXPECT_EQ(logs_done.load(), 0) << "the answers waited for a held worker";
  for (std::thread& t : logs) t.join();
  for (int fd : held) ::close(fd);
  ::close(silent);
}

}  // namespace
}  // namespace muster::testing
