// End to end: an elastic PyTorch job (examples/ddp_digits.py under
// torchrun's elastic launcher, gloo) starts with one replica on the one
// free node, grows to two when the other node frees, gives its newest
// replica back when a high-class job needs that node (it is not preempted
// whole: one attempt throughout), and ends with the accuracy of a
// fixed-size run.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "../wait_for.h"
#include "cluster_fixture.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ElasticTest : public ClusterFixture {
 protected:
  ElasticTest()
      : ClusterFixture(R"(
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s}
scheduler: {preemption: {minRunTime: 1s}}
)") {}

  // "test accuracy A" in `log`, or -1.
  static double Accuracy(const std::string& log) {
    static const std::regex re("test accuracy ([0-9.]+)");
    std::smatch m;
    return std::regex_search(log, m, re) ? std::stod(m[1].str()) : -1;
  }
  int64_t Step(int64_t id) {
    const json j = Get("/v1/jobs/" + std::to_string(id));
    return j.contains("progress") ? j["progress"].value("step", int64_t{0}) : 0;
  }
  // Waits for the job's replica 0 to print `text`; returns its log.
  std::string WaitLog(int64_t id, const std::string& text, int seconds) {
    std::string log;
    if (WaitFor([&] { return (log = Logs(id, 0)).find(text) != std::string::npos; }, std::chrono::seconds(seconds),
                std::chrono::milliseconds(100))) {
      return log;
    }
    ADD_FAILURE() << "replica 0 never printed \"" << text << "\": " << Get("/v1/jobs/" + std::to_string(id)).dump()
                  << "\n"
                  << log;
    return log;
  }
};

TEST_F(ElasticTest, TheDigitsJobGrowsShrinksAndEndsWithTheAccuracyOfAFixedRun) {
  if (std::system("/usr/bin/python3 -c 'import torch, sklearn' >/dev/null 2>&1") != 0 ||
      !fs::exists("/usr/bin/torchrun")) {
    GTEST_SKIP() << "needs python3-torch (with /usr/bin/torchrun) and python3-sklearn";
  }
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string script = fs::absolute("examples/ddp_digits.py").string();

  // The reference: a fixed gang of two, the native way.
  const int64_t ref = Submit(
      "name: fixed\nreplicas: 2\nresources: {gpus: 1}\nretry: {limit: 0}\nenv: {EPOCHS: '30'}\n"
      "command: [/usr/bin/python3, " +
      script + "]\n");
  const json r = WaitEnd(ref, 300);
  ASSERT_EQ(r["state"], "COMPLETED") << r.dump() << Logs(ref);
  const double expected = Accuracy(Logs(ref));
  ASSERT_GT(expected, 0.9) << Logs(ref);

  // One node busy: the elastic job starts with one replica.
  const int64_t blocker = Submit("name: blocker\nresources: {gpus: 1}\ncommand: [sleep, '600']\n");
  WaitState(blocker, "RUNNING");
  const int64_t id = Submit(
      "name: elastic\nreplicas: {min: 1, max: 2}\nresources: {gpus: 1}\nretry: {limit: 0}\n"
      "checkpoint: {dir: " +
      Tmp("ckpt") +
      ", signal: SIGTERM, gracePeriod: 30s}\n"
      // Debian 12's torchrun (1.13 under Python 3.11) fails on its own
      // default output settings; these work (worker output on the console).
      "env: {EPOCHS: '30', CKPT_EVERY: '3', EPOCH_SLEEP: '1', PET_REDIRECTS: '1', PET_TEE: '1', PYTHONUNBUFFERED: "
      "'1'}\n"
      "command: [/usr/bin/torchrun, " +
      script + "]\n");
  json j = WaitState(id, "RUNNING", 60);
  ASSERT_EQ(j["allocations"].size(), 1u) << j.dump();
  WaitFor([&] { return Step(id) >= 3; }, std::chrono::seconds(60), std::chrono::milliseconds(100));
  ASSERT_GE(Step(id), 3) << Get("/v1/jobs/" + std::to_string(id)).dump() << Logs(id, 0);

  // The other node frees: it grows to two, and torchrun re-forms the group.
  CancelAndWait(blocker);
  WaitLog(id, "/2: resumed at epoch", 120);
  j = Get("/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(j["attempts"], 1) << j.dump();
  size_t replicas = 0;
  for (const json& a : j["allocations"]) replicas += a.value("replicas", 0);
  EXPECT_EQ(replicas, 2u) << j.dump();

  // A high-class job needs a node: the newest replica is given back after
  // a checkpoint, and torchrun re-forms the group with one (once its
  // rendezvous has given up on the replica that left: about 20 s).
  const int64_t step_before = Step(id);
  const int64_t high = Submit("name: urgent\npriority: high\nresources: {gpus: 1}\ncommand: [sleep, '600']\n");
  WaitState(high, "RUNNING", 60);
  WaitLog(id, "/1: resumed at epoch", 120);
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id))["allocations"].size(), 1u);
  // It ends: the job grows back to two.
  CancelAndWait(high);
  const json events = Events(id);
  EXPECT_TRUE(HasEvent(events, "Grown", "grew to 2 replicas")) << events.dump();
  EXPECT_TRUE(HasEvent(events, "Shrinking",
                       "for job " + std::to_string(high) +
                           " (class high): giving back 1 replica, "
                           "keeping 1"))
      << events.dump();
  EXPECT_TRUE(HasEvent(events, "Shrunk", "runs on 1 replica")) << events.dump();

  const json end = WaitEnd(id, 300);
  ASSERT_EQ(end["state"], "COMPLETED") << end.dump() << Logs(id, 0);
  EXPECT_EQ(end["attempts"], 1) << "never preempted whole: " << end.dump();
  const std::string log = Logs(id, 0);
  // Replica 0 trained at each size in turn: one, two, one, two.
  const size_t grown = log.find("/2: resumed at epoch"), shrunk = log.find("/1: resumed at epoch", grown);
  ASSERT_NE(shrunk, std::string::npos) << log;
  EXPECT_NE(log.find("/2: resumed at epoch", shrunk), std::string::npos) << log;
  const double got = Accuracy(log);
  EXPECT_GE(got, expected - 0.03) << log;
  std::printf("elastic run: test accuracy %.4f; fixed run of two: %.4f\n", got, expected);
  EXPECT_LT(step_before, 30) << "it was still training when it shrank";
}

// The numbers of a resized job's replicas survive a kill -9 of the server:
// after growing, shrinking and growing again it runs replicas 0 and 2
// (replica 1 was given back), and the restarted server takes both back as
// they are, neither started again, and gives back the right one later.
TEST_F(ElasticTest, AResizedJobKeepsItsReplicasThroughAServerRestart) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("pids");
  fs::create_directories(dir);
  auto pid = [&](int replica) {
    std::ifstream in(dir + "/r" + std::to_string(replica));
    int p = 0;
    in >> p;
    return p;
  };
  const int64_t blocker = Submit("name: blocker\nresources: {gpus: 1}\ncommand: [sleep, '600']\n");
  WaitState(blocker, "RUNNING");
  const int64_t id = Submit(
      "name: elastic\nreplicas: {min: 1, max: 2}\nresources: {gpus: 1}\nretry: {limit: 0}\n"
      "command: [/bin/sh, -c, 'echo $$ > " +
      dir + "/r$MUSTER_REPLICA_INDEX; exec sleep 600']\n");
  ASSERT_FALSE(WaitFile(dir + "/r0").empty());
  CancelAndWait(blocker);
  ASSERT_FALSE(WaitFile(dir + "/r1").empty()) << "it grows once the blocker ends";
  const int64_t high = Submit("name: urgent\npriority: high\nresources: {gpus: 1}\ncommand: [sleep, '600']\n");
  WaitState(high, "RUNNING", 60);
  EXPECT_NE(::kill(pid(1), 0), 0) << "replica 1 was given back";
  CancelAndWait(high);
  ASSERT_FALSE(WaitFile(dir + "/r2").empty()) << "it grows again, as replica 2";
  const int r0 = pid(0), r2 = pid(2);
  ASSERT_GT(r0, 0);
  ASSERT_GT(r2, 0);

  server_.Kill();
  const int64_t restarted_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  ASSERT_TRUE(server_.Start()) << server_.log();
  cli_ = std::make_unique<httplib::Client>(server_.url());
  cli_->set_read_timeout(30, 0);
  // Both agents have synced with the new server (and reported their tasks).
  ASSERT_TRUE(WaitFor([&] {
    int synced = 0;
    const json nodes = Get("/v1/nodes");
    for (const json& n : nodes["items"]) synced += n.contains("lastSeen") && Millis(n["lastSeen"]) > restarted_ms;
    return synced == 2;
  })) << Get("/v1/nodes").dump();
  json j = Get("/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(j["state"], "RUNNING") << j.dump();
  EXPECT_EQ(j["attempts"], 1) << j.dump();
  EXPECT_EQ(j["allocations"].size(), 2u) << j.dump();
  EXPECT_EQ(::kill(r0, 0), 0) << "replica 0 runs on";
  EXPECT_EQ(::kill(r2, 0), 0) << "replica 2 runs on";
  EXPECT_FALSE(fs::exists(dir + "/r3")) << "nothing started again";
  EXPECT_EQ(pid(0), r0);
  EXPECT_EQ(pid(2), r2);

  // A high-class job again: the newest, replica 2, is given back.
  const int64_t again = Submit("name: urgent2\npriority: high\nresources: {gpus: 1}\ncommand: [sleep, '600']\n");
  WaitState(again, "RUNNING", 60);
  EXPECT_NE(::kill(r2, 0), 0);
  EXPECT_EQ(::kill(r0, 0), 0);
  j = Get("/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(j["attempts"], 1) << j.dump();
  CancelAndWait(again);
  const json end = CancelAndWait(id);
  // Accounting: the replicas added or given back are charged for their own
  // spans, also those from before the restart (RFC 3339 times, which
  // compare as text).
  ASSERT_EQ(end["attemptHistory"].size(), 1u) << end.dump();
  const json& record = end["attemptHistory"][0];
  ASSERT_GE(record["replicas"].size(), 3u) << record.dump();  // it may have grown again at the end
  const json& given = record["replicas"][1];
  const json& added = record["replicas"][2];
  EXPECT_FALSE(record["replicas"][0].contains("startTime")) << "replica 0 held its GPU throughout: " << record.dump();
  EXPECT_EQ(given.value("gpus", 0), 1) << record.dump();
  ASSERT_TRUE(given.contains("startTime") && added.contains("startTime")) << record.dump();
  EXPECT_GT(given["startTime"].get<std::string>(), record["startTime"].get<std::string>())
      << "added when the blocker ended";
  EXPECT_LE(given["endTime"].get<std::string>(), added["startTime"].get<std::string>())
      << "given back before replica 2 was added";
  EXPECT_LT(added["endTime"].get<std::string>(), record["endTime"].get<std::string>())
      << "given back before the cancel";
}

}  // namespace
}  // namespace muster::testing
