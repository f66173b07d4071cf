#include <poll.h>

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "step/step_env.h"
#include "step/step_wire.h"
#include "step/task_group.h"

namespace muster::step {
namespace {

TEST(StepWire, StepHostsAreReadInReplicaOrder) {
  auto hosts = ParseStepHosts("n1=10.0.0.1:31000,n2=[fe80::1]:31001");
  ASSERT_TRUE(hosts.ok()) << hosts.status().message();
  ASSERT_EQ(hosts->size(), 2u);
  EXPECT_EQ((*hosts)[1].node, "n2");
  EXPECT_EQ((*hosts)[1].endpoint, "[fe80::1]:31001");
  EXPECT_EQ(EndpointPort((*hosts)[1].endpoint), 31001);
  for (const char* bad : {"", "n1", "n1=host", "=h:1", "n1=h:0", "n1=h:1,", "n1=h:99999"}) {
    EXPECT_FALSE(ParseStepHosts(bad).ok()) << bad;
  }
}

TEST(StepWire, ALaunchRequestSurvivesTheWireAndAMalformedOneNamesItsField) {
  LaunchRequest r;
  r.step = 3;
  r.argv = {"python", "train.py"};
  r.cwd = "/work";
  r.env = {{"A", "1"}};
  r.node_index = 1;
  r.tasks = {{8, 0}, {9, 1}};
  r.gpus_per_task = 2;
  auto back = LaunchFromJson(nlohmann::json::parse(LaunchToJson(r).dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->argv, r.argv);
  EXPECT_EQ(back->tasks[1].id, 9);
  EXPECT_EQ(back->tasks[1].local, 1);
  EXPECT_EQ(back->gpus_per_task, 2);
  nlohmann::json j = LaunchToJson(r);
  j["argv"] = nlohmann::json::array();
  EXPECT_NE(LaunchFromJson(j).status().message().find("argv"), std::string::npos);
  j = LaunchToJson(r);
  j.erase("tasks");
  EXPECT_FALSE(LaunchFromJson(j).ok());
  int32_t task = 0;
  std::string_view bytes;
  const std::string frame = OutputFrame(70000, "hi\n");  // `bytes` points into it
  ASSERT_TRUE(ReadOutputFrame(frame, task, bytes));
  EXPECT_EQ(task, 70000);
  EXPECT_EQ(bytes, "hi\n");
}

TEST(StepWire, EachAttemptHasItsOwnKey) {
  EXPECT_EQ(StepKey("msj_1_1_x").size(), 64u);
  EXPECT_NE(StepKey("msj_1_1_x"), StepKey("msj_1_2_x"));
  EXPECT_EQ(StepKey("msj_1_1_x"), StepKey("msj_1_1_x"));
}

TEST(StepEnv, ATaskSeesItsNodesGpusAndItsOwnShare) {
  LaunchRequest r;
  r.env = {{"CUDA_VISIBLE_DEVICES", "GPU-first-node"}, {"SLURM_JOB_ID", "7"}, {"MUSTER_NODE", "n1"}};
  r.node_index = 1;
  r.tasks = {{2, 0}, {3, 1}};
  const std::map<std::string, std::string> node = {{"CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b,GPU-c,GPU-d"},
                                                   {"MUSTER_NODE", "n2"}};
  auto env = TaskEnvironment(r, r.tasks[1], node);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "GPU-a,GPU-b,GPU-c,GPU-d") << "the node's GPUs, not srun's";
  EXPECT_EQ(env["SLURM_PROCID"], "3");
  EXPECT_EQ(env["SLURM_LOCALID"], "1");
  EXPECT_EQ(env["SLURM_NODEID"], "1");
  EXPECT_EQ(env["SLURMD_NODENAME"], "n2");
  EXPECT_EQ(env["SLURM_GTIDS"], "2,3");
  EXPECT_EQ(env["SLURM_JOB_ID"], "7");
  r.gpus_per_task = 2;
  EXPECT_EQ(TaskEnvironment(r, r.tasks[1], node)["CUDA_VISIBLE_DEVICES"], "GPU-c,GPU-d");
  EXPECT_EQ(TaskEnvironment(r, r.tasks[0], node)["CUDA_VISIBLE_DEVICES"], "GPU-a,GPU-b");
  // A variable of srun's node that this node lacks is not passed on.
  EXPECT_EQ(TaskEnvironment(r, r.tasks[0], {}).count("CUDA_VISIBLE_DEVICES"), 0u);
}

struct Collected {
  std::map<int32_t, std::string> out, err;
  std::map<int32_t, int32_t> status;
};

Collected RunAll(TaskGroup& g, int signal_after_ms = -1, int signal = 0) {
  Collected c;
  int waited = 0;
  while (!g.Done()) {
    std::vector<pollfd> fds;
    g.AddPollFds(fds);
    ::poll(fds.data(), fds.size(), 20);
    waited += 20;
    if (signal_after_ms >= 0 && waited >= signal_after_ms) {
      g.Signal(signal);
      signal_after_ms = -1;
    }
    g.Service([&](int32_t t, int s, std::string_view b) { (s == 1 ? c.out : c.err)[t].append(b); },
              [&](int32_t t, int32_t st) { c.status[t] = st; });
  }
  return c;
}

TEST(TaskGroupTest, TasksRunWithTheirEnvironmentAndReportOutputAndStatus) {
  std::vector<TaskGroup::Task> tasks;
  for (int32_t i = 0; i < 3; ++i) {
    tasks.push_back({i, {{"PATH", "/usr/bin:/bin"}, {"SLURM_PROCID", std::to_string(i)}}});
  }
  auto g = TaskGroup::Start({"sh", "-c", "echo out $SLURM_PROCID $(pwd); echo err >&2; exit $SLURM_PROCID"}, "/tmp",
                            tasks, "n1");
  ASSERT_TRUE(g.ok()) << g.status().message();
  Collected c = RunAll(**g);
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c.out[i], "out " + std::to_string(i) + " /tmp\n");
    EXPECT_EQ(c.err[i], "err\n");
    EXPECT_EQ(c.status[i], i);
  }
}

TEST(TaskGroupTest, ACommandThatCannotRunExitsTwoSayingWhy) {
  auto g = TaskGroup::Start({"no-such-command-here"}, "/", {{0, {{"PATH", "/usr/bin:/bin"}}}}, "n4");
  ASSERT_TRUE(g.ok());
  Collected c = RunAll(**g);
  EXPECT_EQ(c.status[0], 2);
  EXPECT_NE(c.err[0].find("n4: task 0: cannot run no-such-command-here"), std::string::npos) << c.err[0];
  auto d = TaskGroup::Start({"true"}, "/no/such/dir", {{0, {{"PATH", "/usr/bin:/bin"}}}}, "n4");
  ASSERT_TRUE(d.ok());
  Collected e = RunAll(**d);
  EXPECT_EQ(e.status[0], 2);
  EXPECT_NE(e.err[0].find("cannot enter /no/such/dir"), std::string::npos) << e.err[0];
}

TEST(TaskGroupTest, ASignalReachesEveryTaskAndItsStatusSaysSo) {
  auto g = TaskGroup::Start({"sleep", "30"}, "/", {{0, {{"PATH", "/usr/bin:/bin"}}}, {1, {{"PATH", "/usr/bin:/bin"}}}},
                            "n1");
  ASSERT_TRUE(g.ok());
  Collected c = RunAll(**g, 100, SIGTERM);
  EXPECT_EQ(c.status[0], 128 + SIGTERM);
  EXPECT_EQ(c.status[1], 128 + SIGTERM);
}

}  // namespace
}  // namespace muster::step
