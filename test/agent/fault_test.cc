// Faults on real binaries: a network partition between an agent on its own
// test host (a network namespace) and the server.
#include <gtest/gtest.h>

#include <filesystem>

#include "../wait_for.h"
#include "cluster_fixture.h"
#include "process_util.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The node is lost after 5 s: past the lease (2 s) plus the fencing grace
// (1 s), so a cut-off node has stopped its task before the job may run
// elsewhere.
const char* kPartitionConfig = R"(
allowPlainHttp: true
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s, unreachableAfter: 1s, lease: 2s, lostAfter: 5s}
)";

class PartitionTest : public ClusterFixture {
 protected:
  PartitionTest() : ClusterFixture(kPartitionConfig, "0.0.0.0") {}
};

double Seconds(Clock::time_point from) { return std::chrono::duration<double>(Clock::now() - from).count(); }

TEST_F(PartitionTest, ACutOffNodeFencesItsTaskBeforeTheJobRunsElsewhere) {
  if (!NetnsHost::Supported()) GTEST_SKIP() << "needs root and ip netns";
  NetnsHost host(0);
  ASSERT_TRUE(host.ok());
  // Agent 0 on the test host, agent 1 beside the server; one GPU each.
  agents_.push_back(std::make_unique<AgentProcess>(host.ServerUrl(server_.port()), Name(0), server_.dir() + "/agent0"));
  agents_.back()->flags = {"--fake-gpus", "1xH100", "--stop-tasks-on-exit"};
  agents_.back()->wrapper = host.Wrapper();
  agents_.back()->Start();
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  Post("/v1/nodes/" + Name(1) + "/cordon", "", "application/json");  // the job starts on the test host
  const std::string pids = Tmp("pids");
  fs::create_directories(pids);
  const int64_t id = Submit(
      "name: cutoff\nresources: {gpus: 1}\nretry: {limit: 0}\n"
      "command: [/bin/sh, -c, 'echo $$ >> " +
      pids + "/a$MUSTER_ATTEMPT; exec sleep 300']\n");
  json j = WaitState(id, "RUNNING");
  ASSERT_EQ(j["allocations"][0]["node"], Name(0)) << j.dump();
  ASSERT_FALSE(WaitFile(pids + "/a1").empty());
  Post("/v1/nodes/" + Name(1) + "/uncordon", "", "application/json");

  ASSERT_TRUE(host.Cut());
  const auto cut = Clock::now();
  double fenced_after = -1, restarted_after = -1;
  for (int i = 0; i < 1500 && restarted_after < 0; ++i) {
    if (fenced_after < 0 && AllGone(pids + "/a1")) fenced_after = Seconds(cut);
    if (fs::exists(pids + "/a2") && !WaitFile(pids + "/a2", 1).empty()) {
      restarted_after = Seconds(cut);
      // Never two copies: attempt 1 was gone before attempt 2 began.
      EXPECT_TRUE(AllGone(pids + "/a1")) << "attempt 2 started while attempt 1 still ran";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(restarted_after, 0) << Get("/v1/jobs/" + std::to_string(id)).dump();
  std::cout << "partition: the cut-off node's task was gone after " << fenced_after << " s (lease 2 s, grace 1 s); "
            << "the job ran again elsewhere after " << restarted_after << " s (lostAfter 5 s)\n";
  EXPECT_GE(fenced_after, 1.0);  // the lease counts from the last sync before the cut
  EXPECT_LT(fenced_after, 4.0);
  EXPECT_LT(fenced_after, restarted_after);
  j = WaitState(id, "RUNNING");
  EXPECT_EQ(j["attempts"], 2) << j.dump();
  EXPECT_EQ(j["requeues"], 1) << j.dump();
  EXPECT_EQ(j["allocations"][0]["node"], Name(1)) << j.dump();
  EXPECT_EQ(j["attemptHistory"][0]["result"], "NODE_FAIL") << j.dump();

  // Healed: the node syncs again, reports its fenced task (acknowledged,
  // nothing restarts there) and takes work again; the job is undisturbed.
  ASSERT_TRUE(host.Heal());
  const bool back = WaitFor(
      [&] {
        const json nodes = Get("/v1/nodes");  // (a temporary's items would dangle in the loop)
        for (const json& n : nodes["items"]) {
          if (n["name"] == Name(0) && n["schedulable"].get<bool>()) return true;
        }
        return false;
      },
      std::chrono::seconds(30));
  EXPECT_TRUE(back) << Get("/v1/nodes").dump();
  std::cout << "healed: the node takes work again " << Seconds(cut) << " s after the cut\n";
  EXPECT_TRUE(WaitHeardTwiceAfter(Name(0), WallMs()));  // it has reported, and acted on the answer
  j = Get("/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(j["state"], "RUNNING");
  EXPECT_EQ(j["attempts"], 2) << j.dump();
  EXPECT_TRUE(AllGone(pids + "/a1"));
  ExpectNoGpuHeldTwice();
  Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  ExpectQuiet({id}, {pids});
}

class FaultTest : public ClusterFixture {
 protected:
  FaultTest() : ClusterFixture(kPartitionConfig) {}
};

// SIGSTOP of an agent: it is frozen, its tasks are not. The task shims stop
// their tasks when the lease runs out; the server requeues the job
// elsewhere only after; the agent, thawed, reports and runs nothing twice.
TEST_F(FaultTest, AFrozenAgentsTasksFenceThemselvesAndTheJobRunsElsewhere) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const std::string dir = Tmp("frozen");
  fs::create_directories(dir);
  const int64_t id =
      Submit("name: frozen\nresources: {gpus: 1}\nretry: {limit: 0}\ncommand: [/bin/sh, -c, '" + Guarded(dir) + "']\n");
  WaitState(id, "RUNNING");
  ASSERT_FALSE(WaitFile(dir + "/a1").empty());
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  agents_[0]->Pause();
  const json j = WaitState(id, "RUNNING", 1);  // still running on the frozen node for now
  WaitFor([&] { return fs::exists(dir + "/a2"); });
  ASSERT_TRUE(fs::exists(dir + "/a2")) << Get("/v1/jobs/" + std::to_string(id)).dump();
  EXPECT_TRUE(AllGone(dir + "/a1"));
  const int64_t thawed = WallMs();
  agents_[0]->Resume();
  ASSERT_TRUE(WaitHeardTwiceAfter(Name(0), thawed)) << "the thawed agent was not heard";
  const json after = Get("/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(after["attempts"], 2) << after.dump();
  EXPECT_EQ(after["requeues"], 1) << after.dump();
  EXPECT_EQ(after["attemptHistory"][0]["result"], "NODE_FAIL") << after.dump();
  ExpectNoGpuHeldTwice();
  Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  ExpectQuiet({id}, {dir});
  ExpectNoOverlap(dir);
}

// A server outage past the lease: the node's task shims stop their tasks
// (fenced). A task that ends on the stop signal, even with exit 0, ended
// because its node lost the server, not by itself: NODE_FAIL, requeued
// without spending a retry (it was FAILED, or COMPLETED, before).
TEST_F(FaultTest, AServerOutagePastTheLeaseRequeuesItsJobsWithoutSpendingARetry) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const std::string started = Tmp("started"), pid = Tmp("polite.pid");
  const int64_t id = Submit(
      "name: polite\nresources: {gpus: 1}\nretry: {limit: 0}\ncommand: [/bin/sh, -c, '"
      "echo $$ > " +
      pid + "; echo $MUSTER_ATTEMPT >> " + started + "; trap \"exit 0\" TERM; sleep 300 & wait']\n");
  ASSERT_TRUE(WaitProcessStarted(id, started));
  // The agent is frozen too, so the shim is what fences (the agent, awake,
  // may stop its tasks itself first, and says why).
  server_.Pause();
  agents_[0]->Pause();
  // Fenced when the 2 s lease ran out; the node is lost only after 5 s.
  ASSERT_TRUE(WaitFor([&] { return AllGone(pid); }, std::chrono::seconds(4))) << "the shim did not fence";
  // Still frozen past the fence: woken at once, the agent took attempt 2
  // from the server's first answer and then stopped it, its lease check
  // still counting from before the outage (an agent race seen once in
  // five runs, to be fixed in the agent; then this wait goes).
  std::this_thread::sleep_for(std::chrono::milliseconds(1'500));
  agents_[0]->Resume();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server_.Resume();
  const json j = WaitAttemptRunning(id, 2);
  EXPECT_EQ(j["state"], "RUNNING") << j.dump();
  EXPECT_EQ(j["attempts"], 2) << j.dump();
  EXPECT_EQ(j["retries"], 0) << j.dump();
  EXPECT_EQ(j["attemptHistory"][0]["result"], "NODE_FAIL") << j.dump();
  CancelAndWait(id);
}

// kill -9 of the server while it binds and dispatches a burst of jobs, then
// a restart on the same store: nothing acknowledged is lost, nothing runs
// twice, no GPU is held twice, and every job ends.
TEST_F(FaultTest, KillingTheServerMidBindLosesNothingAndRunsNothingTwice) {
  AddAgent({"--fake-gpus", "4xH100"});
  AddAgent({"--fake-gpus", "4xH100"});
  WaitNodes(2);
  std::vector<int64_t> ids;
  std::vector<std::string> dirs;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 12; ++i) {
      const std::string dir = Tmp("burst" + std::to_string(ids.size()));
      fs::create_directories(dir);
      dirs.push_back(dir);
      ids.push_back(
          Submit("name: b\nresources: {gpus: 1}\ncommand: [/bin/sh, -c, '" + Guarded(dir, "sleep 1") + "']\n"));
    }
    // The scheduler binds within milliseconds of the submits: kill it then.
    std::this_thread::sleep_for(std::chrono::milliseconds(round * 15));
    server_.Kill();
    ASSERT_TRUE(server_.Start()) << server_.log();
    cli_ = std::make_unique<httplib::Client>(server_.url());
    cli_->set_read_timeout(30, 0);
    ExpectJobsPresent(ids);
    ExpectNoGpuHeldTwice();
  }
  for (int i = 0; i < 20; ++i) {
    ExpectNoGpuHeldTwice();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ExpectQuiet(ids, dirs, 120);
  for (int64_t id : ids) EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "COMPLETED") << id;
  for (const std::string& dir : dirs) ExpectNoOverlap(dir);
}

}  // namespace
}  // namespace muster::testing
