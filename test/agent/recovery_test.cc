// End to end: the PyTorch DDP job of the local cluster (examples/ddp_digits.py)
// survives two interruptions, a node killed outright and a preemption by a
// higher-class job (checkpoint signal, grace period, back to the queue),
// and ends with exactly
// the weights of an uninterrupted run, losing at most one checkpoint
// interval of work per interruption.
#include <gtest/gtest.h>

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

class RecoveryTest : public ClusterFixture {
 protected:
  // Failure timings shrunk as in kFastFailures, and preemption after 1 s.
  RecoveryTest()
      : ClusterFixture(R"(
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s, unreachableAfter: 1s, lease: 2s, lostAfter: 3s}
scheduler: {preemption: {minRunTime: 1s}}
)") {}

  int64_t SubmitTraining(const std::string& name, const std::string& extra_env) {
    return Submit("name: " + name + "\npriority: low\nreplicas: 2\nresources: {gpus: 1}\n" +
                  "retry: {limit: 3, backoff: {initial: 1s, factor: 1, max: 1s}}\n" + "checkpoint: {dir: " +
                  Tmp("ckpt-" + name) + ", gracePeriod: 20s}\n" + "env: {EPOCHS: '40', CKPT_EVERY: '5'" + extra_env +
                  "}\n" + "command: [/usr/bin/python3, " + fs::absolute("examples/ddp_digits.py").string() + "]\n");
  }
  // "test accuracy A weights checksum C" of each replica's log.
  std::vector<std::string> Results(int64_t id) {
    std::vector<std::string> out;
    static const std::regex re("test accuracy [0-9.]+ weights checksum -?[0-9.]+");
    for (int r = 0; r < 2; ++r) {
      std::smatch m;
      const std::string log = Logs(id, r);
      out.push_back(std::regex_search(log, m, re) ? m.str()
                                                  : "(none) " + log.substr(log.size() > 2000 ? log.size() - 2000 : 0));
    }
    return out;
  }
  // Every replica log of every attempt of `id`, from the agents' state
  // directories (for failure messages).
  std::string AllLogs(int64_t id) {
    std::string out;
    const std::string prefix = "j" + std::to_string(id) + ".";
    for (const auto& e : fs::recursive_directory_iterator(server_.dir())) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name.rfind(prefix, 0) != 0 || e.path().extension() != ".log") continue;
      std::ifstream in(e.path());
      std::string text((std::istreambuf_iterator<char>(in)), {});
      out += "\n--- " + e.path().string() + "\n" + text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
    }
    return out;
  }
  int64_t Step(int64_t id) {
    const json j = Get("/v1/jobs/" + std::to_string(id));
    return j.contains("progress") ? j["progress"].value("step", int64_t{0}) : 0;
  }
  void WaitStep(int64_t id, int32_t attempt, int64_t step) {
    const bool reached = WaitFor(
        [&] {
          const json j = Get("/v1/jobs/" + std::to_string(id));
          return j.value("attempts", 0) == attempt && j.contains("progress") &&
                 j["progress"].value("step", int64_t{0}) >= step;
        },
        std::chrono::seconds(60));
    if (reached) return;
    FAIL() << "attempt " << attempt << " never reached step " << step << ": "
           << Get("/v1/jobs/" + std::to_string(id)).dump() << AllLogs(id);
  }
};

TEST_F(RecoveryTest, TheDdpJobInterruptedTwiceEndsWithTheWeightsOfAnUninterruptedRun) {
  if (std::system("/usr/bin/python3 -c 'import torch, sklearn' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs python3-torch and python3-sklearn";
  }
  for (int i = 0; i < 4; ++i) AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(4);

  // The reference: the same job, never interrupted.
  const int64_t ref = SubmitTraining("reference", "");
  const json r = WaitEnd(ref, 300);
  ASSERT_EQ(r["state"], "COMPLETED") << r.dump() << Logs(ref);
  const std::vector<std::string> expected = Results(ref);
  ASSERT_EQ(expected[0], expected[1]);
  ASSERT_EQ(expected[0].find("(none)"), std::string::npos) << expected[0];

  const std::string pids = Tmp("pids");
  fs::create_directories(pids);
  const int64_t id = SubmitTraining("interrupted", ", EPOCH_SLEEP: '0.3', PID_DIR: " + pids);
  // 1. Its node dies: the agent and the replica's process are killed at once.
  ASSERT_NO_FATAL_FAILURE(WaitStep(id, 1, 12));
  const int64_t reached1 = Step(id);
  std::ifstream in(pids + "/a1.r0");
  int pid = 0;
  std::string victim;
  in >> pid >> victim;
  ASSERT_GT(pid, 0);
  for (auto& a : agents_) {
    if (a->name() == victim) a->Kill();
  }
  ::kill(pid, SIGKILL);
  // 2. Then it is preempted: a high-class gang of two needs the one free
  // node and one of the training job's (the checkpoint signal, the grace
  // period, back to the queue), and runs for 3 s.
  ASSERT_NO_FATAL_FAILURE(WaitStep(id, 2, 23));
  const int64_t reached2 = Step(id);
  const int64_t high =
      Submit("name: urgent\npriority: high\nreplicas: 2\nresources: {gpus: 1}\ncommand: [sleep, '3']\n");
  const json u = WaitEnd(high, 120);
  ASSERT_EQ(u["state"], "COMPLETED") << u.dump();

  const json j = WaitEnd(id, 300);
  ASSERT_EQ(j["state"], "COMPLETED") << j.dump() << Logs(id);
  EXPECT_EQ(Results(id), expected) << "the interrupted run must end with the same weights";
  ASSERT_EQ(j["attemptHistory"].size(), 3u) << j.dump();
  const json& h = j["attemptHistory"];
  // Attempt 2 resumed from the last checkpoint before the kill: at most one
  // interval (5 epochs) lost.
  const int64_t resumed2 = h[1]["resumedFrom"]["step"];
  EXPECT_GE(h[0]["lastStep"].get<int64_t>(), reached1) << j.dump();
  EXPECT_LE(h[0]["lastStep"].get<int64_t>() - resumed2, 5) << j.dump();
  EXPECT_GE(resumed2, 10) << j.dump();
  // Attempt 3 resumed where attempt 2 was stopped (checkpoint on request):
  // nothing lost.
  const int64_t resumed3 = h[2]["resumedFrom"]["step"];
  EXPECT_EQ(resumed3, h[1]["lastStep"].get<int64_t>()) << j.dump();
  EXPECT_GE(resumed3, reached2) << j.dump();
  // The node's death is the node's fault, even when the other replica's
  // collective failed first: no retry spent.
  EXPECT_EQ(h[0]["result"], "NODE_FAIL") << j.dump();
  EXPECT_EQ(j["retries"], 0) << j.dump();
  EXPECT_EQ(h[1]["result"], "REQUEUED") << j.dump();
  EXPECT_NE(h[1]["reason"].get<std::string>().find("Preempted: for job " + std::to_string(high)), std::string::npos)
      << j.dump();
  EXPECT_GE(Millis(u["startTime"]), Millis(h[1]["endTime"])) << u.dump() << j.dump();
  for (const json& rep : h[2]["replicas"]) EXPECT_NE(rep["node"], victim);

  std::cout << "reference: " << expected[0] << "\ninterrupted: " << Results(id)[0] << "\nattempt 1 reached epoch "
            << reached1 << " (" << h[0]["lastStep"] << " reported) when its node was killed; attempt 2 resumed at "
            << resumed2 << ", was preempted at " << h[1]["lastStep"] << "; attempt 3 resumed at " << resumed3 << "\n";
  // `muster describe` shows the attempts and the checkpoints they used.
  const std::string cmd =
      std::string(MUSTER_BINARY) + " describe job " + std::to_string(id) + " --server " + server_.url() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  EXPECT_NE(out.find("attemptHistory"), std::string::npos) << out;
  EXPECT_NE(out.find("resumedFrom"), std::string::npos) << out;
  EXPECT_NE(out.find("Checkpoints:"), std::string::npos) << out;
  EXPECT_NE(out.find("Resumed"), std::string::npos) << out;
  EXPECT_NE(out.find("step " + std::to_string(resumed3) + "  attempt 2  "), std::string::npos) << out;
}

}  // namespace
}  // namespace muster::testing
