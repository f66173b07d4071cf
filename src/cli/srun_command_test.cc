#include "cli/srun_command.h"

#include <gtest/gtest.h>

namespace muster::cli {
namespace {

// A job of `nodes` nodes (n1, n2, ...) with the job's own counts in its
// environment, as sbatch's tasks would have them; srun runs on n1.
SrunJob Job(int nodes, std::map<std::string, std::string> env = {}) {
  SrunJob j;
  j.job = 42;
  j.token = "msj_42_1_abc";
  for (int i = 1; i <= nodes; ++i)
    j.hosts.push_back({"n" + std::to_string(i), "10.0.0." + std::to_string(i) + ":30000"});
  j.env = std::move(env);
  j.env["PATH"] = "/usr/bin";
  j.cwd = "/work";
  j.step = 3;
  return j;
}

// "n1:0,1 n2:2,3": each node of the plan and its tasks.
std::string Layout(const SrunPlan& p) {
  std::string out;
  for (const step::StepNode& n : p.run.nodes) {
    out += (out.empty() ? "" : " ") + n.name + ":";
    for (size_t i = 0; i < n.launch.tasks.size(); ++i) {
      out += (i ? "," : "") + std::to_string(n.launch.tasks[i].id);
    }
  }
  return out;
}

std::string LayoutOf(const std::vector<std::string>& args, const SrunJob& job) {
  auto p = PlanSrun(args, job);
  return p.ok() ? Layout(*p) : "error: " + p.status().message();
}

TEST(SrunPlan, WithoutOptionsItRunsTheJobsTasksOnEveryNode) {
  const SrunJob job = Job(2, {{"SLURM_NTASKS", "16"}, {"SLURM_NTASKS_PER_NODE", "8"}});
  auto p = PlanSrun({"python", "train.py"}, job);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->run.nodes.size(), 2u);
  EXPECT_EQ(p->run.nodes[0].endpoint, "") << "srun's own node runs its tasks itself";
  EXPECT_EQ(p->run.nodes[1].endpoint, "10.0.0.2:30000");
  EXPECT_EQ(p->run.nodes[1].launch.argv, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(p->run.nodes[1].launch.tasks.front().id, 8);
  EXPECT_EQ(p->run.nodes[1].launch.tasks.front().local, 0);
  EXPECT_EQ(p->run.nodes[1].launch.node_index, 1);
  EXPECT_EQ(p->run.nodes[1].launch.cwd, "/work");
  auto& env = p->run.nodes[0].launch.env;
  EXPECT_EQ(env["SLURM_STEP_ID"], "3");
  EXPECT_EQ(env["SLURM_STEP_NUM_TASKS"], "16");
  EXPECT_EQ(env["SLURM_STEP_NUM_NODES"], "2");
  EXPECT_EQ(env["SLURM_STEP_NODELIST"], "n[1-2]");
  EXPECT_EQ(env["SLURM_STEP_TASKS_PER_NODE"], "8(x2)");
  EXPECT_EQ(env["SLURM_LAUNCH_NODE_IPADDR"], "10.0.0.1");
  EXPECT_EQ(env["PATH"], "/usr/bin") << "--export=ALL by default";
  EXPECT_EQ(p->run.key_hex, step::StepKey(job.token));
}

TEST(SrunPlan, NodesTasksAndNodeListsAreReadAsSrunReadsThem) {
  const SrunJob four = Job(4, {{"SLURM_NTASKS", "4"}, {"SLURM_NTASKS_PER_NODE", "1"}});
  EXPECT_EQ(LayoutOf({"hostname"}, four), "n1:0 n2:1 n3:2 n4:3");
  EXPECT_EQ(LayoutOf({"--nodes=1", "--ntasks=1", "-w", "n3", "hostname"}, four), "n3:0");
  EXPECT_EQ(LayoutOf({"-N2", "hostname"}, four), "n1:0 n2:1");
  EXPECT_EQ(LayoutOf({"-N", "2", "-w", "n4", "hostname"}, four), "n1:0 n4:1") << "topped up from the first";
  EXPECT_EQ(LayoutOf({"-x", "n[1-2]", "hostname"}, four), "n3:0 n4:1") << "the job's tasks, where they fit";
  EXPECT_EQ(LayoutOf({"-n", "6", "hostname"}, four), "n1:0,1 n2:2,3 n3:4 n4:5");
  EXPECT_EQ(LayoutOf({"-n", "3", "-N", "2", "hostname"}, four), "n1:0,1 n2:2");
  EXPECT_EQ(LayoutOf({"--ntasks-per-node=3", "-N", "2", "hostname"}, four), "n1:0,1,2 n2:3,4,5");
  EXPECT_EQ(LayoutOf({"-n", "2", "hostname"}, four), "n1:0 n2:1");
  const SrunJob packed = Job(2, {{"SLURM_NTASKS", "16"}, {"SLURM_NTASKS_PER_NODE", "8"}});
  EXPECT_EQ(LayoutOf({"-n", "2", "hostname"}, packed), "n1:0,1") << "one node holds both";
  EXPECT_EQ(LayoutOf({"-N", "1", "hostname"}, packed), "n1:0,1,2,3,4,5,6,7");
  EXPECT_EQ(LayoutOf({"--nodes=1-2", "-n1", "hostname"}, packed), "n1:0");
}

TEST(SrunPlan, WhatCannotApplyIsRefusedSayingWhy) {
  const SrunJob job = Job(2);
  EXPECT_EQ(LayoutOf({"-w", "n9", "x"}, job), "error: --nodelist: n9 is not a node of this job (n1,n2)");
  EXPECT_EQ(LayoutOf({"-N", "3", "x"}, job), "error: --nodes=3: this job has 2 node(s) to run it on (n1,n2)");
  EXPECT_EQ(LayoutOf({"--jobid=7", "x"}, job),
            "error: --jobid=7: this is job 42; srun starts steps of its own job only");
  EXPECT_EQ(LayoutOf({"--pty", "bash"}, job), "error: --pty is not supported inside a Muster job");
  EXPECT_EQ(LayoutOf({"--container-image=x", "bash"}, job),
            "error: --container-image is not supported inside a Muster job");
  EXPECT_EQ(LayoutOf({"-N", "1"}, job), "error: no command given to execute");
  EXPECT_EQ(LayoutOf({"--bogus", "x"}, job), "error: --bogus is not an srun option");
  EXPECT_EQ(LayoutOf({"-o", "out-%t", "x"}, job),
            "error: -o=out-%t: only %j and %s are supported in a step's file name here");
  EXPECT_EQ(LayoutOf({"--overlap", "--mpi=pmix", "-u", "--cpu-bind=none", "x"}, job), "n1:0 n2:1")
      << "binding and launcher hints change nothing here";
  EXPECT_EQ(LayoutOf({"--jobid", "42", "--overl", "x"}, job), "n1:0 n2:1") << "its own job; a prefix";
}

TEST(SrunPlan, ExportGpusAndFilesFollowTheOptions) {
  SrunJob job = Job(1, {{"SLURM_GPUS_PER_TASK", "2"}, {"DATA", "/d"}, {"SLURM_JOB_ID", "42"}});
  auto p = PlanSrun({"--export=NONE,EXTRA=1", "-c", "4", "-D", "sub", "-o", "step-%j.%s", "x"}, job);
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto& launch = p->run.nodes[0].launch;
  EXPECT_EQ(launch.gpus_per_task, 2) << "sbatch's --gpus-per-task reaches srun";
  EXPECT_EQ(launch.env.count("DATA"), 0u);
  EXPECT_EQ(launch.env.count("PATH"), 0u);
  EXPECT_EQ(launch.env["EXTRA"], "1");
  EXPECT_EQ(launch.env["SLURM_JOB_ID"], "42") << "Slurm's own variables always go along";
  EXPECT_EQ(launch.env["SLURM_CPUS_PER_TASK"], "4");
  EXPECT_EQ(launch.cwd, "/work/sub");
  EXPECT_EQ(p->output, "step-42.3");
  auto q = PlanSrun({"--gpus-per-task=a100:1", "--export=ALL,B=2", "-l", "-K", "x"}, job);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->run.nodes[0].launch.gpus_per_task, 1);
  EXPECT_EQ(q->run.nodes[0].launch.env["DATA"], "/d");
  EXPECT_EQ(q->run.nodes[0].launch.env["B"], "2");
  EXPECT_TRUE(q->run.label);
  EXPECT_TRUE(q->run.kill_on_bad_exit);
}

}  // namespace
}  // namespace muster::cli
