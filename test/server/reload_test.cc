// SIGHUP against a real server process: a queue's limit changed in the
// configuration file takes effect at the next cycle, nothing running is
// disturbed, a bad file is refused and the configuration in force stays.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../wait_for.h"
#include "server_process.h"

namespace muster::testing {
namespace {

using nlohmann::json;

const char* kConfig = R"(
nodeGroups:
  - {count: 1, gpus: 8, gpuType: H100}
queues:
  - {name: research, limit: 4}
prices: {H100: 2.0}
)";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replaces `from` with `to` in the server's configuration file.
void Edit(const ServerProcess& server, const std::string& from, const std::string& to) {
  const std::string path = server.dir() + "/config.yaml";
  std::string text = ReadAll(path);
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, from.size(), to);
  std::ofstream(path) << text;
}

class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start()) << server_.log();
    cli_ = std::make_unique<httplib::Client>(server_.url());
    cli_->set_read_timeout(10, 0);
  }
  json Get(const std::string& path) {
    auto r = cli_->Get(path, {{"Authorization", "Bearer " + server_.admin_token()}});
    EXPECT_TRUE(r) << path;
    return r ? json::parse(r->body) : json();
  }
  int64_t Submit(const std::string& name) {
    auto r = cli_->Post(
        "/v1/jobs", {{"Authorization", "Bearer " + server_.admin_token()}},
        R"({"name": ")" + name + R"(", "queue": "research", "command": ["sleep", "600"], "resources": {"gpus": 4}})",
        "application/json");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r ? json::parse(r->body)["id"].get<int64_t>() : 0;
  }
  json Queue(const std::string& name) {
    const json all = Get("/v1/queues");  // held: the loop reads into it
    for (const json& q : all["items"]) {
      if (q["name"] == name) return q;
    }
    return json();
  }

  ServerProcess server_{kConfig};
  std::unique_ptr<httplib::Client> cli_;
};

TEST_F(ReloadTest, AQueueLimitRaisedTakesEffectAndNothingRunningIsDisturbed) {
  const int64_t first = Submit("first"), second = Submit("second");
  const std::string job1 = "/v1/jobs/" + std::to_string(first), job2 = "/v1/jobs/" + std::to_string(second);
  ASSERT_TRUE(WaitFor([&] { return Get(job1)["state"] == "RUNNING"; }));
  // Within its limit of 4 GPUs, the second waits, though the node has room.
  ASSERT_TRUE(WaitFor([&] { return !Get(job2).value("reason", "").empty(); }));
  EXPECT_EQ(Get(job2)["state"], "PENDING");
  const json before = Get(job1);

  Edit(server_, "{name: research, limit: 4}", "{name: research, limit: 8}");
  Edit(server_, "prices: {H100: 2.0}", "prices: {H100: 2.0}\nmaxBodyBytes: 2097152");  // not reloadable: reported only
  server_.Hangup();
  EXPECT_TRUE(WaitFor([&] { return Get(job2)["state"] == "RUNNING"; })) << server_.log();
  const json after = Get(job1);
  EXPECT_EQ(after["state"], "RUNNING");
  EXPECT_EQ(after["attempts"], 1);
  EXPECT_EQ(after["startTime"], before["startTime"]);
  EXPECT_EQ(Queue("research")["limit"], json({{"*", 8}})) << Get("/v1/queues").dump();
  const std::string log = server_.log();
  EXPECT_NE(log.find("reloaded " + server_.dir() +
                     "/config.yaml: queues.research: {name: research, limit: 4} -> "
                     "{name: research, limit: 8}"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("maxBodyBytes changed; it takes a restart and is not applied"), std::string::npos) << log;

  // A bad file: refused whole, naming the field; the limit stays 8.
  Edit(server_, "{name: research, limit: 8}", "{name: research, limit: lots}");
  Edit(server_, "prices: {H100: 2.0}", "prices: {H100: 5.0}");
  server_.Hangup();
  ASSERT_TRUE(WaitFor([&] { return server_.log().find("refused") != std::string::npos; })) << server_.log();
  EXPECT_NE(server_.log().find("server.queues[0].limit"), std::string::npos) << server_.log();
  EXPECT_EQ(Queue("research")["limit"], json({{"*", 8}}));
  EXPECT_EQ(Get(job1)["state"], "RUNNING");
  EXPECT_EQ(Get(job2)["state"], "RUNNING");
}

TEST_F(ReloadTest, ClassesMayChangeWeightAndGrowButNotBeReordered) {
  std::ofstream(server_.dir() + "/config.yaml", std::ios::app)
      << "priorityClasses: [{name: normal, weight: 10000}, {name: urgent, weight: 50000}]\n";
  server_.Hangup();
  ASSERT_TRUE(WaitFor([&] { return server_.log().find("refused") != std::string::npos; })) << server_.log();
  EXPECT_NE(server_.log().find("class \"low\" must stay"), std::string::npos) << server_.log();
  // Refused: "urgent" is no class.
  auto r = cli_->Post("/v1/jobs", {{"Authorization", "Bearer " + server_.admin_token()}},
                      R"({"command": ["true"], "priority": "urgent", "hold": true})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;

  Edit(server_, "priorityClasses: [{name: normal, weight: 10000}, {name: urgent, weight: 50000}]",
       "priorityClasses: [{name: low, weight: 0, preemptible: true}, {name: normal, weight: 10000},\n"
       "                  {name: high, weight: 20000, mayPreempt: true},\n"
       "                  {name: interactive, weight: 30000, mayPreempt: true, interactive: true},\n"
       "                  {name: urgent, weight: 50000, mayPreempt: true}]");
  server_.Hangup();
  ASSERT_TRUE(WaitFor([&] { return server_.log().find("reloaded") != std::string::npos; })) << server_.log();
  r = cli_->Post("/v1/jobs", {{"Authorization", "Bearer " + server_.admin_token()}},
                 R"({"command": ["true"], "priority": "urgent", "hold": true})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body << server_.log();
}

}  // namespace
}  // namespace muster::testing
