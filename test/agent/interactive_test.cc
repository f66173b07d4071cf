// End to end: `muster run --interactive` on a busy cluster. Every GPU is
// held (normal work on one node, best-effort work on the other) and
// hundreds of batch jobs, a reserved gang among them, wait ahead of it; the
// interactive job still starts at once, stopping one best-effort job well
// inside that job's minimum run time, and its terminal works: a real
// pseudo-terminal in the job's allocation, its GPU, its exit status.
//
// How soon it starts is measured, not asserted: the test prints it, and
// bench/interactive_start.sh reports it (docs/benchmarks.md).
#include <gtest/gtest.h>

#include <fstream>

#include "../run_binary.h"
#include "../wait_for.h"
#include "cluster_fixture.h"

namespace muster::testing {
namespace {

using nlohmann::json;

class InteractiveTest : public ClusterFixture {
 protected:
  // The defaults but for a short grace and no rate limit: minRunTime is 5
  // minutes, far longer than this test.
  InteractiveTest() : ClusterFixture(kConfig) {}

  // `muster run --interactive` with `input` on stdin; its exit code and output.
  CommandResult Run(const std::string& flags, const std::string& input) {
    const std::string in = server_.dir() + "/stdin";
    std::ofstream(in) << input;
    return RunCommand("MUSTER_SERVER=" + server_.url() + " MUSTER_MUNGE_SOCKET=none " + MUSTER_BINARY +
                      " run --interactive " + flags + " < " + in);
  }
  int32_t CountEvents(int64_t id, const std::string& type) {
    int32_t n = 0;
    for (const json& e : Events(id)) n += e["type"] == type;
    return n;
  }
  // The interactive job of this run: the newest job named `name`.
  json Newest(const std::string& name) {
    const json items = Get("/v1/jobs?order=newest&limit=1&name=" + name)["items"];
    return items.empty() ? json() : items[0];
  }
};

TEST_F(InteractiveTest, StartsAtOnceOnABusyClusterAndItsTerminalWorks) {
  AddAgent({"--fake-gpus", "4xH100"});
  AddAgent({"--fake-gpus", "4xH100"});
  WaitNodes(2);
  // Normal work on one node, four best-effort jobs on the other.
  const int64_t normal = Submit("name: normal\nresources: {gpus: 4}\ncommand: [sleep, '600']\n");
  std::vector<int64_t> low;
  for (int i = 0; i < 4; ++i) {
    low.push_back(
        Submit("name: low\npriority: low\nresources: {gpus: 1}\n"
               "command: [/bin/sh, -c, 'trap \"exit 0\" TERM; while :; do sleep 0.05; done']\n"));
  }
  WaitState(normal, "RUNNING");
  for (int64_t id : low) WaitState(id, "RUNNING");
  // A queue ahead of it: a gang with a reservation and 300 batch jobs.
  const int64_t gang = Submit("name: gang\nreplicas: 2\nresources: {gpus: 4}\ntimeLimit: 1h\ncommand: [sleep, '1']\n");
  std::string many = "name: queued\nresources: {gpus: 4}\ntimeLimit: 2h\narray: 300\ncommand: [sleep, '1']\n";
  Submit(many);

  // A command on the terminal: its GPU, its terminal, its status.
  CommandResult r = Run("--gpus 1 --name shell-a -- /bin/sh -c 'echo gpus=$CUDA_VISIBLE_DEVICES; tty; exit 5'", "");
  EXPECT_EQ(r.code, 5) << r.out;
  EXPECT_NE(r.out.find("gpus=GPU-"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/dev/pts/"), std::string::npos) << r.out;
  const json a = Newest("shell-a");
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a["priority"], "interactive");
  const int64_t a_id = a["id"];
  const json a_end = WaitEnd(a_id);
  EXPECT_EQ(a_end["state"], "FAILED") << a_end.dump();  // as its shell exited: 5
  EXPECT_TRUE(HasEvent(Events(a_id), "Preempting", "stopping job")) << Events(a_id).dump();

  // The user's shell, fed from stdin: it runs the lines and ends at its end.
  r = Run("--gpus 1 --name shell-b", "echo in-shell-$((40+2))\n");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("in-shell-42"), std::string::npos) << r.out;
  const json b = Newest("shell-b");
  ASSERT_TRUE(b.is_object());
  const json b_end = WaitEnd(b["id"]);
  EXPECT_EQ(b_end["state"], "COMPLETED") << b_end.dump();

  // Best-effort work paid for both, well inside its 5-minute minimum run
  // time; the normal job, the gang and the batch jobs were not touched and
  // still wait.
  int32_t preempted = 0;
  for (int64_t id : low) {
    preempted += CountEvents(id, "Preempted");
    // Each session started (and ended within milliseconds): no preemption
    // lapsed, so no victim is wrongly made immune.
    EXPECT_EQ(CountEvents(id, "PreemptionLapsed"), 0) << Events(id).dump();
  }
  EXPECT_GE(preempted, 1);
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(normal))["state"], "RUNNING");
  EXPECT_EQ(CountEvents(normal, "Preempted"), 0);
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(gang))["state"], "PENDING");
  EXPECT_GE(Get("/v1/jobs?state=PENDING&limit=1000&name=queued")["items"].size(), 299u);
  for (const json& j : {a_end, b_end}) {
    std::cout << "[ measured ] job " << j["name"].get<std::string>() << " started "
              << Millis(j["startTime"]) - Millis(j["submitTime"]) << " ms after its submit\n";
  }
}

TEST_F(InteractiveTest, ALimitAboveTheClassMaximumIsRefusedNamingTheField) {
  const CommandResult r = Run("--gpus 1 -t 9h", "");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("timeLimit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("above the maximum of class interactive (8h"), std::string::npos) << r.out;
}

TEST_F(InteractiveTest, InterruptingTheWaitCancelsTheJob) {
  // No node: the job can only wait. SIGINT to the CLI, as ^C at a terminal.
  const std::string cmd =
      "MUSTER_SERVER=" + server_.url() + " MUSTER_MUNGE_SOCKET=none " + MUSTER_BINARY +
      " run --interactive --gpus 1 --name waiter < /dev/null 2>&1 & pid=$!; sleep 2; kill -INT $pid; "
      "wait $pid";
  const CommandResult r = RunCommand(cmd);
  EXPECT_EQ(r.code, 130) << r.out;
  EXPECT_NE(r.out.find("cancelled"), std::string::npos) << r.out;
  const json j = Newest("waiter");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["state"], "CANCELLED") << j.dump();
}

// A class's preemptGrace bounds how long its jobs wait for a victim: a
// best-effort job that ignores its stop signal and would have 5 minutes to
// checkpoint gets 1 s, then SIGKILL.
class InteractiveGraceTest : public ClusterFixture {
 protected:
  InteractiveGraceTest()
      : ClusterFixture(R"(
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s}
priorityClasses:
  - {name: low, weight: 0, preemptible: true}
  - {name: normal, weight: 10000}
  - {name: interactive, weight: 30000, interactive: true, preemptGrace: 1s}
)") {}
};

TEST_F(InteractiveGraceTest, AVictimThatIgnoresItsSignalIsKilledAfterTheClassGrace) {
  AddAgent({"--fake-gpus", "2xH100"});
  WaitNodes(1);
  // It ignores every signal until the test lets it go (its requeued attempt
  // may be running when the test ends, and would hold a cancel 5 minutes).
  const std::string go = Tmp("go");
  const int64_t low = Submit(
      "name: stubborn\npriority: low\nresources: {gpus: 2}\n"
      "checkpoint: {dir: /tmp, gracePeriod: 5m}\n"
      "command: [/bin/sh, -c, 'trap \"\" TERM USR1; echo up; while [ ! -e " +
      go + " ]; do sleep 0.05; done']\n");
  WaitState(low, "RUNNING");
  WaitFor([&] { return Logs(low).find("up") != std::string::npos; }, std::chrono::seconds(10));
  // A minute is far more than the 1 s cut and far less than the victim's 5
  // minutes: without the cut the session cannot start in it.
  const CommandResult r = RunCommand("MUSTER_SERVER=" + server_.url() + " MUSTER_MUNGE_SOCKET=none timeout 60 " +
                                     MUSTER_BINARY + " run --interactive --gpus 2 -- /bin/echo started < /dev/null");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("started"), std::string::npos) << r.out;
  const json victim = Get("/v1/jobs/" + std::to_string(low));
  ASSERT_TRUE(victim["attemptHistory"].is_array() && !victim["attemptHistory"].empty()) << victim.dump();
  const std::string result = victim["attemptHistory"][0]["replicas"][0]["result"];
  EXPECT_NE(result.find("signal 9"), std::string::npos) << victim.dump();
  std::ofstream(go) << "go\n";
  CancelAndWait(low);
}

}  // namespace
}  // namespace muster::testing
