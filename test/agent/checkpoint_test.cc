// End to end: checkpoints committed through the Python module and the CLI,
// resumed from after a failure or a requeue, verified before launch,
// retention, fencing of stale attempts, and hung jobs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../wait_for.h"
#include "cluster_fixture.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class CheckpointTest : public ClusterTest {
 protected:
  // A job running test/agent/ckpt_job.py with `env` (YAML flow pairs).
  int64_t SubmitTrainer(const std::string& name, const std::string& env, const std::string& extra = "") {
    return Submit("name: " + name + "\nretry: {limit: 2, backoff: {initial: 1s, factor: 1, max: 1s}}\n" +
                  "checkpoint: {dir: " + Tmp("ckpt") + ", keep: 2, gracePeriod: 10s}\n" + extra +
                  "env: {MUSTER_PYTHON: " + fs::absolute("python").string() + ", LOG: " + Tmp(name + ".log") +
                  (env.empty() ? "" : ", " + env) + "}\n" + "command: [/usr/bin/python3, " +
                  fs::absolute("test/agent/ckpt_job.py").string() + "]\n");
  }
  std::string Lines(const std::string& name) {
    std::ifstream in(Tmp(name + ".log"));
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }
  json Checkpoints(int64_t id) { return Get("/v1/jobs/" + std::to_string(id) + "/checkpoints")["items"]; }
};

TEST_F(CheckpointTest, ACrashedJobResumesFromItsLastCheckpointAndRetentionKeepsTheNewest) {
  AddAgent();
  WaitNodes(1);
  const int64_t id = SubmitTrainer("resume", "CRASH_AT: 25");
  const json j = WaitEnd(id, 90);
  ASSERT_EQ(j["state"], "COMPLETED") << j.dump() << Lines("resume");
  EXPECT_EQ(Lines("resume"), "attempt 1 start 0\nattempt 1 crash 25\nattempt 2 start 20\nattempt 2 end 40\n");
  ASSERT_EQ(j["attemptHistory"].size(), 2u);
  EXPECT_FALSE(j["attemptHistory"][0].contains("resumedFrom")) << j.dump();  // nothing to resume from
  EXPECT_EQ(j["attemptHistory"][1]["resumedFrom"]["step"], 20) << j.dump();
  EXPECT_EQ(j["attemptHistory"][1]["lastStep"], 40) << j.dump();
  // Four commits (steps 10, 20 by attempt 1; 30, 40 by attempt 2); keep 2.
  const json c = Checkpoints(id);
  ASSERT_EQ(c.size(), 4u) << c.dump();
  const char* states[] = {"REMOVED", "REMOVED", "COMMITTED", "COMMITTED"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c[i]["seq"], i + 1);
    EXPECT_EQ(c[i]["step"], 10 * (i + 1));
    EXPECT_EQ(c[i]["attempt"], i < 2 ? 1 : 2);
    EXPECT_EQ(c[i]["state"], states[i]) << c.dump();
    EXPECT_EQ(c[i]["files"], 2);
  }
  // Retention deleted the dropped ones from storage; the kept ones verify.
  WaitFor(
      [&] {
        return !(fs::exists(c[0]["location"].get<std::string>()) || fs::exists(c[1]["location"].get<std::string>()));
      },
      std::chrono::seconds(2));
  EXPECT_FALSE(fs::exists(c[0]["location"].get<std::string>()));
  EXPECT_FALSE(fs::exists(c[1]["location"].get<std::string>()));
  EXPECT_TRUE(fs::exists(c[3]["location"].get<std::string>() + "/MANIFEST.json"));
  EXPECT_TRUE(HasEvent(Events(id), "Resumed", "attempt 2 resumes from checkpoint 2 (step 20)")) << Events(id).dump();
  EXPECT_NE(Logs(id).find("muster: resuming from checkpoint 2 (step 20)"), std::string::npos) << Logs(id);
}

TEST_F(CheckpointTest, ACorruptNewestCheckpointIsSkippedForThePreviousOne) {
  AddAgent();
  WaitNodes(1);
  const int64_t id = SubmitTrainer("corrupt", "CRASH_AT: 25, CORRUPT: '1'");
  const json j = WaitEnd(id, 90);
  ASSERT_EQ(j["state"], "COMPLETED") << j.dump() << Lines("corrupt");
  EXPECT_EQ(Lines("corrupt"), "attempt 1 start 0\nattempt 1 crash 25\nattempt 2 start 10\nattempt 2 end 40\n");
  EXPECT_EQ(j["attemptHistory"][1]["resumedFrom"]["step"], 10) << j.dump();
  const json c = Checkpoints(id);
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[1]["state"], "CORRUPT") << c.dump();
  EXPECT_NE(c[1]["note"].get<std::string>().find("shards/weights.bin does not match"), std::string::npos) << c.dump();
  const json events = Events(id);
  EXPECT_TRUE(HasEvent(events, "CheckpointCorrupt", "checkpoint 2 (step 20)")) << events.dump();
  EXPECT_TRUE(HasEvent(events, "Resumed", "resumes from checkpoint 1 (step 10)")) << events.dump();
}

TEST_F(CheckpointTest, AJobAskedToStopCheckpointsAndTheNextAttemptResumesThere) {
  AddAgent();
  WaitNodes(1);
  const int64_t id = SubmitTrainer("stop", "WAIT_STOP: '1', STEPS: 50, EVERY: 1000");
  WaitState(id, "RUNNING");
  ASSERT_TRUE(WaitFor([&] { return Lines("stop").find("attempt 1 waiting") != std::string::npos; })) << Lines("stop");
  const json r = Post("/v1/jobs/" + std::to_string(id) + "/requeue", "", "application/json");
  ASSERT_EQ(r.value("state", ""), "COMPLETING") << r.dump();
  const json j = WaitEnd(id, 90);
  ASSERT_EQ(j["state"], "COMPLETED") << j.dump() << Lines("stop");
  // Attempt 1 saw the request (its signal, or the progress answer), saved
  // its step and exited; attempt 2 started from exactly there.
  std::istringstream lines(Lines("stop"));
  std::string a, n, word;
  int64_t stopped = -1, started = -1;
  while (lines >> a >> n >> word) {
    int64_t v = 0;
    lines >> v;
    if (n == "1" && word == "stopped") stopped = v;
    if (n == "2" && word == "start") started = v;
  }
  EXPECT_GT(stopped, 0) << Lines("stop");
  EXPECT_EQ(started, stopped) << Lines("stop");
  EXPECT_EQ(j["attemptHistory"][0]["result"], "REQUEUED") << j.dump();
  EXPECT_EQ(j["attemptHistory"][1]["resumedFrom"]["step"], stopped) << j.dump();
}

TEST_F(CheckpointTest, TheCliCommitsAndStaleAttemptsAndForeignPathsAreRefused) {
  AddAgent();
  WaitNodes(1);
  const std::string dir = Tmp("ckpt") + "/cli/step-7";
  const int64_t id =
      Submit("name: cli\ncheckpoint: {dir: " + Tmp("ckpt") + "}\n" + "command: [/bin/sh, -c, 'mkdir -p " + dir +
             " && echo w > " + dir + "/w && " + MUSTER_BINARY + " checkpoint commit " + dir + " --step 7 && " +
             MUSTER_BINARY + " progress --step 7 --metric loss=0.5 --message warm && exec sleep 300']\n");
  WaitState(id, "RUNNING");
  json c;
  WaitFor([&] { return !(c = Checkpoints(id)).empty(); }, std::chrono::seconds(10));
  ASSERT_EQ(c.size(), 1u) << Logs(id);
  EXPECT_EQ(c[0]["step"], 7);
  EXPECT_EQ(c[0]["location"], fs::path(dir).lexically_normal().string());
  EXPECT_EQ(c[0]["state"], "COMMITTED");
  json j;
  WaitFor([&] { return (j = Get("/v1/jobs/" + std::to_string(id))).contains("progress"); }, std::chrono::seconds(10));
  EXPECT_EQ(j["progress"]["step"], 7) << j.dump();
  EXPECT_EQ(j["progress"]["metrics"]["loss"], 0.5) << j.dump();
  EXPECT_EQ(j["progress"]["message"], "warm") << j.dump();

  const std::string sha = c[0]["manifestSha256"];
  auto commit = [&](int attempt, const std::string& location) {
    json body = {{"attempt", attempt},    {"step", 8},  {"location", location},
                 {"manifestSha256", sha}, {"files", 1}, {"bytes", 2}};
    return cli_->Post("/v1/jobs/" + std::to_string(id) + "/checkpoints",
                      httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}}, body.dump(),
                      "application/json");
  };
  auto stale = commit(2, Tmp("ckpt") + "/other");  // attempt 2 does not run
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409) << stale->body;
  EXPECT_NE(stale->body.find("not the current one"), std::string::npos) << stale->body;
  auto outside = commit(1, "/etc");
  ASSERT_TRUE(outside);
  EXPECT_EQ(outside->status, 400) << outside->body;
  EXPECT_NE(outside->body.find("\"field\":\"location\""), std::string::npos) << outside->body;
  auto stranger = cli_->Post("/v1/jobs/" + std::to_string(id) + "/progress",
                             httplib::Headers{{"Authorization", "Bearer " + server_.UserToken("mallory")}},
                             R"({"attempt":1,"step":9})", "application/json");
  ASSERT_TRUE(stranger);
  EXPECT_EQ(stranger->status, 403) << stranger->body;
  auto typo = cli_->Post("/v1/jobs/" + std::to_string(id) + "/progress",
                         httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}},
                         R"({"attempt":1,"stpe":9})", "application/json");
  ASSERT_TRUE(typo);
  EXPECT_EQ(typo->status, 400) << typo->body;
  EXPECT_NE(typo->body.find("did you mean \\\"step\\\""), std::string::npos) << typo->body;
  // Endpoints (what the job serves: a shell's relay) must be host:port.
  for (const char* bad :
       {R"({"attempt":1,"endpoints":{"shell":"nohost"}})", R"({"attempt":1,"endpoints":{"shell":"h:99999"}})",
        R"({"attempt":1,"endpoints":{"shell":"a b:22"}})", R"({"attempt":1,"endpoints":{"shell":22}})"}) {
    auto r =
        cli_->Post("/v1/jobs/" + std::to_string(id) + "/progress",
                   httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}}, bad, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad << " " << r->body;
    EXPECT_NE(r->body.find("\"field\":\"endpoints.shell\""), std::string::npos) << r->body;
  }
  auto good = cli_->Post("/v1/jobs/" + std::to_string(id) + "/progress",
                         httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}},
                         R"({"attempt":1,"endpoints":{"shell":"[::1]:2222","notebook":"node-7.example:8888"}})",
                         "application/json");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id))["progress"]["endpoints"]["notebook"], "node-7.example:8888");
  EXPECT_EQ(Checkpoints(id).size(), 1u);
  CancelAndWait(id);
}

TEST_F(CheckpointTest, AJobThatStopsReportingProgressFailsAsHung) {
  AddAgent();
  WaitNodes(1);
  const int64_t id = Submit(std::string("name: hung\nstallTimeout: 2s\nretry: {limit: 0}\n") +
                            "command: [/bin/sh, -c, '" + MUSTER_BINARY + " progress --step 1 && exec sleep 300']\n");
  const json j = WaitEnd(id, 60);
  EXPECT_EQ(j["state"], "FAILED") << j.dump();
  EXPECT_NE(j["reason"].get<std::string>().find("made no progress"), std::string::npos) << j.dump();
  EXPECT_NE(j["reason"].get<std::string>().find("treated as hung"), std::string::npos) << j.dump();
  EXPECT_TRUE(HasEvent(Events(id), "Stalled", "last step 1")) << Events(id).dump();
}

// A stop that arrives while a task is still starting (here: its shim is
// verifying a 64 MiB checkpoint) reaches the command through its signal; it
// is never lost until the SIGKILL at the end of the grace period.
TEST_F(CheckpointTest, AStopDuringLaunchIsDeliveredNotLost) {
  AddAgent();
  WaitNodes(1);
  const std::string dir = Tmp("ckpt") + "/big/step-1";
  const int64_t id = Submit(
      "name: early\nretry: {limit: 1, backoff: {initial: 1s, factor: 1, max: 1s}}\n"
      "checkpoint: {dir: " +
      Tmp("ckpt") + ", gracePeriod: 30s}\n" + "command: [/bin/sh, -c, 'if [ $MUSTER_ATTEMPT = 1 ]; then mkdir -p " +
      dir + " && head -c 67108864 /dev/zero > " + dir + "/big && " + MUSTER_BINARY + " checkpoint commit " + dir +
      " --step 1; exit 1; fi; exec sleep 300']\n");
  WaitFor(
      [&] {
        const json j = Get("/v1/jobs/" + std::to_string(id));
        return j.value("attempts", 0) == 2 && j.value("state", "") == "RUNNING";
      },
      std::chrono::seconds(6));
  const json j = CancelAndWait(id);
  EXPECT_EQ(j["state"], "CANCELLED") << j.dump();
  ASSERT_EQ(j["attemptHistory"].size(), 2u) << j.dump();
  const std::string result = j["attemptHistory"][1]["replicas"][0]["result"];
  EXPECT_EQ(result.find("signal 9"), std::string::npos) << "the stop signal was lost: " << j.dump();
}

// Few checkpoint stops a second, so staggering is visible in seconds.
class DrainTest : public ClusterFixture {
 protected:
  DrainTest()
      : ClusterFixture(R"(
rateLimit: {perSecond: 100000, burst: 100000}
checkpoints: {signalsPerSecond: 4}
)") {}
};

TEST_F(DrainTest, DrainingANodeRequeuesItsJobsWithStaggeredCheckpointSignals) {
  AddAgent();
  WaitNodes(1);
  const std::string signals = Tmp("signals");
  std::vector<int64_t> ids;
  ids.reserve(8);
  for (int i = 0; i < 8; ++i) {
    // Each job notes when its checkpoint signal arrives, then exits 0.
    ids.push_back(Submit("name: d" + std::to_string(i) + "\nresources: {gpus: 1}\n" +
                         "checkpoint: {dir: /tmp, gracePeriod: 30s}\n" +
                         "command: [/bin/sh, -c, 'trap \"date +%s%N >> " + signals +
                         "; exit 0\" USR1; echo up; while :; do sleep 0.05; done']\n"));
  }
  for (int64_t id : ids) WaitState(id, "RUNNING");
  for (int64_t id : ids) WaitFor([&] { return Logs(id).find("up") != std::string::npos; }, std::chrono::seconds(10));
  auto denied =
      cli_->Post("/v1/nodes/" + Name(0) + "/drain",
                 httplib::Headers{{"Authorization", "Bearer " + server_.UserToken("mallory")}}, "", "application/json");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403);
  const json n = Post("/v1/nodes/" + Name(0) + "/drain", "", "application/json");
  EXPECT_FALSE(n.value("schedulable", true)) << n.dump();
  for (int64_t id : ids) {
    const json j = WaitState(id, "PENDING", 30);
    EXPECT_EQ(j["requeues"], 0) << j.dump();  // a requeue, not a retry
    EXPECT_EQ(j["attemptHistory"][0]["result"], "REQUEUED") << j.dump();
    EXPECT_NE(j["attemptHistory"][0]["reason"].get<std::string>().find("drained"), std::string::npos) << j.dump();
  }
  // Eight signals at four a second: spread over at least 1.75 s, most
  // about a quarter second after the previous one (each is seen when the
  // job's shell gets to it, which a loaded machine delays now and then).
  std::ifstream in(signals);
  std::vector<int64_t> t;
  for (int64_t v = 0; in >> v;) t.push_back(v / 1'000'000);
  ASSERT_EQ(t.size(), 8u);
  std::sort(t.begin(), t.end());
  EXPECT_GE(t.back() - t.front(), 1600) << "signals were not staggered";
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < t.size(); ++i) gaps.push_back(t[i] - t[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  EXPECT_GE(gaps[gaps.size() / 2], 200) << "median gap";
  // The node takes work again once uncordoned.
  Post("/v1/nodes/" + Name(0) + "/uncordon", "", "application/json");
  for (int64_t id : ids) WaitState(id, "RUNNING");
  for (int64_t id : ids) Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  for (int64_t id : ids) WaitEnd(id);
}

}  // namespace
}  // namespace muster::testing
