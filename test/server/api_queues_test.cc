// Queues made and changed through the API, against a real server process:
// admins only and audited, in force at the next cycle, kept in the store
// across kill -9, and the configuration file's queues first (a reload that
// brings the file a queue the API made puts the file's in force).
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "../run_binary.h"
#include "../wait_for.h"
#include "server_process.h"

namespace muster::testing {
namespace {

using nlohmann::json;

class ApiQueuesTest : public ::testing::Test {
 protected:
  static constexpr const char* kFile = R"(
nodeGroups:
  - {count: 1, gpus: 8, gpuType: H100}
queues:
  - {name: research, limit: 8}
)";
  void SetUp() override { ASSERT_TRUE(Connect()) << server_.log(); }
  bool Connect() {
    if (!server_.Start()) return false;
    cli_ = std::make_unique<httplib::Client>(server_.url());
    cli_->set_read_timeout(10, 0);
    return true;
  }
  httplib::Headers As(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }
  httplib::Result Send(const std::string& method, const std::string& path, const std::string& body = "",
                       const std::string& token = "") {
    const httplib::Headers h = As(token.empty() ? server_.admin_token() : token);
    if (method == "POST") return cli_->Post(path, h, body, "application/json");
    if (method == "PUT") return cli_->Put(path, h, body, "application/json");
    if (method == "DELETE") return cli_->Delete(path, h);
    return cli_->Get(path, h);
  }
  json Listed(const std::string& name) {
    auto r = Send("GET", "/v1/queues");
    if (!r) return json();
    const json all = json::parse(r->body);  // held: the loop reads into it
    for (const json& q : all["items"]) {
      if (q["name"] == name) return q;
    }
    return json();
  }
  std::string StateOf(int64_t job) {
    auto r = Send("GET", "/v1/jobs/" + std::to_string(job));
    return r ? json::parse(r->body).value("state", "") : "";
  }
  int64_t SubmitTo(const std::string& queue) {
    auto r = Send("POST", "/v1/jobs",
                  R"({"queue": ")" + queue + R"(", "command": ["sleep", "600"], "resources": {"gpus": 4}})");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r ? json::parse(r->body)["id"].get<int64_t>() : 0;
  }
  CommandResult Cli(const std::string& args) {
    return RunCommand("MUSTER_SERVER=" + server_.url() + " MUSTER_TOKEN=" + server_.admin_token() + " " +
                      MUSTER_BINARY + " " + args);
  }

  ServerProcess server_{kFile};
  std::unique_ptr<httplib::Client> cli_;
};

TEST_F(ApiQueuesTest, AnAdminsQueueTakesEffectAtTheNextCycleAndSurvivesKill9) {
  // Only admins, and a refusal is audited.
  auto r = Send("POST", "/v1/queues", R"({"name": "vision", "limit": 4})", server_.UserToken("ann"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  r = Send("GET", "/v1/audit");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("queue.create"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("PERMISSION_DENIED"), std::string::npos) << r->body;

  r = Send("POST", "/v1/queues", R"({"name": "vision", "limit": 4, "share": 2})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(json::parse(r->body)["source"], "api");
  EXPECT_EQ(Listed("vision")["limit"], json({{"*", 4}}));
  EXPECT_EQ(Listed("vision")["share"], 2);
  EXPECT_EQ(Listed("research")["source"], "file");

  // Within its limit of 4 GPUs the second job waits, though the node has room.
  const int64_t first = SubmitTo("vision"), second = SubmitTo("vision");
  ASSERT_TRUE(WaitFor([&] { return StateOf(first) == "RUNNING"; })) << server_.log();
  ASSERT_TRUE(WaitFor([&] {
    auto job = Send("GET", "/v1/jobs/" + std::to_string(second));
    return job && !json::parse(job->body).value("reason", "").empty();
  }));
  EXPECT_EQ(StateOf(second), "PENDING");
  r = Send("PUT", "/v1/queues/vision", R"({"limit": 8, "share": 2})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(WaitFor([&] { return StateOf(second) == "RUNNING"; })) << server_.log();

  // Kept in the store: a kill -9 and a restart keep it.
  server_.Kill();
  ASSERT_TRUE(Connect()) << server_.log();
  EXPECT_EQ(Listed("vision")["limit"], json({{"*", 8}})) << Send("GET", "/v1/queues")->body;
  EXPECT_EQ(Listed("vision")["source"], "api");
  EXPECT_EQ(Listed("vision")["changedBy"], "root");
  r = Send("GET", "/v1/audit");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("queue.put"), std::string::npos) << r->body;

  // What may not be: a second create, a bad field, the file's queue, a
  // missing parent.
  r = Send("POST", "/v1/queues", R"({"name": "vision"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 409) << r->body;
  r = Send("PUT", "/v1/queues/vision", R"({"limit": "lots"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["field"], "limit") << r->body;
  for (const std::string method : {"PUT", "DELETE"}) {
    r = Send(method, "/v1/queues/research", R"({"limit": 2})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 409) << method << " " << r->body;
    EXPECT_NE(r->body.find(server_.dir() + "/config.yaml"), std::string::npos) << r->body;
  }
  r = Send("PUT", "/v1/queues/sub", R"({"parent": "nope"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["field"], "parent") << r->body;
  EXPECT_EQ(StateOf(first), "RUNNING") << "nothing running disturbed";

  // Deleted: its jobs stay, with no quota.
  r = Send("DELETE", "/v1/queues/vision");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_FALSE(Listed("vision").contains("limit"));
  EXPECT_EQ(StateOf(second), "RUNNING");
  r = Send("DELETE", "/v1/queues/vision");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
}

TEST_F(ApiQueuesTest, AReloadThatBringsTheFileTheSameQueuePutsTheFilesInForce) {
  auto r = Send("POST", "/v1/queues", R"({"name": "vision", "limit": 4})");
  ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
  const std::string path = server_.dir() + "/config.yaml";
  const std::string before = [&] {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  std::ofstream(path, std::ios::app) << "  - {name: vision, limit: 2}\n";
  server_.Hangup();
  ASSERT_TRUE(WaitFor([&] { return Listed("vision")["source"] == "file"; })) << server_.log();
  EXPECT_EQ(Listed("vision")["limit"], json({{"*", 2}}));
  EXPECT_NE(server_.log().find("queue vision is defined in the configuration file and through the API"),
            std::string::npos)
      << server_.log();
  r = Send("PUT", "/v1/queues/vision", R"({"limit": 6})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 409) << r->body;
  // The file drops it: the API's definition, kept all along, is in force again.
  std::ofstream(path) << before;
  server_.Hangup();
  ASSERT_TRUE(WaitFor([&] { return Listed("vision")["source"] == "api"; })) << server_.log();
  EXPECT_EQ(Listed("vision")["limit"], json({{"*", 4}}));
}

TEST_F(ApiQueuesTest, TheQueueCommandsCreateChangeAndDelete) {
  CommandResult r = Cli("queue create vision --limit H100=8 --guarantee 2 --share 3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "queue vision guarantee={\"*\":2} limit={\"H100\":8} share=3\n");
  r = Cli("queue create sub --parent vision --limit 1");
  EXPECT_EQ(r.code, 0) << r.out;
  // Only what is given changes.
  r = Cli("queue set vision --limit 16 --guarantee none");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "queue vision limit={\"*\":16} share=3\n");
  r = Cli("get queues");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("SOURCE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("api"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("file"), std::string::npos) << r.out;
  r = Cli("queue set research --limit 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("configuration file"), std::string::npos) << r.out;
  r = Cli("queue create bad --limit H100=x");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--limit: must be a GPU count"), std::string::npos) << r.out;
  r = Cli("queue delete vision");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("queue \"sub\" is nested under \"vision\""), std::string::npos) << r.out;
  EXPECT_EQ(Cli("queue delete sub").code, 0);
  r = Cli("queue delete vision");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "queue vision deleted\n");
}

}  // namespace
}  // namespace muster::testing
