#include "server/task_env.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

// A Slurm job's tasks reach its environment as Slurm counts them: 16
// tasks of 10 CPUs on 2 nodes, not 2 tasks of 80 (world sizes are
// computed from these).
TEST(TaskEnvironment, ASlurmJobSeesItsTasksAsSlurmCountsThem) {
  api::JobSpec spec;
  spec.replicas = 2;
  spec.resources.cpu_milli = 80'000;
  spec.slurm = api::SlurmSpec{};
  spec.slurm->tasks = 16;
  spec.slurm->tasks_per_node = 8;
  spec.slurm->cpus_per_task = 10;
  TaskEnvInput in;
  in.job = 7;
  in.replicas = {{"a1", "10.0.0.1"}, {"a2", "10.0.0.2"}};
  auto env = TaskEnvironment(spec, in);
  EXPECT_EQ(env["SLURM_NTASKS"], "16");
  EXPECT_EQ(env["SLURM_NTASKS_PER_NODE"], "8");
  EXPECT_EQ(env["SLURM_TASKS_PER_NODE"], "8(x2)");
  EXPECT_EQ(env["SLURM_CPUS_PER_TASK"], "10");
  EXPECT_EQ(env["SLURM_NNODES"], "2");
  spec.slurm->tasks = 3;
  spec.slurm->tasks_per_node = 2;
  env = TaskEnvironment(spec, in);
  EXPECT_EQ(env["SLURM_TASKS_PER_NODE"], "2,1") << "block distribution";
  // Without Slurm's counts: a task per replica, as before.
  spec.slurm.reset();
  env = TaskEnvironment(spec, in);
  EXPECT_EQ(env["SLURM_NTASKS"], "2");
  EXPECT_EQ(env["SLURM_CPUS_PER_TASK"], "80");
}

// Slurm's job model: replica 0 runs the script, the others a step host;
// every replica learns where the step hosts listen, and none gets the
// torchrun variables Slurm does not set.
TEST(TaskEnvironment, ASlurmJobsNodesRunTheScriptOnceAndStepHostsElsewhere) {
  api::JobSpec spec;
  spec.replicas = 2;
  spec.script = "#!/bin/bash\nsrun hostname\n";
  spec.slurm = api::SlurmSpec{};
  spec.slurm->gpus_per_task = 1;
  spec.slurm->tasks = 2;
  TaskEnvInput in;
  in.job = 7;
  in.attempt = 2;
  in.replicas = {{"a1", "10.0.0.1"}, {"a2", "fe80::2"}};
  EXPECT_FALSE(RunsStepHost(spec, 0));
  EXPECT_TRUE(RunsStepHost(spec, 1));
  EXPECT_EQ(TaskArgv(spec, 0), (std::vector<std::string>{"/bin/sh", "-c", *spec.script}));
  EXPECT_NE(TaskArgv(spec, 1)[2].find("step-host"), std::string::npos);
  in.replica = 1;
  auto env = TaskEnvironment(spec, in);
  const std::string port = std::to_string(StepPort(7, 2));
  EXPECT_EQ(env["MUSTER_STEP_HOSTS"], "a1=10.0.0.1:" + port + ",a2=[fe80::2]:" + port);
  EXPECT_EQ(env["SLURM_GPUS_PER_TASK"], "1");
  for (const char* k : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "NODE_RANK", "NNODES",
                        "LOCAL_WORLD_SIZE", "JOB_COMPLETION_INDEX"}) {
    EXPECT_EQ(env.count(k), 0u) << k;
  }
  for (int64_t job = 1; job < 5000; ++job) {
    for (int32_t attempt = 1; attempt < 4; ++attempt) {
      ASSERT_NE(StepPort(job, attempt), MasterPort(job, attempt));
      ASSERT_GE(StepPort(job, attempt), 29500);
      ASSERT_LT(StepPort(job, attempt), 32500);
    }
  }
  // A job of Muster's own model runs its command everywhere.
  spec.slurm.reset();
  EXPECT_FALSE(RunsStepHost(spec, 1));
  EXPECT_EQ(TaskEnvironment(spec, in).count("MUSTER_STEP_HOSTS"), 0u);
  EXPECT_EQ(TaskEnvironment(spec, in)["RANK"], "1");
}

}  // namespace
}  // namespace muster::server
