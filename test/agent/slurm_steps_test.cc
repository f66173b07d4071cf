// End to end: Slurm's job model on real agents. A job that sbatch submits
// holds distinct nodes; its batch script runs once, on the first; `srun` in
// it starts each step's tasks on the allocation's nodes (the others through
// their step hosts) with Slurm's per-task variables and the node's own
// GPUs, relays their output and exit, and the job ends when the script
// does (step/step_wire.h, cli/srun_command.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "../wait_for.h"
#include "cluster_fixture.h"
#include "core/job.h"
#include "dev_cluster.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class SlurmStepsTest : public ClusterFixture {
 public:
  explicit SlurmStepsTest(const char* config = kConfig) : ClusterFixture(config) {}

  // Runs a shell command in `dir` as the admin of this cluster; its exit
  // code and its output (stdout and stderr).
  std::pair<int, std::string> Shell(const std::string& dir, const std::string& command) {
    const std::string cmd = "cd " + dir + " && export MUSTER_SERVER=" + server_.url() +
                            " MUSTER_TOKEN=" + server_.admin_token() + " && " + command + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    const int status = p != nullptr ? ::pclose(p) : -1;
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  }
  // `muster sbatch --parsable ARGS` in `dir`; the job id.
  int64_t SbatchArgs(const std::string& dir, const std::string& args) {
    const auto [code, out] = Shell(dir, std::string(MUSTER_BINARY) + " sbatch --parsable " + args);
    EXPECT_EQ(code, 0) << out;
    return code == 0 ? std::atoll(out.c_str()) : 0;
  }
  // Writes `script` to DIR/job.sh and submits it.
  int64_t Sbatch(const std::string& dir, const std::string& script) {
    std::ofstream(dir + "/job.sh") << script;
    return SbatchArgs(dir, "job.sh");
  }
  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }
  static std::vector<std::string> Lines(const std::string& text, const std::string& prefix) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(prefix, 0) == 0) out.push_back(line);
    }
    return out;
  }
};

TEST_F(SlurmStepsTest, TheScriptRunsOnceAndSrunStartsEachStepsTasksOnTheAllocationsNodes) {
  AddAgent({"--fake-gpus", "4xH100"});
  AddAgent({"--fake-gpus", "4xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("steps");
  fs::create_directories(dir);
  const int64_t id = Sbatch(
      dir,
      "#!/bin/bash\n"
      "#SBATCH --job-name=steps --nodes=2 --ntasks-per-node=2 --gpus-per-task=1 --cpus-per-task=1 --mem=1G\n"
      "#SBATCH --output=" +
          dir +
          "/slurm-%j.out\n"
          "echo \"batch on $SLURMD_NODENAME$MUSTER_NODE tasks $SLURM_NTASKS\"\n"
          "nodes=( $(scontrol show hostnames \"$SLURM_JOB_NODELIST\") )\n"
          "echo \"nodes ${nodes[*]}\"\n"
          "srun -l bash -c 'echo \"task $SLURM_PROCID local $SLURM_LOCALID node $SLURM_NODEID on $SLURMD_NODENAME "
          "gpus $CUDA_VISIBLE_DEVICES step $SLURM_STEP_ID of $SLURM_NTASKS rank ${RANK:-none}\"'\n"
          "srun --nodes=1 --ntasks=1 -w \"${nodes[1]}\" bash -c 'echo \"alone on $SLURMD_NODENAME step "
          "$SLURM_STEP_ID\"'\n"
          "srun bash -c 'exit $SLURM_PROCID'\n"
          "echo \"srun exit $?\"\n");
  ASSERT_GT(id, 0);
  const json j = WaitEnd(id, 60);
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump() << Logs(id, 0) << Logs(id, 1);
  const std::string out = ReadFile(dir + "/slurm-" + std::to_string(id) + ".out");
  const std::string a = agents_[0]->name(), b = agents_[1]->name();
  // The batch script ran once, on the allocation's first node.
  ASSERT_EQ(Lines(out, "batch on ").size(), 1u) << out;
  const std::vector<std::string> nodes = Lines(out, "nodes ");
  ASSERT_EQ(nodes.size(), 1u) << out;
  const std::string first = Lines(out, "batch on ")[0].substr(9, Lines(out, "batch on ")[0].find(' ', 9) - 9);
  EXPECT_EQ(nodes[0], "nodes " + first + " " + (first == a ? b : a)) << out;
  // The first in Slurm's order: by name, whichever node the scheduler chose first.
  EXPECT_EQ(first, std::min(a, b)) << out;
  EXPECT_NE(out.find("tasks 4"), std::string::npos) << out;
  // Step 0: four tasks, two on each node, each with its own GPU of its node.
  std::set<std::string> gpus;
  for (int t = 0; t < 4; ++t) {
    static const std::regex re(
        "(\\d+): task (\\d+) local (\\d+) node (\\d+) on (\\S+) gpus (\\S+) step 0 of 4 rank none");
    const std::vector<std::string> lines = Lines(out, std::to_string(t) + ": task ");
    ASSERT_EQ(lines.size(), 1u) << out;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[0], m, re)) << lines[0];
    EXPECT_EQ(m[2], std::to_string(t));
    EXPECT_EQ(m[3], std::to_string(t % 2));
    EXPECT_EQ(m[4], std::to_string(t / 2));
    EXPECT_EQ(m[5], t < 2 ? first : (first == a ? b : a));
    EXPECT_EQ(m[6].str().find(','), std::string::npos) << "one GPU per task: " << lines[0];
    gpus.insert(m[5].str() + "/" + m[6].str());
  }
  EXPECT_EQ(gpus.size(), 4u) << out;
  // Step 1: one task on the node named; step 2: the worst exit.
  EXPECT_NE(out.find("alone on " + (first == a ? b : a) + " step 1"), std::string::npos) << out;
  EXPECT_NE(out.find("srun: error: " + first + ": task 1: Exited with exit code 1"), std::string::npos) << out;
  EXPECT_NE(out.find("srun exit 3"), std::string::npos) << out;
}

// Words after the script on sbatch's command line are its arguments, as
// Slurm passes them: with a #! line (run as a file) and without (run by sh).
TEST_F(SlurmStepsTest, AScriptGetsTheArgumentsAfterIt) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const std::string dir = Tmp("args");
  fs::create_directories(dir);
  std::ofstream(dir + "/bash.sh") << "#!/bin/bash\n#SBATCH -o " << dir
                                  << "/bash.out\necho \"$#|$1|$2|${BASH_VERSION:+bash}\"\n";
  std::ofstream(dir + "/plain.sh") << "#SBATCH -o " << dir << "/plain.out\necho \"$#|$1|$2\"\n";
  const int64_t a = SbatchArgs(dir, "bash.sh --epochs 'ten more'"), b = SbatchArgs(dir, "plain.sh one 'two words'");
  EXPECT_EQ(WaitEnd(a)["state"], "COMPLETED");
  EXPECT_EQ(WaitEnd(b)["state"], "COMPLETED");
  EXPECT_EQ(ReadFile(dir + "/bash.out"), "2|--epochs|ten more|bash\n");
  EXPECT_EQ(ReadFile(dir + "/plain.out"), "2|one|two words\n");
}

// srun passes a signal sent to it on to every task of its step, on every
// node (a script's `kill $srun_pid`, as scripts forward a checkpoint signal),
// and with -K the first task to fail ends the others.
TEST_F(SlurmStepsTest, SrunPassesSignalsOnAndKillsTheRestOnABadExit) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("signals");
  fs::create_directories(dir);
  const int64_t id = Sbatch(dir, "#!/bin/bash\n#SBATCH --nodes=2 --output=" + dir +
                                     "/out\n"
                                     "srun bash -c 'trap \"echo got USR1 on $SLURM_PROCID; exit 0\" USR1; touch " +
                                     dir +
                                     "/ready.$SLURM_PROCID; "
                                     "sleep 100 & wait' &\n"
                                     "srun_pid=$!\n"
                                     "while [ ! -e " +
                                     dir + "/ready.0 ] || [ ! -e " + dir +
                                     "/ready.1 ]; do sleep 0.1; done\n"
                                     "kill -USR1 $srun_pid\n"
                                     "wait $srun_pid\n"
                                     "echo \"first step $?\"\n"
                                     "start=$(date +%s)\n"
                                     "srun -K bash -c 'if [ $SLURM_PROCID = 1 ]; then exit 7; fi; exec sleep 100'\n"
                                     "echo \"second step $? after $(( $(date +%s) - start ))s\"\n");
  ASSERT_GT(id, 0);
  const json j = WaitEnd(id, 60);
  const std::string out = ReadFile(dir + "/out");
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump() << out;
  EXPECT_NE(out.find("got USR1 on 0"), std::string::npos) << out;
  EXPECT_NE(out.find("got USR1 on 1"), std::string::npos) << "the other node's task too: " << out;
  EXPECT_NE(out.find("first step 0"), std::string::npos) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("second step ([0-9]+) after ([0-9]+)s"))) << out;
  EXPECT_EQ(m[1], "137") << "the worst status: task 0 killed (128 + 9): " << out;
  EXPECT_LT(std::stoi(m[2]), 30) << "task 0 did not run its 100 s: " << out;
  EXPECT_NE(out.find("task 1: Exited with exit code 7"), std::string::npos) << out;
}

// --signal=SIG@TIME: SIG reaches srun's tasks on every node TIME seconds
// before the time limit, and not the batch shell (which has no trap here
// and would die of it); with B: the batch shell alone. The job runs on.
TEST_F(SlurmStepsTest, ALimitSignalReachesTheStepsOrWithBTheBatchShell) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("limit-signal");
  fs::create_directories(dir);
  // A 1-minute limit and the signal 55 s before it: 5 s after the start.
  const int64_t steps = Sbatch(dir, "#!/bin/bash\n#SBATCH --nodes=2 --time=1 --signal=USR1@55 --output=" + dir +
                                        "/steps.out\n"
                                        "echo \"start $(date +%s)\"\n"
                                        "srun bash -c 'on_usr1() { echo \"task $SLURM_PROCID got USR1 at $(date "
                                        "+%s)\"; exit 0; }; trap on_usr1 USR1; "
                                        "sleep 100 & wait'\n"
                                        "echo \"step $?\"\n");
  ASSERT_GT(steps, 0);
  const int64_t batch = Sbatch(dir, "#!/bin/bash\n#SBATCH --nodes=1 --time=1 --signal=B:SIGUSR2@55 --output=" + dir +
                                        "/batch.out\n"
                                        "trap 'echo batch got USR2; exit 0' USR2\n"
                                        "srun bash -c 'trap \"echo task got USR2; exit 1\" USR2; sleep 100' &\n"
                                        "wait\n");
  ASSERT_GT(batch, 0);
  json j = WaitEnd(steps, 60);
  std::string out = ReadFile(dir + "/steps.out");
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump() << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("start ([0-9]+)"))) << out;
  const int64_t start = std::stoll(m[1]);
  for (int t = 0; t < 2; ++t) {
    ASSERT_TRUE(std::regex_search(out, m, std::regex("task " + std::to_string(t) + " got USR1 at ([0-9]+)"))) << out;
    EXPECT_GE(std::stoll(m[1]) - start, 3) << "55 s before the 60 s limit: " << out;
    EXPECT_LE(std::stoll(m[1]) - start, 30) << out;
  }
  EXPECT_NE(out.find("step 0"), std::string::npos) << out;
  j = WaitEnd(batch, 60);
  out = ReadFile(dir + "/batch.out");
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump() << out;
  EXPECT_NE(out.find("batch got USR2"), std::string::npos) << out;
  EXPECT_EQ(out.find("task got USR2"), std::string::npos) << "B: reaches the batch shell alone: " << out;
}

// scancel --signal sends a running job a signal without cancelling it: to
// its steps' tasks on every node, or with -b to the batch shell; KILL
// cancels. `muster signal` does the same for any job.
TEST_F(SlurmStepsTest, ScancelSignalsAJobThatRunsOn) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("scancel-signal");
  fs::create_directories(dir);
  const int64_t id = Sbatch(dir, "#!/bin/bash\n#SBATCH --nodes=2 --output=" + dir +
                                     "/out\n"
                                     "trap 'echo batch got HUP' HUP\n"
                                     "srun bash -c 'trap \"echo task $SLURM_PROCID got USR2\" USR2; echo > " +
                                     dir +
                                     "/ready.$SLURM_PROCID; "
                                     "while [ ! -e " +
                                     dir +
                                     "/done ]; do sleep 0.1; done' &\n"
                                     "step=$!\n"
                                     // A trapped signal ends `wait` early: wait again while the step runs.
                                     "while kill -0 $step 2>/dev/null; do wait $step; rc=$?; done\n"
                                     "echo \"after step $rc\"\n"
                                     "sleep 300 & wait\n");
  ASSERT_GT(id, 0);
  ASSERT_FALSE(WaitFile(dir + "/ready.0").empty());
  ASSERT_FALSE(WaitFile(dir + "/ready.1").empty());
  const std::string muster = MUSTER_BINARY;
  auto [code, out] = Shell(dir, muster + " scancel --signal=USR2 " + std::to_string(id));
  EXPECT_EQ(code, 0) << out;
  auto lines = [&](const std::string& text) {
    WaitFor([&] { return ReadFile(dir + "/out").find(text) != std::string::npos; }, std::chrono::seconds(10));
    return ReadFile(dir + "/out");
  };
  // Each task says so, on either node, in whichever order their output arrives.
  EXPECT_NE(lines("task 0 got USR2").find("task 0 got USR2"), std::string::npos) << ReadFile(dir + "/out");
  EXPECT_NE(lines("task 1 got USR2").find("task 1 got USR2"), std::string::npos) << ReadFile(dir + "/out");
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "RUNNING");
  std::tie(code, out) = Shell(dir, muster + " scancel -b -s HUP " + std::to_string(id));
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(lines("batch got HUP").find("batch got HUP"), std::string::npos) << ReadFile(dir + "/out");
  EXPECT_EQ(ReadFile(dir + "/out").find("after step"), std::string::npos) << "the step still runs";
  std::ofstream(dir + "/done") << "";
  EXPECT_NE(lines("after step").find("after step 0"), std::string::npos) << ReadFile(dir + "/out");
  // What cannot reach the steps is refused, naming why; KILL cancels.
  std::tie(code, out) = Shell(dir, muster + " signal " + std::to_string(id) + " -s WINCH");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("srun passes on only"), std::string::npos) << out;
  std::tie(code, out) = Shell(dir, muster + " scancel -s KILL " + std::to_string(id));
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(WaitEnd(id, 30)["state"], "CANCELLED");
  std::tie(code, out) = Shell(dir, muster + " signal " + std::to_string(id) + " -s USR1");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("only a running job can be signalled"), std::string::npos) << out;
  // A job of Muster's own: every process of every replica by default.
  std::ofstream(dir + "/native.sh") << "#!/bin/bash\ntrap 'echo replica $MUSTER_REPLICA_INDEX got USR1 >> " + dir +
                                           "/native.out; exit 0' USR1\necho > " + dir +
                                           "/native.$MUSTER_REPLICA_INDEX\nsleep 300 & wait\n";
  std::tie(code, out) = Shell(dir, muster + " submit --replicas 2 --one-per-node native.sh");
  ASSERT_EQ(code, 0) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("([0-9]+)"))) << out;
  const std::string native = m[1];
  ASSERT_FALSE(WaitFile(dir + "/native.0").empty());
  ASSERT_FALSE(WaitFile(dir + "/native.1").empty());
  std::tie(code, out) = Shell(dir, muster + " signal " + native + " --signal USR1");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("SIGUSR1 to all on "), std::string::npos) << out;
  EXPECT_EQ(WaitEnd(std::stoll(native), 30)["state"], "COMPLETED");
  EXPECT_NE(ReadFile(dir + "/native.out").find("replica 1 got USR1"), std::string::npos)
      << ReadFile(dir + "/native.out");
}

// sbatch --wrap, a script on standard input, and --wait, which returns the
// job's exit code once it has ended, as CI pipelines use them.
TEST_F(SlurmStepsTest, SbatchWrapsACommandReadsStandardInputAndWaits) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const std::string dir = Tmp("wrap");
  fs::create_directories(dir);
  auto run = [&](const std::string& command) { return Shell(dir, command); };
  const std::string sbatch = std::string(MUSTER_BINARY) + " sbatch";
  auto [code, out] = run(sbatch + " --parsable --wait -o wrapped.out --wrap='echo wrapped; exit 3'");
  EXPECT_EQ(code, 3) << out;
  const int64_t wrapped = std::atoll(out.c_str());
  ASSERT_GT(wrapped, 0) << out;
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(wrapped))["name"], "wrap");
  EXPECT_EQ(ReadFile(dir + "/wrapped.out"), "wrapped\n") << "run once: Slurm does not retry a failed job";
  std::tie(code, out) = run("printf '#!/bin/bash\\n#SBATCH -o stdin.out\\necho from stdin\\n' | " + sbatch + " -W");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind("Submitted batch job ", 0), 0u) << out;
  EXPECT_EQ(ReadFile(dir + "/stdin.out"), "from stdin\n");
  std::tie(code, out) = run(sbatch + " --wrap=true script.sh");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("sbatch: error: script arguments not permitted with --wrap option"), std::string::npos) << out;
}

// Cancelling the job stops every step's tasks on every node, and the job
// ends as soon as they have.
TEST_F(SlurmStepsTest, ACancelEndsTheStepsTasksEverywhere) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("cancel");
  fs::create_directories(dir);
  const int64_t id = Sbatch(dir, "#!/bin/bash\n#SBATCH --nodes=2 --output=" + dir +
                                     "/out\n"
                                     "srun bash -c 'echo $$ > " +
                                     dir + "/pid.$SLURM_PROCID; exec sleep 300'\n");
  ASSERT_GT(id, 0);
  ASSERT_FALSE(WaitFile(dir + "/pid.0").empty());
  ASSERT_FALSE(WaitFile(dir + "/pid.1").empty());
  const json j = CancelAndWait(id, 30);
  EXPECT_EQ(j["state"], "CANCELLED") << j.dump();
  for (int t = 0; t < 2; ++t) {
    const pid_t pid = std::atoi(ReadFile(dir + "/pid." + std::to_string(t)).c_str());
    ASSERT_GT(pid, 0);
    EXPECT_NE(::kill(pid, 0), 0) << "task " << t << " still runs";
  }
}

// squeue, scancel, sacct and sinfo on a real cluster, as scripts use them:
// Slurm's state codes and reason names, an array's pending tasks on one
// line, cancels by id and by name, accounting of what ended.
TEST_F(SlurmStepsTest, TheQueueCommandsShowAndCancelJobsInSlurmsTerms) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("queue");
  fs::create_directories(dir);
  const std::string gang =
      "#!/bin/bash\n#SBATCH -J gang --nodes=2 --gpus-per-node=1 -t 10 -o /dev/null\nsrun sleep 300\n";
  const int64_t running = Sbatch(dir, gang);
  WaitState(running, "RUNNING");
  const int64_t waiting = Sbatch(dir, gang);
  const int64_t array = Sbatch(dir, "#!/bin/bash\n#SBATCH -J arr --array=0-2%1 -c 1 -o /dev/null\nsleep 300\n");
  WaitState(array, "RUNNING");
  WaitFor([&] { return !Get("/v1/jobs/" + std::to_string(waiting)).value("reason", "").empty(); },
          std::chrono::seconds(5));
  auto run = [&](const std::string& command) { return Shell(dir, std::string(MUSTER_BINARY) + " " + command).second; };
  const std::string r = std::to_string(running), w = std::to_string(waiting), a = std::to_string(array);
  // Slurm's order: pending first, then running.
  EXPECT_EQ(run("squeue -h -o '%i|%j|%t|%r|%D|%l'"), w + "|gang|PD|Resources|2|10:00\n" + a +
                                                         "_[1-2%1]|arr|PD|JobArrayTaskLimit|1|UNLIMITED\n" + r +
                                                         "|gang|R|None|2|10:00\n" + a + "_0|arr|R|None|1|UNLIMITED\n");
  EXPECT_EQ(run("squeue -h -r -t PD -o %i"), w + "\n" + a + "_1\n" + a + "_2\n");
  const std::string nodes = run("squeue -h -j " + r + " -o %N");
  EXPECT_EQ(nodes, run("scontrol show hostlist " + agents_[0]->name() + "," + agents_[1]->name())) << nodes;
  EXPECT_EQ(run("sinfo -h -o '%D %t'"), "2 alloc\n");
  // --start: a waiting job's start as planned, here when the running gang's limit ends.
  const std::string planned = run("squeue --start -h -j " + w + " -o %S");
  EXPECT_EQ(planned, run("squeue -h -j " + r + " -o %e")) << planned;
  EXPECT_NE(planned, "N/A\n");
  EXPECT_EQ(run("scancel " + w), "");
  EXPECT_EQ(run("scancel --name=arr"), "");
  EXPECT_EQ(run("scancel 999999"), "scancel: error: Kill job error on job id 999999: Invalid job id specified\n");
  EXPECT_EQ(WaitEnd(waiting)["state"], "CANCELLED");
  for (int64_t t = array; t < array + 3; ++t) EXPECT_EQ(WaitEnd(t)["state"], "CANCELLED");
  EXPECT_EQ(run("squeue -h -o %i"), r + "\n");
  EXPECT_EQ(run("sacct -X -P -n -a --format=JobID,JobName,State -j " + w + "," + a),
            w + "|gang|CANCELLED\n" + a + "_0|arr|CANCELLED\n" + a + "_[1-2%1]|arr|CANCELLED\n")
      << "the array's tasks that never started are one record, as in Slurm";
  EXPECT_EQ(run("sacct -o JobID,Bogus"), "sacct: error: Invalid field requested: \"Bogus\"\n");
  CancelAndWait(running);
}

// The most intervals ("start S" and "end S" lines of `log`, per task id)
// that overlap at any moment.
int MostAtOnce(const std::string& log) {
  std::vector<std::pair<double, int>> edges;
  std::istringstream in(log);
  std::string what, task;
  double at = 0;
  while (in >> what >> task >> at) edges.push_back({at, what == "start" ? 1 : -1});
  std::sort(edges.begin(), edges.end());  // an end before a start at the same instant
  int now = 0, most = 0;
  for (const auto& e : edges) most = std::max(most, now += e.second);
  return most;
}

// Acceptance (issue 25, item 4): an array's `%` limit holds. Four CPUs
// (two nodes of two) would run four of its one-CPU tasks at once; with %2
// never more than two run, and the same array without it runs more.
TEST_F(SlurmStepsTest, AnArraysPercentLimitBoundsItsTasksRunningAtOnce) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("array");
  fs::create_directories(dir);
  auto script = [&](const std::string& array, const std::string& log) {
    return "#!/bin/bash\n#SBATCH --array=" + array + " --cpus-per-task=1 --mem=100M\n#SBATCH -o " + dir +
           "/%A_%a.out\necho start $SLURM_ARRAY_TASK_ID $(date +%s.%N) >> " + log +
           "\nsleep 1.5\n"
           "echo end $SLURM_ARRAY_TASK_ID $(date +%s.%N) >> " +
           log + "\n";
  };
  const int64_t limited = Sbatch(dir, script("0-5%2", dir + "/limited.log"));
  ASSERT_GT(limited, 0);
  for (int64_t id = limited; id < limited + 6; ++id) {
    const json j = WaitEnd(id, 60);
    EXPECT_EQ(j["state"], "COMPLETED") << j.dump();
  }
  const std::string log = ReadFile(dir + "/limited.log");
  EXPECT_EQ(Lines(log, "end ").size(), 6u) << log;
  EXPECT_EQ(MostAtOnce(log), 2) << "at most two at once, and two do run together: " << log;
  const int64_t open = Sbatch(dir, script("0-5", dir + "/open.log"));
  ASSERT_GT(open, 0);
  for (int64_t id = open; id < open + 6; ++id) WaitEnd(id, 60);
  EXPECT_GT(MostAtOnce(ReadFile(dir + "/open.log")), 2) << "without the limit the same array runs wider";
}

// As Slurm: afterok on an array's id waits for every task of it, and
// aftercorr pairs each task with the task of the same index. Task 1 of
// array A runs until the test lets it end; task 0 (the array's id) ends at
// once.
TEST_F(SlurmStepsTest, ArrayDependenciesWaitForEveryTaskOrTheirPartner) {
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(1);
  const std::string dir = Tmp("array_deps");
  fs::create_directories(dir);
  const std::string log = dir + "/order.log";
  auto script = [&](const std::string& name, const std::string& body) {
    std::ofstream(dir + "/" + name) << "#!/bin/bash\n#SBATCH --cpus-per-task=1 --mem=100M -o " + dir +
                                           "/%x-%A_%a.out\n" + body;
    return name;
  };
  const int64_t a = SbatchArgs(dir, "--array=0-1 " + script("a.sh",
                                                            "if [ \"$SLURM_ARRAY_TASK_ID\" = 1 ]; then\n"
                                                            "  for i in $(seq 600); do [ -e " +
                                                                dir +
                                                                "/release ] && break; sleep 0.1; done\nfi\n"
                                                                "echo A$SLURM_ARRAY_TASK_ID end >> " +
                                                                log + "\n"));
  ASSERT_GT(a, 0);
  const int64_t b =
      SbatchArgs(dir, "-d afterok:" + std::to_string(a) + " " + script("b.sh", "echo B start >> " + log + "\n"));
  const int64_t c = SbatchArgs(dir, "--array=0-1 -d aftercorr:" + std::to_string(a) + " " +
                                        script("c.sh", "echo C$SLURM_ARRAY_TASK_ID start >> " + log + "\n"));
  ASSERT_GT(b, 0);
  ASSERT_GT(c, 0);
  // C's task 0 follows A's task 0 alone: it ends while A's task 1 still runs.
  EXPECT_EQ(WaitEnd(c)["state"], "COMPLETED");
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(a + 1))["state"], "RUNNING");
  for (const int64_t waiting : {b, c + 1}) {
    const json j = Get("/v1/jobs/" + std::to_string(waiting));
    EXPECT_EQ(j["state"], "PENDING") << j.dump();
    EXPECT_EQ(j["reason"], "Dependency") << j.dump();
  }
  std::ofstream(dir + "/release") << "";
  for (const int64_t id : {a + 1, b, c + 1}) EXPECT_EQ(WaitEnd(id)["state"], "COMPLETED") << id;
  const std::string order = ReadFile(log);
  EXPECT_LT(order.find("C0 start"), order.find("A1 end")) << order;
  EXPECT_LT(order.find("A1 end"), order.find("B start")) << order;
  EXPECT_LT(order.find("A1 end"), order.find("C1 start")) << order;
  EXPECT_NE(order.find("C1 start"), std::string::npos) << order;
  // aftercorr asks for an array of its own.
  const auto [code, out] =
      Shell(dir, std::string(MUSTER_BINARY) + " sbatch -d aftercorr:" + std::to_string(a) + " b.sh");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("this job is no array"), std::string::npos) << out;
}

class SlurmPartitionsTest : public SlurmStepsTest {
 protected:
  SlurmPartitionsTest()
      : SlurmStepsTest(R"(
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s}
slurm:
  partitions: {batch: {queue: default}, hopper: {features: [h100]}, empty: {features: [b200]}}
)") {}
};

// sinfo shows the server's partitions (slurm.partitions), each over the
// nodes with its features; a job's -p takes the partition's nodes.
TEST_F(SlurmPartitionsTest, SinfoShowsTheServersPartitionsOverTheirNodes) {
  AddAgent({"--fake-gpus", "1xH100", "--feature", "h100"});
  AddAgent({"--fake-gpus", "1xL40S"});
  WaitNodes(2);
  const std::string dir = Tmp("partitions");
  fs::create_directories(dir);
  auto run = [&](const std::string& command) { return Shell(dir, std::string(MUSTER_BINARY) + " " + command).second; };
  const std::string h = agents_[0]->name(), l = agents_[1]->name();
  std::string both = run("scontrol show hostlist " + h + "," + l);
  ASSERT_FALSE(both.empty());
  both.pop_back();
  EXPECT_EQ(run("sinfo -h -o '%P %D %t %N'"), "batch* 2 idle " + both + "\nempty 0 n/a \nhopper 1 idle " + h + "\n");
  EXPECT_EQ(run("sinfo -h -N -p hopper -o '%N %P'"), h + " hopper\n");
  const int64_t id = Sbatch(dir, "#!/bin/bash\n#SBATCH -p hopper -o /dev/null\nsleep 300\n");
  ASSERT_GT(id, 0);
  ASSERT_EQ(WaitState(id, "RUNNING")["state"], "RUNNING");
  EXPECT_EQ(run("squeue -h -o '%P %N'"), "hopper " + h + "\n");
  CancelAndWait(id);
}

// An admin reserves a node for a window; sbatch --reservation runs there,
// and nothing else that would run into the window does.
TEST_F(SlurmStepsTest, AReservationsJobsRunOnItsNodesAndOthersKeepOff) {
  AddAgent({"--fake-gpus", "1xH100"});
  AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(2);
  const std::string dir = Tmp("reservation");
  fs::create_directories(dir);
  auto run = [&](const std::string& command) { return Shell(dir, std::string(MUSTER_BINARY) + " " + command); };
  const std::string kept = agents_[1]->name(), open = agents_[0]->name();
  const std::string me = Get("/v1/whoami").value("user", "");
  ASSERT_FALSE(me.empty());
  auto [code, out] = run("reservation create maint --nodes " + kept + " --duration 1h --users " + me);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("reservation maint: " + kept + " from "), std::string::npos) << out;
  std::tie(code, out) = run("reservation create again --nodes " + kept + " --duration 1h --queues default");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("node " + kept + " is in reservation maint"), std::string::npos) << out;
  std::tie(code, out) = run("reservation list");
  EXPECT_NE(out.find("maint"), std::string::npos) << out;
  // The same as Slurm admins make and read them.
  std::tie(code, out) =
      run("scontrol create reservation ReservationName=later StartTime=now+2hours Duration=60 "
          "Nodes=" +
          open + " Accounts=default");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "Reservation created: later\n");
  std::tie(code, out) = run("scontrol show reservation later");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind("ReservationName=later StartTime=", 0), 0u) << out;
  EXPECT_NE(out.find(" Duration=01:00:00\n   Nodes=" + open + " NodeCnt=1 "), std::string::npos) << out;
  EXPECT_NE(out.find("   Users=(null) Groups=(null) Accounts=default Licenses=(null) State=INACTIVE"),
            std::string::npos)
      << out;
  std::tie(code, out) = run("scontrol delete ReservationName=later");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(run("scontrol show reservation later").second, "scontrol: error: Reservation later not found\n");
  // An unlimited job takes the open node's GPU; the next waits for it, not
  // taking the reserved node's.
  const int64_t other = Sbatch(dir, "#!/bin/bash\n#SBATCH --gpus-per-node=1 -o /dev/null\nsleep 300\n");
  ASSERT_EQ(WaitState(other, "RUNNING")["state"], "RUNNING");
  EXPECT_EQ(run("squeue -h -j " + std::to_string(other) + " -o %N").second, open + "\n");
  const int64_t waits = Sbatch(dir, "#!/bin/bash\n#SBATCH --gpus-per-node=1 -o /dev/null\nsleep 300\n");
  // The reservation's job runs on its node.
  const int64_t member = Sbatch(dir, "#!/bin/bash\n#SBATCH --reservation=maint -t 10 -o " + dir +
                                         "/member.out\n"
                                         "echo on $MUSTER_NODE\n");
  EXPECT_EQ(WaitEnd(member, 30)["state"], "COMPLETED");
  EXPECT_EQ(ReadFile(dir + "/member.out"), "on " + kept + "\n");
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(waits))["state"], "PENDING") << "the reserved node is not its";
  EXPECT_EQ(run("squeue -h -t all -j " + std::to_string(member) + "," + std::to_string(waits) + " -o '%i %v'").second,
            std::to_string(waits) + " (null)\n" + std::to_string(member) + " maint\n");
  // Refused at submit: a reservation that does not exist, or is not for the job.
  std::tie(code, out) = run("sbatch --reservation=nope --wrap=true");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("no reservation \"nope\" (known: maint)"), std::string::npos) << out;
  std::tie(code, out) = run("reservation delete maint");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(WaitState(waits, "RUNNING")["state"], "RUNNING") << "the node is open again";
  EXPECT_EQ(run("squeue -h -j " + std::to_string(waits) + " -o %N").second, kept + "\n");
  // A maintenance window over every node: refused while jobs would run
  // into it, unless IGNORE_JOBS lets them run on.
  const std::string maint =
      "scontrol create reservation ReservationName=mx StartTime=now Duration=30 Nodes=ALL Users=root";
  std::tie(code, out) = run(maint);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find(" with no time limit, after the window starts; wait for it, cancel it, or give flags IGNORE_JOBS"),
            std::string::npos)
      << out;
  std::tie(code, out) = run(maint + " Flags=DAILY");
  EXPECT_NE(out.find("must be IGNORE_JOBS, MAINT or OVERLAP, got \"DAILY\""), std::string::npos) << out;
  std::tie(code, out) = run(maint + " Flags=MAINT,IGNORE_JOBS");
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = run("scontrol show reservation mx");
  EXPECT_NE(out.find(" NodeCnt=2 "), std::string::npos) << out;
  EXPECT_NE(out.find(" Flags=MAINT,IGNORE_JOBS,SPEC_NODES,ALL_NODES\n"), std::string::npos) << out;
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(other))["state"], "RUNNING") << "ignored jobs run on";
  CancelAndWait(other);
  CancelAndWait(waits);
}

// Acceptance (issue 25, item 4): a node lost under an sbatch allocation
// requeues it whole. The node's agent dies; its step host is fenced at the
// lease, the step and the script fail on the first node, and once the node
// is declared lost the attempt ends NODE_FAIL (no retry spent) and the
// whole allocation, batch script and both nodes' tasks, runs again
// elsewhere. Nothing of the first attempt outlives it.
class SlurmNodeLossTest : public SlurmStepsTest {
 protected:
  SlurmNodeLossTest()
      : SlurmStepsTest(R"(
allowPlainHttp: true
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s, unreachableAfter: 1s, lease: 2s, lostAfter: 5s}
)") {}
};

TEST_F(SlurmNodeLossTest, ALostNodeRequeuesTheWholeAllocation) {
  for (int i = 0; i < 3; ++i) AddAgent({"--fake-gpus", "1xH100"});
  WaitNodes(3);
  const std::string dir = Tmp("lost");
  fs::create_directories(dir);
  const int64_t id = Sbatch(dir, "#!/bin/bash\n#SBATCH --nodes=2 --output=" + dir +
                                     "/out-%j\n"
                                     "echo \"batch $MUSTER_ATTEMPT\" >> " +
                                     dir +
                                     "/batches\n"
                                     "srun bash -c 'echo $$ >> " +
                                     dir + "/tasks.$MUSTER_ATTEMPT; exec sleep 300'\n");
  ASSERT_GT(id, 0);
  json j = WaitState(id, "RUNNING");
  WaitFor([&] { return Lines(ReadFile(dir + "/tasks.1"), "").size() >= 2; }, std::chrono::seconds(30));
  const std::vector<std::string> first = Lines(ReadFile(dir + "/tasks.1"), "");
  ASSERT_EQ(first.size(), 2u) << ReadFile(dir + "/out-" + std::to_string(id));
  j = Get("/v1/jobs/" + std::to_string(id));
  const std::string second_node = j["allocations"][1]["node"];
  for (auto& a : agents_) {
    if (a->name() == second_node) a->Kill();
  }
  j = WaitAttemptRunning(id, 2);
  ASSERT_EQ(j["state"], "RUNNING") << j.dump();
  EXPECT_EQ(j["attemptHistory"][0]["result"], "NODE_FAIL") << j.dump();
  EXPECT_EQ(j["retries"], 0) << j.dump();
  WaitFor([&] { return Lines(ReadFile(dir + "/tasks.2"), "").size() >= 2; }, std::chrono::seconds(30));
  EXPECT_EQ(Lines(ReadFile(dir + "/tasks.2"), "").size(), 2u) << "both nodes' tasks again";
  EXPECT_EQ(ReadFile(dir + "/batches"), "batch 1\nbatch 2\n") << "the script once per attempt";
  for (const json& a : j["allocations"]) EXPECT_NE(a["node"], second_node) << j.dump();
  for (const std::string& pid : first) {
    EXPECT_NE(::kill(std::atoi(pid.c_str()), 0), 0) << "a task of the first attempt still runs: " << pid;
  }
  CancelAndWait(id, 30);
}

// Acceptance (issue 25, item 2): a two-node script in the torchrun-under-
// srun style, as published Slurm scripts launch PyTorch (the master's
// address from `scontrol show hostnames` and `srun hostname --ip-address`,
// `srun torchrun` with the c10d rendezvous), runs unchanged on `muster dev`
// and ends with the accuracy of the native two-replica job.
TEST(SlurmOnDev, ATorchrunUnderSrunScriptEndsWithTheNativeJobsAccuracy) {
  if (std::system("/usr/bin/python3 -c 'import torch, sklearn' >/dev/null 2>&1") != 0 ||
      !fs::exists("/usr/bin/torchrun")) {
    GTEST_SKIP() << "needs python3-torch (with /usr/bin/torchrun) and python3-sklearn";
  }
  const std::string dir = ::testing::TempDir() + "/muster_dev_slurm_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir + "/work");
  DevClusterProcess cluster(dir, {"--nodes", "2"});
  const int port = cluster.Port();
  ASSERT_GT(port, 0) << cluster.Output();
  const std::string server = "http://127.0.0.1:" + std::to_string(port);
  const std::string token = cluster.Token(port);
  ASSERT_FALSE(token.empty()) << "muster dev wrote no credential";
  httplib::Client c("127.0.0.1", port);
  c.set_default_headers({{"Authorization", "Bearer " + token}});
  auto get = [&](const std::string& path) {
    auto r = c.Get(path);
    return r && r->status == 200 ? json::parse(r->body) : json();
  };
  WaitFor([&] { return get("/v1/nodes")["items"].size() >= 2; }, std::chrono::seconds(30));
  auto wait_end = [&](int64_t id) {
    json j;
    WaitFor([&] { return core::IsTerminalName((j = get("/v1/jobs/" + std::to_string(id))).value("state", "")); },
            std::chrono::seconds(300), std::chrono::milliseconds(100));
    return j;
  };
  const std::string example = fs::absolute("examples/ddp_digits.py").string();

  // The native way: two replicas, one process each.
  auto posted = c.Post("/v1/jobs",
                       "name: native\nreplicas: 2\nresources: {cpus: 1, memory: 2Gi}\nenv: {EPOCHS: '20'}\n"
                       "command: [/usr/bin/python3, " +
                           example + "]\n",
                       "application/yaml");
  ASSERT_TRUE(posted && posted->status == 201) << (posted ? posted->body : "no answer");
  const int64_t native = json::parse(posted->body)["id"].get<int64_t>();
  const json n = wait_end(native);
  ASSERT_EQ(n["state"], "COMPLETED") << n.dump();
  auto log = [&](int64_t id) {
    auto r = c.Get("/v1/jobs/" + std::to_string(id) + "/logs?replica=0");
    return r ? r->body : std::string();
  };
  static const std::regex accuracy("rank 0/2: test accuracy ([0-9.]+) weights checksum ([-0-9.]+)");
  std::smatch m;
  const std::string native_log = log(native);
  ASSERT_TRUE(std::regex_search(native_log, m, accuracy)) << native_log;
  const double expected = std::stod(m[1].str());
  const std::string expected_checksum = m[2].str();

  // The Slurm way, as it would run on a Slurm cluster.
  std::ofstream(dir + "/work/digits.sbatch") << R"(#!/bin/bash
#SBATCH --job-name=digits-ddp
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=00:10:00
#SBATCH --output=%x-%j.out

nodes=( $(scontrol show hostnames "$SLURM_JOB_NODELIST") )
head_node=${nodes[0]}
head_node_ip=$(srun --nodes=1 --ntasks=1 -w "$head_node" hostname --ip-address | awk '{print $1}')
echo "head node $head_node at $head_node_ip"
port=$((20000 + SLURM_JOB_ID % 10000))

export EPOCHS=20 PYTHONUNBUFFERED=1
# Debian's torchrun wants its workers' output redirected (--redirects, --tee).
srun /usr/bin/torchrun --nnodes 2 --nproc_per_node 1 --redirects 1 --tee 1 \
  --rdzv_id "$SLURM_JOB_ID" --rdzv_backend c10d --rdzv_endpoint "$head_node_ip:$port" \
  )" << example << "\n";
  const std::string sbatch = "cd " + dir + "/work && MUSTER_SERVER=" + server + " MUSTER_TOKEN=" + token + " " +
                             MUSTER_BINARY + " sbatch --parsable digits.sbatch 2>&1";
  FILE* p = ::popen(sbatch.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256] = {};
  const std::string printed = std::fgets(buf, sizeof buf, p) != nullptr ? buf : "";
  ASSERT_EQ(::pclose(p), 0) << printed;
  const int64_t id = std::atoll(printed.c_str());
  const json j = wait_end(id);
  const std::string out = SlurmStepsTest::ReadFile(dir + "/work/digits-ddp-" + std::to_string(id) + ".out");
  ASSERT_EQ(j["state"], "COMPLETED") << j.dump() << out;
  EXPECT_NE(out.find("head node "), std::string::npos) << out;
  ASSERT_TRUE(std::regex_search(out, m, accuracy)) << out;
  EXPECT_NEAR(std::stod(m[1].str()), expected, 0.01) << out;
  // The same training, the same data shards by rank: the same weights.
  EXPECT_EQ(m[2].str(), expected_checksum) << out;
  std::printf("torchrun under srun: test accuracy %s (checksum %s); native two replicas: %.4f (checksum %s)\n",
              m[1].str().c_str(), m[2].str().c_str(), expected, expected_checksum.c_str());
  EXPECT_EQ(cluster.Stop(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace muster::testing
