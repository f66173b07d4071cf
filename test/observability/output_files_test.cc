// A job's own output files (the spec's stdout and stderr, Slurm's -o and
// -e) on a real cluster: written per replica with Slurm's symbols, as the
// job's user, beside the node's log; and a job whose node is gone says
// where its output is.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "../agent/cluster_fixture.h"
#include "../wait_for.h"

namespace muster::testing {
namespace {

using nlohmann::json;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

class OutputFilesTest : public ClusterFixture {
 protected:
  OutputFilesTest()
      : ClusterFixture(
            "rateLimit: {perSecond: 100000, burst: 100000}\n"
            "agents: {defaultGrace: 1s, unreachableAfter: 1s, lease: 2s, lostAfter: 60s}\n") {}

  // Submits as `token`'s user; the answer.
  json SubmitAs(const std::string& token, const std::string& yaml) {
    auto r = cli_->Post("/v1/jobs", httplib::Headers{{"Authorization", "Bearer " + token}}, yaml, "application/yaml");
    EXPECT_TRUE(r);
    return r ? json::parse(r->body, nullptr, false) : json();
  }
  // GET as the admin: status and error message.
  std::pair<int, std::string> Status(const std::string& path) {
    auto r = cli_->Get(path, httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}});
    EXPECT_TRUE(r);
    if (!r) return {0, ""};
    const json e = json::parse(r->body, nullptr, false);
    return {r->status, e.is_object() && e.contains("error") ? e["error"].value("message", "") : r->body};
  }
};

TEST_F(OutputFilesTest, EachReplicaWritesItsFilesAndTheNodesLogKeepsBoth) {
  AddAgent();
  AddAgent();
  WaitNodes(2);
  const std::string dir = Tmp("out");
  std::filesystem::create_directories(dir + "/work");
  const int64_t id = Submit("name: two\nreplicas: 2\nworkingDir: " + dir +
                            "/work\n"
                            "stdout: " +
                            dir +
                            "/%x-%j.%t.out\nstderr: rel-%j-%t.err\n"
                            "command: [sh, -c, 'echo out of $RANK; echo err of $RANK >&2; echo more']\n");
  const json done = WaitEnd(id);
  ASSERT_EQ(done["state"], "COMPLETED") << done.dump();
  for (int r = 0; r < 2; ++r) {
    const std::string rank = std::to_string(r), job = std::to_string(id);
    EXPECT_EQ(Read(dir + "/two-" + job + "." + rank + ".out"), "out of " + rank + "\nmore\n");
    // Relative to the working directory.
    EXPECT_EQ(Read(dir + "/work/rel-" + job + "-" + rank + ".err"), "err of " + rank + "\n");
    // The node's log has both, as before.
    const std::string log = Logs(id, r);
    EXPECT_NE(log.find("out of " + rank), std::string::npos) << log;
    EXPECT_NE(log.find("err of " + rank), std::string::npos) << log;
  }
  // A second attempt would append: the file is opened for appending.
  EXPECT_EQ(done["stdout"], dir + "/%x-%j.%t.out");
}

TEST_F(OutputFilesTest, FilesAreOpenedAsTheJobsUserWhoCannotWriteWhereTheyMayNot) {
  AddAgent();
  WaitNodes(1);
  const std::string nobody = server_.UserToken("nobody");
  const std::string dir = Tmp("shared");
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 01777);  // a shared scratch directory
  const json ok =
      SubmitAs(nobody, "name: mine\nworkingDir: /\nstdout: " + dir + "/%u-%j.out\ncommand: [echo, hello]\n");
  ASSERT_TRUE(ok.contains("id")) << ok.dump();
  const int64_t id = ok["id"];
  ASSERT_EQ(WaitEnd(id)["state"], "COMPLETED");
  const std::string file = dir + "/nobody-" + std::to_string(id) + ".out";
  EXPECT_EQ(Read(file), "hello\n");
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "owned by the job's user, not the agent's";

  // Where root alone may write: refused as the user, and the job says why.
  const std::string closed = Tmp("closed");
  std::filesystem::create_directories(closed);
  ::chmod(closed.c_str(), 0700);
  const json refused = SubmitAs(
      nobody, "name: nope\nworkingDir: /\nretry: {limit: 0}\nstdout: " + closed + "/x.out\ncommand: [echo, never]\n");
  ASSERT_TRUE(refused.contains("id")) << refused.dump();
  const int64_t bad = refused["id"];
  EXPECT_EQ(WaitEnd(bad)["state"], "FAILED");
  EXPECT_FALSE(std::filesystem::exists(closed + "/x.out"));
  const std::string log = Logs(bad);
  EXPECT_NE(log.find("cannot open the job's stdout file " + closed + "/x.out as its user: Permission denied"),
            std::string::npos)
      << log;
}

TEST_F(OutputFilesTest, AJobOnALostNodeSaysWhereItsOutputIs) {
  AddAgent();
  WaitNodes(1);
  const std::string dir = Tmp("kept");
  std::filesystem::create_directories(dir);
  const int64_t with = Submit("name: kept\nstdout: " + dir + "/%j.out\ncommand: [sh, -c, 'echo started; sleep 300']\n");
  const int64_t without = Submit("name: local\ncommand: [sh, -c, 'echo started; sleep 300']\n");
  WaitState(with, "RUNNING");
  WaitState(without, "RUNNING");
  EXPECT_EQ(WaitFile(dir + "/" + std::to_string(with) + ".out"), "started\n");
  const std::string node = agents_[0]->name();
  agents_[0]->Kill();
  // The agent is gone: the server cannot fetch the log, and says where it is.
  auto [code, message] = Status("/v1/jobs/" + std::to_string(with) + "/logs");
  EXPECT_EQ(code, 503);
  EXPECT_NE(message.find("the job also wrote its output to " + dir + "/" + std::to_string(with) + ".out"),
            std::string::npos)
      << message;
  std::tie(code, message) = Status("/v1/jobs/" + std::to_string(without) + "/logs");
  EXPECT_EQ(code, 503);
  EXPECT_NE(message.find("its output was kept on node " + node + " only"), std::string::npos) << message;
  // Declared lost (once its lease has run out), it says so.
  WaitFor(
      [&] {
        auto r =
            cli_->Post("/v1/nodes/" + node + "/declare-lost",
                       httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}}, "", "application/json");
        return r && r->status == 200;
      },
      std::chrono::seconds(10));
  WaitState(with, "PENDING");  // requeued, its attempt recorded
  std::tie(code, message) = Status("/v1/jobs/" + std::to_string(with) + "/logs?attempt=1");
  EXPECT_EQ(code, 503);
  EXPECT_NE(message.find(dir + "/" + std::to_string(with) + ".out"), std::string::npos) << message;
}

TEST_F(OutputFilesTest, AnUnknownSymbolIsRefusedNamingTheField) {
  auto r = cli_->Post("/v1/jobs", httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}},
                      "stdout: /x/%4j.out\ncommand: ['true']\n", "application/yaml");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  const json e = json::parse(r->body, nullptr, false);
  EXPECT_EQ(e["error"]["field"], "spec.stdout") << r->body;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("%j (job id)"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace muster::testing
