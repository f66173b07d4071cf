// Stragglers on a real cluster: a gang whose replicas report their steps,
// one of them at a fraction of the others' rate, is flagged (an event, the
// metrics, the job's replicaProgress), and with stragglers.cordon its node
// takes no new work while the job runs on.
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "../agent/cluster_fixture.h"
#include "../wait_for.h"

namespace muster::testing {
namespace {

using nlohmann::json;

class StragglerTest : public ClusterFixture {
 protected:
  StragglerTest()
      : ClusterFixture(
            "rateLimit: {perSecond: 100000, burst: 100000}\n"
            "agents: {defaultGrace: 1s}\n"
            "stragglers: {ratio: 0.5, window: 30s, after: 2s, minReports: 3, cordon: true}\n") {}
};

double Sample(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + " ", 0) == 0) return std::stod(line.substr(key.size() + 1));
  }
  return -1;
}

TEST_F(StragglerTest, TheSlowReplicaIsFlaggedAndItsNodeCordoned) {
  AddAgent({"--fake-gpus", "2xH100"});
  AddAgent({"--fake-gpus", "2xH100"});
  WaitNodes(2);
  // Four replicas step 4 at a time; replica 3 one at a time.
  const std::string report = std::string(MUSTER_BINARY) + " progress --step $i >/dev/null";
  const int64_t id = Submit(
      "name: gang\nreplicas: 4\nresources: {gpus: 1}\n"
      "command: [sh, -c, 'i=0; d=4; [ $RANK = 3 ] && d=1; while true; do i=$((i+d)); " +
      report + "; sleep 0.2; done']\n");
  json job = WaitState(id, "RUNNING");
  json events;
  const bool flagged = WaitFor([&] {
    events = Get("/v1/jobs/" + std::to_string(id) + "/events")["items"];
    return HasEvent(events, "Straggler", "replica 3 on ");
  });
  ASSERT_TRUE(flagged) << events.dump();
  // Its node, as the job's first attempt placed replica 3.
  const json places = Get("/v1/jobs/" + std::to_string(id))["allocations"];
  std::string slow_node;
  int replicas_before = 0;
  for (const json& a : places) {
    if (replicas_before <= 3 && 3 < replicas_before + a["replicas"].get<int>()) slow_node = a["node"];
    replicas_before += a["replicas"].get<int>();
  }
  EXPECT_TRUE(HasEvent(events, "Straggler", "replica 3 on " + slow_node + " trains at ")) << slow_node << events.dump();
  EXPECT_FALSE(HasEvent(events, "Straggler", "replica 0 on ")) << events.dump();

  job = Get("/v1/jobs/" + std::to_string(id));
  ASSERT_TRUE(job.contains("replicaProgress")) << job.dump();
  ASSERT_EQ(job["replicaProgress"].size(), 4u) << job.dump();
  for (const json& r : job["replicaProgress"]) {
    EXPECT_EQ(r["straggler"], r["replica"] == 3) << r.dump();
    EXPECT_GT(r["stepsPerSecond"].get<double>(), 0) << r.dump();
  }
  EXPECT_LT(job["replicaProgress"][3]["stepsPerSecond"].get<double>(),
            job["replicaProgress"][0]["stepsPerSecond"].get<double>() / 2);

  const std::string metrics = Text("/metrics");
  EXPECT_EQ(Sample(metrics, "muster_stragglers_total{queue=\"default\"}"), 1) << metrics;
  EXPECT_EQ(Sample(metrics, "muster_straggling_replicas"), 1);

  // The policy: its node is cordoned, and the job runs on.
  bool cordoned = false;
  const json nodes = Get("/v1/nodes");
  for (const json& n : nodes["items"]) {
    if (n["name"] == slow_node) {
      cordoned = !n["schedulable"].get<bool>() && n.value("cordon", "").find("straggler") != std::string::npos;
      EXPECT_TRUE(cordoned) << n.dump();
    }
  }
  EXPECT_TRUE(cordoned);
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "RUNNING");
  EXPECT_EQ(CancelAndWait(id)["state"], "CANCELLED");
  EXPECT_EQ(Sample(Text("/metrics"), "muster_straggling_replicas"), 0);
}

}  // namespace
}  // namespace muster::testing
