#include "server/queue_admin.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace muster::server {
namespace {

const Time kAdminT0 = Time::FromMillis(1'767'225'600'000);

ServerOptions FileOptions() {
  auto o = ParseServerOptions("queues:\n  - {name: research, limit: 4, share: 3}\n", "server.yaml");
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  o->config_path = "/etc/muster/server.yaml";
  return *o;
}

config::QueueEntry Entry(const std::string& json_text, const std::string& path_name = "") {
  auto q = ApiQueueFromJson(nlohmann::json::parse(json_text), path_name);
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  return *q;
}

TEST(QueueAdmin, TheFilesQueuesComeFirstAndAreRefusedThroughTheApiNamingTheFile) {
  QueueAdmin admin(FileOptions());
  auto put = admin.Put(Entry(R"({"limit": 2})", "research"), false, "root", kAdminT0);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(put.status().message().find("/etc/muster/server.yaml"), std::string::npos) << put.status().ToString();
  EXPECT_EQ(admin.Remove("research").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(admin.SourceOf("research").source, "file");
  EXPECT_EQ(admin.SourceOf("research").share, 3);
  EXPECT_FALSE(admin.has_api_queues());
}

TEST(QueueAdmin, AnApiQueueIsMergedAfterTheFilesAndAChangeCanBeUndone) {
  QueueAdmin admin(FileOptions());
  auto created = admin.Put(Entry(R"({"name": "vision", "limit": 8, "share": 2})"), true, "ann", kAdminT0);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE(*created) << "it did not exist";
  auto twice = admin.Put(Entry(R"({"name": "vision"})"), true, "ann", kAdminT0);
  EXPECT_EQ(twice.status().field(), "name") << "POST refuses a queue there is";
  QueueAdmin::InForce in_force = admin.Merge(admin.file_cluster(), admin.file_fairshare());
  ASSERT_EQ(in_force.cluster.queues.size(), 2u);
  EXPECT_EQ(in_force.cluster.queues[0].name, "research");
  EXPECT_EQ(in_force.cluster.queues[1].name, "vision");
  EXPECT_EQ(in_force.fairshare.shares.at("vision"), 2);
  EXPECT_EQ(admin.SourceOf("vision").changed_by, "ann");
  const std::string dumped = admin.Dump();
  auto replaced = admin.Put(Entry(R"({"limit": 16})", "vision"), false, "bob", kAdminT0);
  ASSERT_TRUE(replaced.ok());
  EXPECT_TRUE(*replaced);
  admin.Undo();
  EXPECT_EQ(admin.Dump(), dumped) << "back to before the last change";
  QueueAdmin restored(FileOptions());
  ASSERT_TRUE(restored.Load(dumped).ok());
  EXPECT_EQ(restored.SourceOf("vision").source, "api");
  auto removed = restored.Remove("vision");
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(*restored.Remove("vision")) << "there was none";
}

TEST(QueueAdmin, AReloadBeforeTheLoopStartsIsKeptUntilItDoes) {
  QueueAdmin admin(FileOptions());
  ServerOptions next = FileOptions();
  next.cluster.queues.clear();
  EXPECT_TRUE(admin.DeferUntilStarted(next));
  std::optional<ServerOptions> deferred = admin.MarkStarted();
  ASSERT_TRUE(deferred.has_value());
  EXPECT_TRUE(deferred->cluster.queues.empty());
  EXPECT_FALSE(admin.DeferUntilStarted(next)) << "started: apply it now";
  EXPECT_FALSE(admin.MarkStarted().has_value());
}

}  // namespace
}  // namespace muster::server
