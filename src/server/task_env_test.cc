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

}  // namespace
}  // namespace muster::server
