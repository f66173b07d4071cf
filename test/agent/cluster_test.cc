// End to end: a real server and real agents running real processes (as
// root, in real cgroups). Each test gets its own server, store, agents and
// node names.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "../child_process.h"
#include "../server/server_process.h"
#include "../wait_for.h"
#include "agent/executor.h"
#include "cluster_fixture.h"
#include "dev_cluster.h"
#include "process_util.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class NodeFailureTest : public ClusterFixture {
 protected:
  NodeFailureTest() : ClusterFixture(kFastFailures) {}
};

// A dead agent's node stays schedulable for 5 s and is lost after a minute:
// room for a test to bind a job to it and restart the agent on a loaded
// machine (with kFastFailures' 1 s and 3 s, a slow restart lost the node
// and requeued the jobs the test meant to keep running).
class SlowNodeLossTest : public ClusterFixture {
 protected:
  SlowNodeLossTest()
      : ClusterFixture(
            "rateLimit: {perSecond: 100000, burst: 100000}\n"
            "agents: {defaultGrace: 1s, unreachableAfter: 5s, lease: 2s, lostAfter: 60s}\n") {}
};

// Nodes are lost only after a minute here: what requeues the job in time is
// the operator's word.
class OperatorNodeTest : public ClusterFixture {
 protected:
  OperatorNodeTest()
      : ClusterFixture(
            "rateLimit: {perSecond: 100000, burst: 100000}\n"
            "agents: {defaultGrace: 1s, unreachableAfter: 1s, lease: 2s, lostAfter: 60s}\n") {}
  // POSTs or DELETEs as the test's user; returns the status and the error message.
  std::pair<int, std::string> Act(const std::string& method, const std::string& path) {
    auto r = method == "DELETE"
                 ? cli_->Delete(path, httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}})
                 : cli_->Post(path, httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}}, "",
                              "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return {0, ""};
    const json e = json::parse(r->body, nullptr, false);
    return {r->status, e.is_object() && e.contains("error") ? e["error"].value("message", "") : ""};
  }
};

TEST_F(OperatorNodeTest, DeclareLostAndRemoveActOnDeadNodesAndAreRefusedForLiveOnes) {
  for (int i = 0; i < 3; ++i) AddAgent();
  WaitNodes(3);
  const std::string dir = Tmp("pids");
  const int64_t id = SubmitRecordedGang(dir);
  json j = Get("/v1/jobs/" + std::to_string(id));
  const std::string victim = j["allocations"][0]["node"];
  // Alive: neither is allowed.
  // (Not a structured binding: the lambda below captures them, which clang 14 cannot.)
  int code = 0;
  std::string message;
  std::tie(code, message) = Act("POST", "/v1/nodes/" + victim + "/declare-lost");
  EXPECT_EQ(code, 409);
  EXPECT_NE(message.find("is alive"), std::string::npos) << message;
  std::tie(code, message) = Act("DELETE", "/v1/nodes/" + victim);
  EXPECT_EQ(code, 409);
  EXPECT_NE(message.find("only a lost node can be removed"), std::string::npos) << message;
  EXPECT_EQ(Act("POST", "/v1/nodes/nope/declare-lost").first, 404);
  for (auto& a : agents_) {
    if (a->name() == victim) a->Kill();  // kill -9: its shims run on until their lease runs out
  }
  // Refused while the lease may still let its tasks run, then accepted.
  bool declared = false;
  WaitFor(
      [&] {
        std::tie(code, message) = Act("POST", "/v1/nodes/" + victim + "/declare-lost");
        declared = code == 200;
        if (!declared) {
          EXPECT_NE(message.find("lease"), std::string::npos) << message;
        }
        return declared;
      },
      std::chrono::seconds(10));
  ASSERT_TRUE(declared) << message;
  // Attempt 2 runs elsewhere, only once attempt 1 is gone, and because the
  // operator said so (the event below), not because lostAfter passed: no
  // bound on the time here, which a sanitizer build on a loaded machine
  // stretches.
  j = WaitAttemptRunning(id, 2);
  EXPECT_TRUE(WaitProcessStarted(id, dir + "/a2"));
  EXPECT_TRUE(AllGone(dir + "/a1"));
  EXPECT_EQ(j["requeues"], 1) << j.dump();
  EXPECT_EQ(j["retries"], 0) << j.dump();
  for (const json& a : j["allocations"]) EXPECT_NE(a["node"], victim);
  EXPECT_TRUE(HasEvent(Get("/v1/events")["items"], "NodeLost", victim + " was declared lost by " + User()));
  // Removed: no longer listed, and gone from the store (a restart does not bring it back).
  std::tie(code, message) = Act("DELETE", "/v1/nodes/" + victim);
  EXPECT_EQ(code, 200) << message;
  auto listed = [&] {
    const json nodes = Get("/v1/nodes");
    for (const json& n : nodes["items"]) {
      if (n["name"] == victim) return true;
    }
    return false;
  };
  EXPECT_FALSE(listed());
  EXPECT_EQ(Act("DELETE", "/v1/nodes/" + victim).first, 404);
  server_.Stop();
  ASSERT_TRUE(server_.Start()) << server_.log();
  cli_ = std::make_unique<httplib::Client>(server_.url());
  EXPECT_FALSE(listed());
  EXPECT_EQ(Get("/v1/nodes")["items"].size(), 2u);
  ExpectNoGpuHeldTwice();
  Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  ExpectQuiet({id}, {dir});
}

TEST_F(NodeFailureTest, ALostNodesGangIsStoppedEverywhereThenRequeuedWithoutSpendingARetry) {
  AddAgent();
  AddAgent();
  AddAgent();
  WaitNodes(3);
  const std::string dir = Tmp("pids");
  const int64_t id = SubmitRecordedGang(dir);
  json j = Get("/v1/jobs/" + std::to_string(id));
  ASSERT_EQ(j["allocations"].size(), 2u) << j.dump();
  const std::string victim = j["allocations"][0]["node"];
  for (auto& a : agents_) {
    if (a->name() == victim) a->Kill();  // kill -9: its shims run on, until the lease runs out
  }
  // Attempt 2 starts elsewhere, and only once every process of attempt 1 is gone.
  const std::string second = dir + "/a2";
  bool started = false;
  started = WaitFor([&] { return fs::exists(second); });
  if (started) {
    EXPECT_TRUE(AllGone(dir + "/a1")) << "attempt 2 started while attempt 1 still ran";
  }
  ASSERT_TRUE(started) << Get("/v1/jobs/" + std::to_string(id)).dump();
  j = WaitState(id, "RUNNING");
  EXPECT_EQ(j["attempts"], 2) << j.dump();
  EXPECT_EQ(j["requeues"], 1) << j.dump();
  EXPECT_EQ(j["retries"], 0) << j.dump();
  EXPECT_EQ(j["attemptHistory"][0]["result"], "NODE_FAIL") << j.dump();
  for (const json& a : j["allocations"]) EXPECT_NE(a["node"], victim);
  const json events = Get("/v1/events");
  bool lost = false;
  for (const json& e : events["items"])
    lost = lost || (e["type"] == "NodeLost" && e["message"].get<std::string>().find(victim) == 0);
  EXPECT_TRUE(lost) << events.dump();
  // The node list says so (it read "Ready,SchedulingDisabled", as if cordoned).
  const json nodes = Get("/v1/nodes");  // held: a range over a temporary's member would dangle
  for (const json& n : nodes["items"]) {
    EXPECT_EQ(n["condition"], n["name"] == victim ? "Lost" : "Ready") << n.dump();
    EXPECT_TRUE(n.contains("lastSeen")) << n.dump();
    EXPECT_FALSE(n.contains("cordon")) << n.dump();
  }
  ExpectNoGpuHeldTwice();
  Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  ExpectQuiet({id}, {dir});
}

TEST_F(ClusterTest, AgentsRegisterTheirNodesAndGpus) {
  AddAgent({"--fake-gpus", "4xA100", "--cpus", "16", "--memory", "64Gi", "--leaf", "leaf-a"});
  WaitNodes(1);
  const json n = Get("/v1/nodes")["items"][0];
  EXPECT_EQ(n["name"], Name(0));
  EXPECT_EQ(n["gpuType"], "A100");
  EXPECT_EQ(n["gpus"], 4);
  EXPECT_EQ(n["cpuMilli"], 16000);
  EXPECT_EQ(n["memoryBytes"], 64LL << 30);
  EXPECT_EQ(n["leaf"], "leaf-a");
  ASSERT_EQ(n["agent"]["gpuDevices"].size(), 4u);
  EXPECT_EQ(n["agent"]["gpuDevices"][0]["uuid"].get<std::string>().rfind("GPU-", 0), 0u);
  EXPECT_FALSE(n["agent"]["cgroups"].get<std::string>().empty());
}

TEST_F(ClusterTest, AJobSeesItsEnvironment) {
  AddAgent();
  AddAgent();
  WaitNodes(2);
  // Two replicas with 4 GPUs each on... whichever nodes the scheduler picks.
  // A script, run by the interpreter its #! line names.
  const int64_t id = Submit(
      "name: env\nreplicas: 2\nresources: {gpus: 4}\nenv: {MY_SETTING: x1}\n"
      "script: \"#!/bin/bash\\n[[ -n $BASH_VERSION ]] && echo shell=bash\\nenv; echo cwd=$(pwd); id -un\\n\"\n");
  const json j = WaitEnd(id);
  ASSERT_EQ(j["state"], "COMPLETED") << j.dump();
  std::map<std::string, std::string> uuids_by_node;
  const json nodes = Get("/v1/nodes");
  for (const json& n : nodes["items"]) {
    for (const json& g : n["agent"]["gpuDevices"])
      uuids_by_node[n["name"].get<std::string>()] += g["uuid"].get<std::string>() + ",";
  }
  std::set<std::string> ranks;
  std::string master;
  for (int r = 0; r < 2; ++r) {
    const std::string log = Logs(id, r);
    const auto env = EnvOf(log);
    EXPECT_EQ(env.at("MUSTER_JOB_ID"), std::to_string(id));
    EXPECT_EQ(env.at("SLURM_JOB_ID"), std::to_string(id));
    EXPECT_EQ(env.at("MUSTER_ATTEMPT"), "1");
    EXPECT_EQ(env.at("MUSTER_REPLICA_INDEX"), std::to_string(r));
    EXPECT_EQ(env.at("RANK"), std::to_string(r));
    EXPECT_EQ(env.at("SLURM_PROCID"), std::to_string(r));
    EXPECT_EQ(env.at("WORLD_SIZE"), "2");
    EXPECT_EQ(env.at("MUSTER_NUM_REPLICAS"), "2");
    EXPECT_EQ(env.at("MY_SETTING"), "x1");
    EXPECT_EQ(env.count("shell") ? env.at("shell") : "", "bash") << log;
    EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
    // Each replica is a node of its own, sharing a machine or not (both
    // fit one node here): cuda:$LOCAL_RANK is its own first GPU, and a
    // launcher per replica gets distinct node ranks.
    EXPECT_EQ(env.at("LOCAL_RANK"), "0");
    EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "1");
    EXPECT_EQ(env.at("NODE_RANK"), std::to_string(r));
    EXPECT_EQ(env.at("NNODES"), "2");
    EXPECT_EQ(env.at("SLURM_NODEID"), std::to_string(r));
    EXPECT_EQ(env.at("SLURM_NNODES"), "2");
    EXPECT_EQ(env.at("SLURM_LOCALID"), "0");
    EXPECT_EQ(env.at("SLURM_JOB_NAME"), "env");
    if (master.empty()) master = env.at("MASTER_PORT");
    EXPECT_EQ(env.at("MASTER_PORT"), master);
    ranks.insert(env.at("RANK"));
    // Four GPUs, by UUID, all of the node the replica ran on.
    const std::string visible = env.at("CUDA_VISIBLE_DEVICES");
    const std::string node = env.at("MUSTER_NODE");
    std::istringstream in(visible);
    std::string uuid;
    int count = 0;
    while (std::getline(in, uuid, ',')) {
      ++count;
      EXPECT_EQ(uuid.rfind("GPU-", 0), 0u);
      EXPECT_NE(uuids_by_node[node].find(uuid + ","), std::string::npos)
          << uuid << " is not a GPU of " << node << " (" << uuids_by_node[node] << ")";
    }
    EXPECT_EQ(count, 4);
    EXPECT_EQ(env.at("SLURM_GPUS_ON_NODE"), "4");
    EXPECT_EQ(env.at("NVIDIA_VISIBLE_DEVICES"), visible);
    EXPECT_EQ(env.at("USER"), User());
  }
  EXPECT_EQ(ranks.size(), 2u);
}

TEST_F(ClusterTest, MemoryOverTheLimitEndsAsOutOfMemory) {
  if (geteuid() != 0) GTEST_SKIP() << "cgroups need root";
  AddAgent();
  WaitNodes(1);
  const int64_t id = Submit(
      "name: oom\nresources: {memory: 64Mi}\n"
      "command: [python3, -c, 'x=[bytearray(16<<20) for _ in range(64)]']\n");
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "OUT_OF_MEMORY") << j.dump();
  EXPECT_NE(j["reason"].get<std::string>().find("out of memory"), std::string::npos) << j.dump();
}

TEST_F(ClusterTest, ATimeLimitSendsTheSignalThenEndsAsTimeout) {
  AddAgent();
  WaitNodes(1);
  // The job catches its checkpoint signal and keeps running: after the grace
  // period it is killed.
  const int64_t id = Submit(
      "name: slow\ntimeLimit: 2s\ncheckpoint: {dir: /tmp, signal: SIGUSR1, gracePeriod: 1s}\n"
      "command: [/bin/sh, -c, 'trap \"echo got-usr1\" USR1; echo started; "
      "while true; do sleep 0.1; done']\n");
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "TIMEOUT") << j.dump();
  const std::string log = Logs(id);
  EXPECT_NE(log.find("started"), std::string::npos) << log;
  EXPECT_NE(log.find("got-usr1"), std::string::npos) << log;
}

TEST_F(ClusterTest, CancelLeavesNoProcessAndNoCgroup) {
  AgentProcess& a = AddAgent();
  WaitNodes(1);
  const std::string pids = Tmp("cancel.pids");
  const int64_t id = Submit(
      "name: victim\nresources: {gpus: 8, memory: 256Mi}\n"
      "command: [/bin/sh, -c, 'echo $$ > " +
      pids + "; sleep 300 & echo $! >> " + pids + "; trap \"\" TERM; wait']\n");
  ASSERT_TRUE(WaitProcessStarted(id, pids));
  EXPECT_EQ(Get("/v1/nodes")["items"][0]["freeGpus"], 0);
  const json c = Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  EXPECT_TRUE(c["state"] == "COMPLETING" || c["state"] == "CANCELLED") << c.dump();
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "CANCELLED") << j.dump();
  EXPECT_TRUE(AllGone(pids)) << "a process of the cancelled job is left";
  // The GPUs are free again in the server's books, and no cgroup is left.
  EXPECT_EQ(Get("/v1/nodes")["items"][0]["freeGpus"], 8);
  // The agent removes an emptied cgroup as soon as the kernel lets it go.
  std::string left;
  bool parent_seen = false;  // the agent's parent group exists where cgroups are used
  WaitFor(
      [&] {
        left.clear();
        for (const char* root :
             {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup"}) {
          std::error_code ec;
          for (const auto& parent : fs::directory_iterator(std::string(root) + "/muster", ec)) {
            if (parent.path().filename().string().rfind(a.name() + ".", 0) != 0) continue;  // muster/<node>.<tag>
            parent_seen = true;
            for (const auto& e : fs::directory_iterator(parent.path())) {
              if (e.is_directory()) left += e.path().string() + " ";
            }
          }
        }
        return left.empty();
      },
      std::chrono::seconds(2));
  EXPECT_EQ(left, "") << "cgroups left behind";
  if (geteuid() == 0) {
    EXPECT_TRUE(parent_seen) << "no cgroup parent of the agent's was found";
  }
}

// The retry rules themselves (backoff, the limit, what is never retried)
// are the lifecycle's, shown in test/transcripts/lifecycle/retry-limit.txt;
// here a real retried attempt: its environment, and the job's reason
// while it waits out its backoff.
TEST_F(ClusterTest, ARetryThatSucceedsCompletesTheJob) {
  AddAgent();
  WaitNodes(1);
  const int64_t id = Submit(
      "name: flaky\nretry: {limit: 3, backoff: {initial: 1s, factor: 1, max: 1s}}\n"
      "command: [/bin/sh, -c, 'echo attempt $MUSTER_ATTEMPT restart $MUSTER_RESTART_COUNT; "
      "[ $MUSTER_ATTEMPT -ge 2 ]']\n");
  json waiting;
  WaitFor(
      [&] {
        waiting = Get("/v1/jobs/" + std::to_string(id));
        return waiting["reason"] == "Backoff" || waiting.value("attempts", 0) >= 2;
      },
      std::chrono::seconds(5), std::chrono::milliseconds(5));
  EXPECT_EQ(waiting["reason"], "Backoff") << waiting.dump();
  EXPECT_EQ(waiting.value("reasonDetail", "").rfind("Backoff: retry 1 after attempt 1 FAILED (", 0), 0u)
      << waiting.dump();
  const json j = WaitEnd(id, 60);
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump();
  EXPECT_EQ(j["attempts"], 2);
  EXPECT_EQ(j["attemptHistory"][0]["result"], "FAILED");
  EXPECT_EQ(j["attemptHistory"][1]["result"], "COMPLETED");
  EXPECT_NE(Logs(id).find("attempt 2 restart 1"), std::string::npos) << Logs(id);
}

TEST_F(ClusterTest, ExitCodesListedAsPermanentAndOutOfMemoryAreNotRetried) {
  if (geteuid() != 0) GTEST_SKIP() << "cgroups need root";
  AddAgent();
  WaitNodes(1);
  const int64_t bad =
      Submit("name: usage\nretry: {limit: 3, failOnExitCodes: [2]}\ncommand: [/bin/sh, -c, 'exit 2']\n");
  const int64_t oom = Submit(
      "name: oom\nretry: {limit: 3}\nresources: {memory: 64Mi}\n"
      "command: [python3, -c, 'x=[bytearray(16<<20) for _ in range(64)]']\n");
  const json a = WaitEnd(bad);
  EXPECT_EQ(a["state"], "FAILED") << a.dump();
  EXPECT_EQ(a["attempts"], 1);
  const json b = WaitEnd(oom);
  EXPECT_EQ(b["state"], "OUT_OF_MEMORY") << b.dump();
  EXPECT_EQ(b["attempts"], 1);
  // A command that cannot be run (exit 127) would fail the same way again.
  const json c = WaitEnd(Submit("name: typo\nretry: {limit: 3}\ncommand: [/no/such/command]\n"));
  EXPECT_EQ(c["state"], "FAILED") << c.dump();
  EXPECT_EQ(c["attempts"], 1) << c.dump();
  EXPECT_EQ(c.value("retries", 0), 0) << c.dump();
}

TEST_F(ClusterTest, ARestartedAgentAdoptsItsTaskAndNeverRunsItTwice) {
  AgentProcess& a = AddAgent();
  WaitNodes(1);
  const std::string starts = Tmp("starts");
  const int64_t id =
      Submit("name: survivor\ncommand: [/bin/sh, -c, 'echo start >> " + starts + "; sleep 3; echo done']\n");
  ASSERT_TRUE(WaitProcessStarted(id, starts));
  a.Kill();  // kill -9 (and reaped): the task's shim keeps running
  a.Start();
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump();
  EXPECT_EQ(WaitFile(starts), "start\n") << "the task started more than once";
  EXPECT_NE(Logs(id).find("done"), std::string::npos);
}

// A server restarted under agents that stay up, and an agent restarted
// under a server that stays up, after enough history that the counters of
// the process that went (the server's desired-state versions, the agent's
// report sequence) are well ahead of the new one's: work still starts and
// ends. Both once hung jobs in RUNNING (the agent dropped the new server's
// answers as older than the last server's; the server dropped the new
// agent's reports as older than the last agent's).
TEST_F(ClusterTest, RestartsAfterALongHistoryStillStartAndEndWork) {
  AddAgent({"--fake-gpus", "2xH100"});
  WaitNodes(1);
  std::vector<int64_t> history;
  history.reserve(12);
  for (int i = 0; i < 12; ++i) history.push_back(Submit("resources: {gpus: 1}\ncommand: [/bin/true]\n"));
  for (int64_t id : history) ASSERT_EQ(WaitEnd(id)["state"], "COMPLETED") << id;

  server_.Kill();
  ASSERT_TRUE(server_.Start()) << server_.log();
  EXPECT_NE(server_.log().find(", 1 node\n"), std::string::npos)
      << "the agent's node, from the store: " << server_.log();
  cli_ = std::make_unique<httplib::Client>(server_.url());
  cli_->set_read_timeout(30, 0);
  const int64_t after_server = Submit("resources: {gpus: 1}\ncommand: [/bin/true]\n");
  json j = WaitEnd(after_server, 30);
  EXPECT_EQ(j["state"], "COMPLETED") << "after a server restart: " << j.dump();

  agents_.back()->Kill();
  agents_.back()->Start();
  const int64_t after_agent = Submit("resources: {gpus: 1}\ncommand: [/bin/true]\n");
  j = WaitEnd(after_agent, 30);
  EXPECT_EQ(j["state"], "COMPLETED") << "after an agent restart: " << j.dump();
}

// The service a job has had (GPU-hours over its attempts, what the las
// policy ranks by) and its time queued are summed again from the stored
// attempts when the server restarts, not started again from zero.
TEST_F(ClusterTest, AJobsServiceSurvivesAServerRestart) {
  AddAgent({"--fake-gpus", "2xH100"});
  WaitNodes(1);
  const int64_t id = Submit("resources: {gpus: 2}\ncommand: [sleep, '300']\n");
  WaitState(id, "RUNNING");
  // Requeued once it has run about 3 s on 2 GPUs; it runs again at once.
  ASSERT_TRUE(WaitFor([&] {
    const json j = Get("/v1/jobs/" + std::to_string(id));
    return j.contains("service") && j["service"]["gpuHours"].get<double>() >= 2 * 3 / 3600.0;
  }));
  Post("/v1/jobs/" + std::to_string(id) + "/requeue", "", "application/json");
  json before;
  WaitFor([&] {
    before = Get("/v1/jobs/" + std::to_string(id));
    return before.value("state", "") == "RUNNING" && before.value("attempts", 0) == 2;
  });
  ASSERT_EQ(before.value("attempts", 0), 2) << before.dump();
  ASSERT_TRUE(before.contains("service")) << before.dump();
  const double gpu_hours = before["service"]["gpuHours"];
  EXPECT_GE(gpu_hours, 2 * 3 / 3600.0) << before.dump();

  // Restarted: the first attempt's 6 GPU-seconds and more, not the second
  // attempt's alone.
  server_.Kill();
  ASSERT_TRUE(server_.Start()) << server_.log();
  cli_ = std::make_unique<httplib::Client>(server_.url());
  cli_->set_read_timeout(30, 0);
  const json after = Get("/v1/jobs/" + std::to_string(id));
  ASSERT_TRUE(after.contains("service")) << after.dump();
  EXPECT_GE(after["service"]["gpuHours"].get<double>(), gpu_hours) << after.dump();
  EXPECT_LT(after["service"]["gpuHours"].get<double>(), gpu_hours + 2 * 30 / 3600.0) << after.dump();
  CancelAndWait(id);
}

// A job that ends while the server is away (here, frozen for 3 s) is
// recorded as ending when it ended, not when the server heard of it.
TEST_F(ClusterTest, AnEndIsRecordedWhenItHappenedNotWhenTheServerHeard) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const std::string started = Tmp("started"), ending = Tmp("ending");
  const int64_t id = Submit("resources: {gpus: 1}\ncommand: [/bin/sh, -c, 'echo go > " + started +
                            "; sleep 1; echo end > " + ending + "']\n");
  ASSERT_FALSE(WaitFile(started).empty());  // the process runs (not only the bind)
  server_.Pause();
  ASSERT_FALSE(WaitFile(ending).empty());  // its last act: it ends while the server is paused
  // The outage goes on: the time it lasts is what the test measures the
  // recorded end against (a duration under test, not a wait).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server_.Resume();
  // A job submitted now: its submit time is the server's "after the outage".
  const int64_t marker = Submit("command: [/bin/true]\n");
  const json j = WaitEnd(id);
  ASSERT_EQ(j["state"], "COMPLETED") << j.dump();
  const int64_t end = Millis(j["endTime"]);
  const int64_t after = Millis(Get("/v1/jobs/" + std::to_string(marker))["submitTime"]);
  ASSERT_GE(end, 0) << j.dump();
  EXPECT_EQ(Millis(j["attemptHistory"][0]["endTime"]), end) << j.dump();
  EXPECT_LT(end, after - 1000) << "recorded when the server heard (" << after << "): " << j.dump();
  EXPECT_GE(end, Millis(j["attemptHistory"][0]["startTime"]) + 900) << j.dump();  // it slept a second
}

TEST_F(ClusterTest, AnInjectedXidReachesTheServerAsAGpuHealthEvent) {
  const std::string xid = Tmp("xid");
  AddAgent({"--nvml-library", FAKE_NVML_LIBRARY}, {{"FAKE_NVML_GPUS", "4"}, {"FAKE_NVML_XID_FILE", xid}});
  WaitNodes(1);
  json n = Get("/v1/nodes")["items"][0];
  EXPECT_EQ(n["gpus"], 4);
  EXPECT_EQ(n["gpuType"], "H100");
  EXPECT_EQ(n["agent"]["gpuSource"], "nvml");
  const std::string uuid = n["agent"]["gpuDevices"][2]["uuid"];
  std::ofstream(xid) << "2 79\n";
  json events;
  WaitFor([&] { return !(events = Get("/v1/events")["items"]).empty(); });
  // The health event, then the cordon it causes.
  ASSERT_EQ(events.size(), 2u) << events.dump();
  EXPECT_EQ(events[0]["type"], "GpuHealth");
  EXPECT_NE(events[0]["message"].get<std::string>().find(uuid), std::string::npos) << events.dump();
  EXPECT_NE(events[0]["message"].get<std::string>().find(": XID 79 (fatal)"), std::string::npos) << events.dump();
  EXPECT_EQ(events[1]["type"], "NodeCordoned") << events.dump();
  n = Get("/v1/nodes")["items"][0];
  EXPECT_FALSE(n["agent"]["gpuDevices"][2]["healthy"].get<bool>()) << n.dump();
  EXPECT_EQ(n["agent"]["gpuDevices"][2]["health"], "XID 79");
}

TEST_F(ClusterTest, AFatalXidCordonsTheNodeAndRequeuesTheJobUsingTheGpu) {
  const std::string xid = Tmp("xid");
  AddAgent({"--nvml-library", FAKE_NVML_LIBRARY}, {{"FAKE_NVML_GPUS", "4"}, {"FAKE_NVML_XID_FILE", xid}});
  WaitNodes(1);
  const std::string pids = Tmp("xid.pids");
  const int64_t id = Submit(
      "name: victim\nresources: {gpus: 4}\nretry: {limit: 0}\n"
      "command: [/bin/sh, -c, 'echo $$ >> " +
      pids + "; exec sleep 300']\n");
  ASSERT_TRUE(WaitProcessStarted(id, pids));
  std::ofstream(xid) << "2 79\n";
  // Stopped (its grace is 1 s), then back in the queue: the only node is cordoned.
  const json j = WaitState(id, "PENDING");
  EXPECT_EQ(j["requeues"], 1) << j.dump();
  EXPECT_EQ(j["attemptHistory"][0]["result"], "NODE_FAIL") << j.dump();
  EXPECT_NE(j["attemptHistory"][0]["reason"].get<std::string>().find("XID 79"), std::string::npos) << j.dump();
  EXPECT_TRUE(AllGone(pids));
  const json n = Get("/v1/nodes")["items"][0];
  EXPECT_FALSE(n["schedulable"].get<bool>()) << n.dump();
  EXPECT_NE(n["agent"]["cordoned"].get<std::string>().find("XID 79"), std::string::npos) << n.dump();
  EXPECT_EQ(n["condition"], "Ready") << n.dump();
  EXPECT_NE(n["cordon"].get<std::string>().find("XID 79"), std::string::npos) << n.dump();
  // Only an admin may clear the cordon; then the job runs again.
  auto denied =
      cli_->Post("/v1/nodes/" + Name(0) + "/uncordon",
                 httplib::Headers{{"Authorization", "Bearer " + server_.UserToken("mallory")}}, "", "application/json");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403) << denied->body;
  const json u = Post("/v1/nodes/" + Name(0) + "/uncordon", "", "application/json");
  EXPECT_TRUE(u["schedulable"].get<bool>()) << u.dump();
  const json again = WaitState(id, "RUNNING");
  EXPECT_EQ(again["attempts"], 2) << again.dump();
}

TEST_F(ClusterTest, APyTorchGangTrainsAndItsReplicasAgree) {
  if (std::system("/usr/bin/python3 -c 'import torch, sklearn' >/dev/null 2>&1") != 0) {
    GTEST_SKIP()
        << "Debian's python3-torch and python3-sklearn are not installed (scripts/install-deps.sh installs them)";
  }
  AddAgent();
  AddAgent();
  WaitNodes(2);
  const std::string script = fs::absolute("examples/ddp_digits.py").string();
  const int64_t id = Submit(
      "name: ddp\nreplicas: 2\nresources: {gpus: 8, cpus: 1, memory: 2Gi}\n"
      "env: {EPOCHS: '20'}\ncommand: [/usr/bin/python3, " +
      script + "]\n");
  const json j = WaitEnd(id, 300);
  ASSERT_EQ(j["state"], "COMPLETED") << j.dump() << Logs(id, 0) << Logs(id, 1);
  std::string results[2];
  for (int r = 0; r < 2; ++r) {
    const std::string log = Logs(id, r);
    const size_t at = log.find("test accuracy");
    ASSERT_NE(at, std::string::npos) << log;
    results[r] = log.substr(at, log.find('\n', at) - at);
  }
  EXPECT_EQ(results[0], results[1]) << "the replicas disagree";
}

}  // namespace
}  // namespace muster::testing

namespace muster::testing {
namespace {

// The port a `muster dev` whose directory is `dir` bound (its server's port
// file), waiting up to 30 s for it; 0 if there is none.
int DevPort(const std::string& dir) {
  int port = 0;
  WaitFor([&] {
    std::ifstream in(dir + "/port");
    return static_cast<bool>(in >> port);
  });
  return port;
}

// `muster dev --demo --exit-after-demo`: the README's main command, end to end.
TEST(DevCluster, TheDemoRunsToCompletionAndStopsCleanly) {
  if (std::system("/usr/bin/python3 -c 'import torch, sklearn' >/dev/null 2>&1") != 0) {
    GTEST_SKIP()
        << "Debian's python3-torch and python3-sklearn are not installed (scripts/install-deps.sh installs them)";
  }
  const std::string dir = ::testing::TempDir() + "/muster_dev_" + std::to_string(getpid());
  fs::remove_all(dir);
  // Its credentials go to a token file of the test's own, not the home of
  // whoever runs the tests (where jobs of other tests would find them).
  const std::string cmd = "MUSTER_TOKEN_FILE=" + dir + ".token MUSTER_MUNGE_SOCKET=none " + std::string(MUSTER_BINARY) +
                          " dev --demo --exit-after-demo --nodes 4 --port 0 --dir " + dir + " > " + dir + ".out 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(dir + ".out");
  const std::string out((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("demo: every job completed"), std::string::npos) << out;
  EXPECT_NE(out.find("ddp-digits replica 0: rank 0/2: test accuracy"), std::string::npos) << out;
  EXPECT_NE(out.find("ddp-digits replica 1: rank 1/2: test accuracy"), std::string::npos) << out;
  // Every process of the cluster is gone: nothing listens on its port.
  const int port = DevPort(dir);
  ASSERT_GT(port, 0);
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(1, 0);
  EXPECT_FALSE(c.Get("/healthz")) << "the server still answers";
  fs::remove_all(dir);
  fs::remove(dir + ".out");
  fs::remove(dir + ".token");
}

// The pid of `parent`'s child whose command line holds `arg`, or 0.
pid_t ChildWithArg(pid_t parent, const std::string& arg) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // Read by the stream's own operations, which turn a read error (the
    // process ended since: ESRCH) into a failed stream; an
    // istreambuf_iterator would throw it.
    std::ifstream in(e.path() / "cmdline");
    std::string cmdline;
    std::getline(in, cmdline);
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    std::ifstream stat(e.path() / "stat");
    std::string pid, comm, state;
    pid_t ppid = 0;
    stat >> pid >> comm >> state >> ppid;
    if (ppid == parent && cmdline.find(arg + " ") != std::string::npos) return std::stoi(name);
  }
  return 0;
}

// `muster dev` keeps its processes running, as a service manager would: a
// server killed with SIGKILL comes back on the same store and port, and so
// does an agent; the job running on the node carries on through both.
TEST(DevCluster, AKilledServerOrAgentComesBackAndTheJobCarriesOn) {
  const std::string dir = ::testing::TempDir() + "/muster_dev_restart_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  DevClusterProcess cluster(dir, {"--nodes", "1"});
  const pid_t dev = cluster.pid();
  const int port = cluster.Port();
  ASSERT_GT(port, 0);
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(1, 0);
  const std::string token = cluster.Token(port);
  ASSERT_FALSE(token.empty()) << "muster dev wrote no credential";
  c.set_default_headers({{"Authorization", "Bearer " + token}});
  auto get = [&](const std::string& path) {
    auto r = c.Get(path);
    return r && r->status == 200 ? json::parse(r->body) : json();
  };
  // Generous: a ThreadSanitizer build of the server restarts slowly on a
  // loaded machine.
  auto wait_for = [&](const std::function<bool()>& done) { return WaitFor(done, std::chrono::seconds(90)); };
  ASSERT_TRUE(wait_for([&] { return get("/v1/nodes")["items"].size() == 1; }));
  const auto up = std::chrono::steady_clock::now();  // the server and the agent run
  const std::string task_pid = dir + "/task.pid";
  auto posted =
      c.Post("/v1/jobs",
             R"({"command":["/bin/sh","-c","echo $$ > )" + task_pid + R"(; exec sleep 300"],"resources":{"gpus":1}})",
             "application/json");
  ASSERT_TRUE(posted && posted->status == 201);
  const std::string job = "/v1/jobs/" + std::to_string(json::parse(posted->body)["id"].get<int64_t>());
  pid_t task = 0;
  ASSERT_TRUE(wait_for([&] {
    std::ifstream(task_pid) >> task;
    return get(job)["state"] == "RUNNING" && task > 0;
  }));
  // Past `muster dev`'s crash-loop window (5 s from each one's start), a death is restarted.
  std::this_thread::sleep_until(up + std::chrono::seconds(6));

  const pid_t server = ChildWithArg(dev, dir + "/cluster/server.yaml");
  ASSERT_GT(server, 0);
  ::kill(server, SIGKILL);
  ASSERT_TRUE(wait_for([&] {
    const pid_t now = ChildWithArg(dev, dir + "/cluster/server.yaml");
    return now != 0 && now != server && !get("/healthz").is_null();
  })) << "the server did not come back";
  const pid_t agent = ChildWithArg(dev, dir + "/cluster/dev-1");
  ASSERT_GT(agent, 0);
  const int64_t killed_ms = WallMs();
  ::kill(agent, SIGKILL);
  ASSERT_TRUE(wait_for([&] {
    const pid_t now = ChildWithArg(dev, dir + "/cluster/dev-1");
    return now != 0 && now != agent;
  })) << "the agent did not come back";
  // The new agent syncs (the node is seen after the kill) and has adopted the task.
  json before, j;
  ASSERT_TRUE(wait_for([&] { return !(before = get(job)).is_null(); }));
  // Two syncs of the new agent heard: it reported the task it adopted, and
  // acted on the answer to that report before it sent the next.
  const auto last_seen = [&] {
    const json nodes = get("/v1/nodes");
    return nodes.is_null() || nodes["items"].empty() ? int64_t{-1}
                                                     : Millis(nodes["items"][0].value("lastSeen", json()));
  };
  ASSERT_TRUE(WaitSeenTwiceAfter(last_seen, killed_ms, std::chrono::seconds(90))) << "the new agent was not heard";
  ASSERT_TRUE(wait_for([&] { return !(j = get(job)).is_null(); }));
  EXPECT_EQ(j["state"], "RUNNING") << j.dump();
  EXPECT_EQ(j["attempts"], 1) << j.dump();
  EXPECT_EQ(before["attempts"], 1) << before.dump();
  EXPECT_NE(agent::ProcessStartTime(task), 0u) << "the task was stopped";

  EXPECT_EQ(cluster.Stop(), 0);
  const std::string out = cluster.Output();
  EXPECT_NE(out.find("the server ended (killed by signal 9); restarting it"), std::string::npos) << out;
  EXPECT_NE(out.find("agent dev-1 ended (killed by signal 9); restarting it"), std::string::npos) << out;
  EXPECT_TRUE(wait_for([&] { return agent::ProcessStartTime(task) == 0; })) << "the task outlived the cluster";
  fs::remove_all(dir);
}

// An agent that shuts down and stops its tasks (--stop-tasks-on-exit, as
// `muster dev` runs them) ended them through no fault of theirs: the job is
// requeued as a node failure, without spending a retry or waiting a backoff.
TEST_F(ClusterTest, ATaskStoppedByItsAgentShuttingDownCostsNoRetry) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const std::string pid = Tmp("bystander.pid");
  const int64_t id = Submit(
      "name: bystander\nresources: {gpus: 1}\nretry: {limit: 3}\n"
      "command: [/bin/sh, -c, 'echo $$ > " +
      pid + "; exec sleep 300']\n");
  ASSERT_TRUE(WaitProcessStarted(id, pid));  // the process runs (not only the bind)
  // Stopped, then started again on the same state (as `muster dev` is): the
  // new agent reports how the task ended.
  agents_.back()->Stop();
  // The stopping agent's last sync brought the requeued job straight back
  // to this node, and the agent started it as it exited: a task left
  // running with no agent (for ever under `muster dev`'s Ctrl-C). A task
  // started so has a shim, a fork of the agent that outlives it; the
  // agent's launcher dies with the agent.
  EXPECT_TRUE(WaitFor([&] { return !muster::testing::AnyProcessNaming(agents_.back()->state_dir() + '\0'); },
                      std::chrono::seconds(10)))
      << "a task was started by an agent on its way out";
  EXPECT_TRUE(muster::testing::AllGone(pid)) << "the task outlived its agent";
  agents_.back()->Start();
  const json j = WaitAttemptRunning(id, 2);
  // Running again at once (a retry would wait its 30 s backoff).
  EXPECT_EQ(j["state"], "RUNNING") << j.dump();
  EXPECT_EQ(j["attempts"], 2) << j.dump();
  EXPECT_EQ(j["requeues"], 1) << j.dump();
  EXPECT_EQ(j["retries"], 0) << j.dump();
  EXPECT_EQ(j["attemptHistory"][0]["result"], "NODE_FAIL") << j.dump();
  EXPECT_NE(j["attemptHistory"][0]["reason"].get<std::string>().find("its agent shut down"), std::string::npos)
      << j.dump();
}

// A node whose agent died before a server restart came back Ready from the
// store and took new work, which then sat RUNNING with nothing running
// (operator audit). Restored nodes get work once their agents sync.
TEST_F(NodeFailureTest, ANodeRestoredFromTheStoreGetsNoWorkUntilItsAgentSyncs) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  agents_[0]->Kill();  // dead before the restart
  server_.Kill();
  ASSERT_TRUE(server_.Start()) << server_.log();
  cli_ = std::make_unique<httplib::Client>(server_.url());
  cli_->set_read_timeout(30, 0);
  // At once, before the sweep would have noticed the dead node's silence.
  std::vector<int64_t> ids;
  ids.reserve(2);
  for (int i = 0; i < 2; ++i) ids.push_back(Submit("resources: {gpus: 1}\ncommand: [/bin/sleep, '30']\n"));
  WaitFor([&] { return Get("/v1/jobs/" + std::to_string(ids[0]))["state"] == "RUNNING"; }, std::chrono::seconds(6));
  // The second has been through a cycle: bound (to the dead node), or left
  // pending with the cycle's reason.
  EXPECT_TRUE(WaitFor([&] {
    const json j = Get("/v1/jobs/" + std::to_string(ids[1]));
    return j["state"] == "RUNNING" || !j.value("reason", "").empty();
  }));
  int running = 0;
  for (int64_t id : ids) {
    const json j = Get("/v1/jobs/" + std::to_string(id));
    if (j["state"] == "RUNNING") ++running;
  }
  EXPECT_EQ(running, 1) << "a job was put on the dead node";
  const json nodes = Get("/v1/nodes");  // kept: a loop over a temporary's member reads freed memory
  for (const json& n : nodes["items"]) {
    if (n["name"] == Name(0)) {
      EXPECT_NE(n["condition"], "Ready") << n.dump();
    }
  }
  for (int64_t id : ids) CancelAndWait(id);
}

// An agent that comes back with fewer GPUs (a GPU failed for good, a
// smaller machine under the old name): a job bound to a GPU that no longer
// exists was FAILED for good (operator audit M3). Now the launch is the
// node's failure (requeued, no retry spent), and the new capacity applies
// once nothing holds a GPU it no longer has, the node getting no work until then.
TEST_F(SlowNodeLossTest, ANodeThatShrankGetsNoJobOnAGpuItNoLongerHas) {
  AgentProcess& agent = AddAgent({"--fake-gpus", "8xH100"});
  WaitNodes(1);
  const int64_t a = Submit("name: a\nresources: {gpus: 4}\nretry: {limit: 0}\ncommand: [/bin/sleep, '300']\n");
  WaitState(a, "RUNNING");
  agent.Kill();  // its node looks alive for unreachableAfter; job a's task runs on
  const int64_t b = Submit("name: b\nresources: {gpus: 4}\nretry: {limit: 0}\ncommand: [/bin/sleep, '300']\n");
  json j = WaitState(b, "RUNNING");  // bound to GPUs 4-7 of the node
  ASSERT_EQ(j["allocations"][0]["gpus"], json({4, 5, 6, 7})) << j.dump();
  agent.flags = {"--fake-gpus", "4xH100", "--stop-tasks-on-exit"};
  agent.Start();
  // b could not start on a GPU that is gone: the node's failure, not the job's.
  WaitFor([&] { return Get("/v1/jobs/" + std::to_string(b)).value("requeues", 0) != 0; }, std::chrono::seconds(10));
  j = Get("/v1/jobs/" + std::to_string(b));
  EXPECT_EQ(j["state"], "PENDING") << j.dump();
  EXPECT_EQ(j["requeues"], 1) << j.dump();
  EXPECT_EQ(j["retries"], 0) << j.dump();
  EXPECT_EQ(j["attemptHistory"][0]["result"], "NODE_FAIL") << j.dump();
  // The node has 4 GPUs now, all job a's: b waits.
  json node;
  WaitFor([&] {
    node = Get("/v1/nodes")["items"][0];
    return node["gpus"] == 4 && node["schedulable"] == true;
  });
  EXPECT_EQ(node["gpus"], 4) << node.dump();
  EXPECT_EQ(node["freeGpus"], 0) << node.dump();
  const json events = Get("/v1/events");
  EXPECT_TRUE(HasEvent(events["items"], "NodeResizePending", "its agent reports")) << events.dump();
  EXPECT_TRUE(HasEvent(events["items"], "NodeResized", Name(0))) << events.dump();
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(b))["state"], "PENDING");
  // Once a is gone, b runs on the GPUs the node has.
  CancelAndWait(a);
  j = WaitAttemptRunning(b, 2);
  for (const json& g : j["allocations"][0]["gpus"]) EXPECT_LT(g.get<int>(), 4) << j.dump();
  CancelAndWait(b);
  ExpectNoGpuHeldTwice();
}

// A replica bound to a node whose agent had just died, then cancelled,
// then the server restarted: the job stayed COMPLETING for ever with its
// GPUs held (operator audit). The stop is released again in the new
// server's versions, and the node's agent, back, settles it.
TEST_F(NodeFailureTest, AStopOfAReplicaNeverStartedSurvivesAServerRestart) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  agents_[0]->Kill();  // its node still looks alive for unreachableAfter
  const int64_t id = Submit("resources: {gpus: 1}\ncommand: [/bin/sleep, '30']\n");
  WaitFor([&] { return Get("/v1/jobs/" + std::to_string(id))["state"] == "RUNNING"; }, std::chrono::seconds(1));
  ASSERT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "RUNNING") << "bound to the node before it was noticed";
  Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  ASSERT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "COMPLETING");
  server_.Kill();
  ASSERT_TRUE(server_.Start()) << server_.log();
  cli_ = std::make_unique<httplib::Client>(server_.url());
  cli_->set_read_timeout(30, 0);
  agents_[0]->Start();
  const json j = WaitEnd(id, 30);
  EXPECT_EQ(j["state"], "CANCELLED") << j.dump();
  const json nodes = Get("/v1/nodes");
  for (const json& n : nodes["items"]) EXPECT_EQ(n["freeGpus"], 1) << n.dump();
}

// A second agent started with a node's name (by hand, on a cloned machine)
// ran that node's replicas a second time and killed the first agent's
// tasks through the node's cgroups (operator audit). It is refused while
// the first one syncs, and takes over once that one is silent; a second
// agent on the same state directory does not start at all.
TEST_F(NodeFailureTest, ASecondAgentForANodeIsRefusedWhileTheFirstServesIt) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const std::string pids = Tmp("pids"), overlap = Tmp("overlap");
  // Each attempt first checks that no earlier one still runs.
  const int64_t id = Submit("name: once\nresources: {gpus: 1}\ncommand: [/bin/sh, -c, 'for p in $(cat " + pids +
                            " 2>/dev/null); do kill -0 $p 2>/dev/null && echo $p >> " + overlap +
                            "; done; echo $$ >> " + pids + "; exec sleep 300']\n");
  ASSERT_TRUE(WaitProcessStarted(id, pids));
  AgentProcess same_dir(server_.url(), Name(0), server_.dir() + "/agent0");
  same_dir.flags = {"--fake-gpus", "1xH100"};
  same_dir.Start();
  AgentProcess twin(server_.url(), Name(0), server_.dir() + "/twin");
  twin.flags = {"--fake-gpus", "1xH100"};
  twin.Start();
  EXPECT_TRUE(WaitFor([&] { return same_dir.log().find("is in use by another agent (pid ") != std::string::npos; }))
      << same_dir.log();
  EXPECT_TRUE(WaitFor([&] { return twin.log().find("is served by another agent") != std::string::npos; }))
      << twin.log();
  std::ifstream in(pids);
  std::vector<pid_t> started{std::istream_iterator<pid_t>(in), {}};
  ASSERT_EQ(started.size(), 1u) << "the replica ran twice";
  EXPECT_NE(agent::ProcessStartTime(started[0]), 0) << "the twin ended the first agent's task";
  const json j = Get("/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(j["state"], "RUNNING") << j.dump();
  EXPECT_EQ(j["attempts"], 1) << j.dump();
  // The first one gone, its task fenced and the node lost, the twin takes
  // the node over and runs the job again, once.
  agents_.back()->Kill();
  const json again = WaitAttemptRunning(id, 2);
  EXPECT_EQ(again["state"], "RUNNING") << again.dump();
  WaitFor([&] { return std::count(std::istreambuf_iterator<char>(std::ifstream(pids).rdbuf()), {}, '\n') >= 2; },
          std::chrono::seconds(5));
  EXPECT_FALSE(fs::exists(overlap)) << "attempt 2 started while attempt 1 still ran";
  EXPECT_NE(twin.log().find("may take over once that one has been silent for agents.lostAfter"), std::string::npos)
      << twin.log();
  CancelAndWait(id);
  twin.Stop();
}

// Asking for logs that cannot exist says why: a job that has not run yet,
// a replica the job does not have.
TEST_F(ClusterTest, LogsThatCannotExistSayWhy) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const int64_t held = Submit("name: held\nhold: true\ncommand: [sleep, '300']\n");
  EXPECT_EQ(GetError("/v1/jobs/" + std::to_string(held) + "/logs"),
            std::make_pair(404, "job " + std::to_string(held) + " is HELD and has not run yet"));
  const int64_t running = Submit("name: one\nresources: {gpus: 1}\ncommand: [sleep, '300']\n");
  WaitState(running, "RUNNING");
  EXPECT_EQ(GetError("/v1/jobs/" + std::to_string(running) + "/logs?replica=2"),
            std::make_pair(400, "replica: job " + std::to_string(running) + " has 1 replicas (0 to 0), got 2"));
  CancelAndWait(running);
}

// Every attempt's output stays readable (why did attempt 1 fail?), not only
// the last one's.
TEST_F(ClusterTest, EachAttemptsLogCanBeRead) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const int64_t id = Submit(
      "name: twice\nretry: {limit: 1, backoff: {initial: 1s}}\n"
      "command: [/bin/sh, -c, 'echo this is attempt $MUSTER_ATTEMPT; sleep 1; echo bye $MUSTER_ATTEMPT; "
      "exit 3']\n");
  // `muster logs -f` follows the retry: the second attempt's log from its
  // start (it went on from the first one's offset, losing its beginning),
  // and the exit code says the job failed.
  const std::string out = Tmp("follow.out");
  const int rc = std::system((std::string(MUSTER_BINARY) + " logs -f " + std::to_string(id) + " --server " +
                              server_.url() + " > " + out + " 2>&1")
                                 .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  std::ifstream in(out);
  const std::string followed((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(followed.find("this is attempt 1\nbye 1\n"), std::string::npos) << followed;
  EXPECT_NE(followed.find("attempt 2\nthis is attempt 2\nbye 2\n"), std::string::npos) << followed;
  EXPECT_NE(followed.find("the job ended FAILED"), std::string::npos) << followed;
  const json j = WaitEnd(id, 60);
  ASSERT_EQ(j["attempts"], 2) << j.dump();
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/logs";
  EXPECT_EQ(Text(path + "?attempt=1"), "this is attempt 1\nbye 1\n");
  EXPECT_EQ(Text(path + "?attempt=2"), "this is attempt 2\nbye 2\n");
  EXPECT_EQ(Text(path), "this is attempt 2\nbye 2\n");
  EXPECT_EQ(GetError(path + "?attempt=3"),
            std::make_pair(404, "job " + std::to_string(id) + " has no attempt 3 (it has had 2)"));
}

}  // namespace
}  // namespace muster::testing
