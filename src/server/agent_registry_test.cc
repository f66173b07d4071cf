#include "server/agent_registry.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace muster::server {
namespace {

proto::SyncRequest Sync(const std::string& node, const std::string& agent_id) {
  proto::SyncRequest r;
  r.node = node;
  r.agent_id = agent_id;
  r.address = "10.0.0.1";
  r.log_port = 7001;
  r.gpu_type = "H100";
  proto::GpuReport g;
  g.index = 0;
  g.uuid = "GPU-0";
  r.gpus.push_back(g);
  return r;
}

TEST(AgentRegistryTest, ASecondAgentIsRefusedWhileTheFirstMayStillRunTasks) {
  AgentRegistry reg;
  const auto never = [] { return false; };
  const Duration lost_after = Duration::Seconds(120);
  reg.Serve(Sync("n1", "a"), reg.Get("n1"));
  EXPECT_TRUE(reg.Admit(Sync("n1", "a"), Duration::Seconds(1), never, lost_after).ok());
  const Status twin = reg.Admit(Sync("n1", "b"), Duration::Seconds(5), never, lost_after);
  ASSERT_EQ(twin.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(twin.message().find("served by another agent (a, which synced 5000 ms ago)"), std::string::npos)
      << twin.message();
  // A serving agent whose sync is held here is alive, however long ago it began.
  EXPECT_FALSE(reg.Admit(
                      Sync("n1", "b"), Duration::Seconds(500), [] { return true; }, lost_after)
                   .ok());
  // Silent past lostAfter: the twin takes over, and that is an event.
  EXPECT_TRUE(reg.Admit(Sync("n1", "b"), Duration::Seconds(120), never, lost_after).ok());
  const AgentRegistry::Served served = reg.Serve(Sync("n1", "b"), reg.Get("n1"));
  ASSERT_TRUE(served.replaced.has_value());
  EXPECT_EQ(*served.replaced, "node n1: agent b took over from a");
}

TEST(AgentRegistryTest, TheNodesStatusIsRebuiltOnlyWhenWhatTheAgentSaysChanges) {
  AgentRegistry reg;
  AgentRegistry::Agent& a = reg.Get("n1");
  proto::SyncRequest r = Sync("n1", "a");
  EXPECT_TRUE(reg.Serve(r, a).first);
  ASSERT_TRUE(reg.Report(r, a).has_value());
  EXPECT_FALSE(reg.Serve(r, a).first);
  EXPECT_FALSE(reg.Report(r, a).has_value()) << "nothing changed";
  r.features = {"containers"};
  ASSERT_TRUE(reg.Report(r, a).has_value()) << "Podman found";
  EXPECT_EQ(nlohmann::json::parse(a.status_json)["features"], nlohmann::json::array({"containers"}));
  r.gpus[0].healthy = false;
  r.gpus[0].health = "XID 79";
  const std::optional<std::string> status = reg.Report(r, a);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(nlohmann::json::parse(*status)["gpuDevices"][0]["healthy"], false);
  // Health events are kept (the last 32) and always stored.
  proto::HealthEventReport e;
  e.uuid = "GPU-0";
  e.kind = "xid";
  e.xid = 13;
  r.health_events.assign(40, e);
  ASSERT_TRUE(reg.Report(r, a).has_value());
  EXPECT_EQ(a.events.size(), 32u);
  // A new address is a first sync again (replicas' addresses change).
  r.address = "10.0.0.2";
  EXPECT_TRUE(reg.Serve(r, a).first);
  EXPECT_EQ(reg.AddressOf("n1"), "10.0.0.2");
  EXPECT_EQ(reg.AddressOf("static-node"), "static-node");
}

TEST(AgentRegistryTest, ACordonIsStoredWithTheStatusAndKeepsTheNodeFromWork) {
  AgentRegistry reg;
  AgentRegistry::Agent& a = reg.Get("n1");
  EXPECT_FALSE(reg.SetCordon(a, "cordoned by ann").has_value()) << "no status yet: nothing to store";
  EXPECT_TRUE(a.Cordoned());
  reg.Report(Sync("n1", "a"), a);
  const std::optional<std::string> cleared = reg.SetCordon(a, "");
  ASSERT_TRUE(cleared.has_value());
  EXPECT_FALSE(nlohmann::json::parse(*cleared).contains("cordoned"));
  EXPECT_FALSE(a.Cordoned());
  const std::optional<std::string> set = reg.SetCordon(a, "drained by ann");
  EXPECT_EQ(nlohmann::json::parse(*set)["cordoned"], "drained by ann");
  EXPECT_FALSE(nlohmann::json::parse(*set).contains("reclaimAtMs"));
  a.reclaim_at = Time::FromMillis(120'000);
  EXPECT_EQ(nlohmann::json::parse(*reg.SetCordon(a, "reclaimed"))["reclaimAtMs"], 120'000);
  a.removed = true;
  EXPECT_TRUE(reg.Removed("n1"));
}

TEST(AgentRegistryTest, RestoreBringsBackAgentRegisteredNodesTheConfigurationDoesNotName) {
  AgentRegistry source;
  AgentRegistry::Agent& a = source.Get("n1");
  proto::SyncRequest r = Sync("n1", "a");
  r.labels = {{"leaf", "l1"}};
  r.features = {"containers", "gpu-containers"};
  a.reclaim_at = Time::FromMillis(1'795'687'320'000);
  source.SetCordon(a, "reclaimed in 120 s (notice from ann)");
  const std::string status = *source.Report(r, a);
  const std::vector<store::NodeRow> rows = {
      {"n1", status, "READY", 0}, {"static", R"({"gpus": 8})", "READY", 0}, {"both", status, "READY", 0}};
  AgentRegistry reg;
  const std::vector<core::NodeSpec> nodes = reg.Restore(rows, [](const std::string& n) { return n == "both"; });
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].name, "n1");
  EXPECT_EQ(nodes[0].capacity.gpus, 1);
  EXPECT_EQ(nodes[0].topology.leaf, "l1");
  EXPECT_EQ(nodes[0].features, core::WithPoolFeature(r.features))
      << "container jobs are placed by them before the agent syncs again";
  const AgentRegistry::Agent* back = reg.Find("n1");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->cordon, "reclaimed in 120 s (notice from ann)");
  EXPECT_EQ(back->reclaim_at, Time::FromMillis(1'795'687'320'000)) << "a restarted server keeps the deadline";
  EXPECT_EQ(back->log_port, 7001);
  EXPECT_EQ(reg.Find("static"), nullptr);
}

}  // namespace
}  // namespace muster::server
