// End to end: a high-class job preempts a low-class one on real agents. The
// victim gets its checkpoint signal and grace period, goes back to the queue
// with its submit time and no retry spent, and runs again once the
// preemptor is done; a victim whose preemptor never started is not
// evicted again.
#include <gtest/gtest.h>

#include "cluster_fixture.h"

namespace muster::testing {
namespace {

using nlohmann::json;

class PreemptionTest : public ClusterFixture {
 protected:
  PreemptionTest()
      : ClusterFixture(R"(
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s}
scheduler: {preemption: {minRunTime: 1s}}
queues: [{name: team-a, guarantee: 2}]
)") {}

  // A low-class job on both GPUs that notes its stop signal, waits `linger`
  // seconds (its checkpoint) and exits 0.
  int64_t SubmitLow(const std::string& name, const std::string& linger = "0") {
    return Submit("name: " + name + "\npriority: low\nresources: {gpus: 2}\n" +
                  "checkpoint: {dir: /tmp, gracePeriod: 20s}\n" +
                  "command: [/bin/sh, -c, 'trap \"echo stop-signal; sleep " + linger +
                  "; exit 0\" USR1; echo up; while :; do sleep 0.05; done']\n");
  }
  void WaitLog(int64_t id, const std::string& text) {
    for (int i = 0; i < 1500 && Logs(id).find(text) == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_NE(Logs(id).find(text), std::string::npos) << Logs(id);
  }
  int32_t CountEvents(int64_t id, const std::string& type) {
    int32_t n = 0;
    for (const json& e : Events(id)) n += e["type"] == type;
    return n;
  }
};

TEST_F(PreemptionTest, AHighJobPreemptsALowOneWhichComesBackWithItsAgeAndNoRetrySpent) {
  AddAgent({"--fake-gpus", "2xH100"});
  WaitNodes(1);
  const int64_t low = SubmitLow("low");
  const json before = WaitState(low, "RUNNING");
  ASSERT_NO_FATAL_FAILURE(WaitLog(low, "up"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past minRunTime
  const int64_t high = Submit("name: high\npriority: high\nresources: {gpus: 1}\ncommand: [sleep, '1']\n");

  const json h = WaitEnd(high, 60);
  EXPECT_EQ(h["state"], "COMPLETED") << h.dump();
  EXPECT_TRUE(HasEvent(Events(high), "Preempting", "stopping job " + std::to_string(low))) << Events(high).dump();
  const json l = WaitState(low, "RUNNING", 60);
  EXPECT_EQ(l["attempts"], 2) << l.dump();
  EXPECT_EQ(l["retries"], 0) << l.dump();
  EXPECT_EQ(l["submitTime"], before["submitTime"]) << "a preempted job keeps its age";
  EXPECT_EQ(l["priority"], "low");
  const json& first = l["attemptHistory"][0];
  EXPECT_EQ(first["result"], "REQUEUED") << l.dump();
  EXPECT_NE(first["reason"].get<std::string>().find("Preempted: for job " + std::to_string(high)), std::string::npos)
      << l.dump();
  ASSERT_NO_FATAL_FAILURE(WaitLog(low, "up"));  // attempt 2 really runs
  EXPECT_TRUE(HasEvent(Events(low), "Preempted", "for job " + std::to_string(high))) << Events(low).dump();
  // The preemptor started only after the victim had stopped (RFC 3339
  // times of one format compare as strings).
  EXPECT_GE(Millis(h["startTime"]), Millis(first["endTime"])) << h.dump() << l.dump();
  CancelAndWait(low);
}

TEST_F(PreemptionTest, AVictimWhosePreemptorDidNotStartIsNotEvictedAgain) {
  AddAgent({"--fake-gpus", "2xH100"});
  WaitNodes(1);
  // The victim takes 3 s to checkpoint: the first preemptor is cancelled meanwhile.
  const int64_t low = SubmitLow("low", "3");
  WaitState(low, "RUNNING");
  ASSERT_NO_FATAL_FAILURE(WaitLog(low, "up"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const int64_t first = Submit("name: p1\npriority: high\nresources: {gpus: 2}\ncommand: [sleep, '1']\n");
  ASSERT_NO_FATAL_FAILURE(WaitLog(low, "stop-signal"));
  EXPECT_EQ(CancelAndWait(first)["state"], "CANCELLED");

  // The victim finishes its stop, is requeued and runs again; the lapsed
  // preemption makes it immune.
  for (int i = 0; i < 1500 && Get("/v1/jobs/" + std::to_string(low)).value("attempts", 0) < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  WaitState(low, "RUNNING", 60);
  EXPECT_TRUE(HasEvent(Events(low), "PreemptionLapsed", "job " + std::to_string(first))) << Events(low).dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past minRunTime again

  const int64_t second = Submit("name: p2\npriority: high\nresources: {gpus: 2}\ncommand: [sleep, '1']\n");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const json l = Get("/v1/jobs/" + std::to_string(low));
  EXPECT_EQ(l["state"], "RUNNING") << l.dump();
  EXPECT_EQ(l["attempts"], 2) << l.dump();
  EXPECT_EQ(CountEvents(low, "Preempted"), 1) << Events(low).dump();
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(second))["state"], "PENDING");
  // Once that attempt ends, it may be preempted again: the pending high job starts.
  Post("/v1/jobs/" + std::to_string(low) + "/requeue", "", "application/json");
  EXPECT_EQ(WaitEnd(second, 60)["state"], "COMPLETED");
  CancelAndWait(low);
}

// Queue team-a is guaranteed 2 GPUs and idle; team-b borrows both with a
// job of the preemptible class low. When team-a needs its guarantee (with a
// job of class normal, which may not preempt by class), team-b's job gets
// its checkpoint signal and team-a's job runs within the victim's grace
// period plus one cycle.
TEST_F(PreemptionTest, AQueueReclaimsItsGuaranteeFromABorrower) {
  AddAgent({"--fake-gpus", "2xH100"});
  WaitNodes(1);
  const int64_t borrower = Submit("name: b\nqueue: team-b\npriority: low\nresources: {gpus: 2}\ncheckpoint: {dir: /tmp, gracePeriod: 20s}\n"
                                  "command: [/bin/sh, -c, 'trap \"exit 0\" USR1; echo up; while :; do sleep 0.05; done']\n");
  WaitState(borrower, "RUNNING");
  ASSERT_NO_FATAL_FAILURE(WaitLog(borrower, "up"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past minRunTime
  const auto submitted = std::chrono::steady_clock::now();
  const int64_t owner = Submit("name: a\nqueue: team-a\nresources: {gpus: 2}\ncommand: [sleep, '30']\n");
  WaitState(owner, "RUNNING", 30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  // The guarantee is back within the victim's grace period (20 s) plus one
  // cycle (1 s); this victim stops at once on its signal.
  EXPECT_LT(took, 21.0);
  EXPECT_TRUE(HasEvent(Events(borrower), "Preempted", "queue team-a reclaims its guaranteed GPUs")) << Events(borrower).dump();
  EXPECT_TRUE(HasEvent(Events(owner), "Preempting", "reclaiming its queue's guarantee")) << Events(owner).dump();
  const json queues = Get("/v1/queues");
  bool found = false;
  for (const json& q : queues["items"]) {
    if (q["name"] != "team-a") continue;
    found = true;
    EXPECT_EQ(q["guarantee"]["*"], 2) << q.dump();
    EXPECT_EQ(q["gpusInUseByType"]["H100"], 2) << q.dump();
    EXPECT_EQ(q["gpusInUse"], 2) << q.dump();
    EXPECT_EQ(q["running"], 1) << q.dump();
  }
  EXPECT_TRUE(found) << queues.dump();
  for (int64_t id : {owner, borrower}) Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
  for (int64_t id : {owner, borrower}) WaitEnd(id);
}

}  // namespace
}  // namespace muster::testing
