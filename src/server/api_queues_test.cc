#include "server/api_queues.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace muster::server {
namespace {

using nlohmann::json;

std::string QueueError(const std::string& text, const std::string& path_name = "") {
  auto q = ApiQueueFromJson(json::parse(text), path_name);
  return q.ok() ? "accepted" : q.status().field() + ": " + q.status().message();
}

ApiQueue ApiQueueOf(const std::string& text) {
  auto q = ApiQueueFromJson(json::parse(text), "");
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  return ApiQueue{*q, "root", Time::FromMillis(1'000)};
}

std::vector<core::QueueConfig> FileQueues() {
  core::QueueConfig research{"research", {{"*", 16}}, {{"*", 32}}, ""};
  return {research};
}

TEST(ApiQueues, ABodyIsReadAsTheFilesQueuesAreAndRoundTrips) {
  auto q =
      ApiQueueFromJson(json::parse(R"({"guarantee":{"H100":8},"limit":16,"share":2,"parent":"research"})"), "vision");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->quota.name, "vision");
  EXPECT_EQ(q->quota.guarantee, (std::map<std::string, int64_t>{{"H100", 8}}));
  EXPECT_EQ(q->quota.limit, (std::map<std::string, int64_t>{{"*", 16}}));
  EXPECT_EQ(q->share, 2);
  ApiQueues all;
  all.Put(ApiQueue{*q, "root", Time::FromMillis(5'000)});
  ApiQueues loaded;
  ASSERT_TRUE(loaded.Load(all.Dump()).ok());
  ASSERT_NE(loaded.Find("vision"), nullptr);
  EXPECT_EQ(QueueEntryJson(loaded.Find("vision")->queue), QueueEntryJson(*q));
  EXPECT_EQ(loaded.Find("vision")->changed_by, "root");
  EXPECT_EQ(loaded.Find("vision")->changed_at, Time::FromMillis(5'000));
  EXPECT_EQ(loaded.Load("{broken").code(), StatusCode::kDataLoss);
  EXPECT_EQ(loaded.Load(R"([{"queue":{"name":"x","limit":-1}}])").code(), StatusCode::kDataLoss);
  EXPECT_TRUE(loaded.Load("").ok());
  EXPECT_TRUE(loaded.all().empty());
}

TEST(ApiQueues, WhatIsNoQueueIsRefusedNamingTheField) {
  EXPECT_EQ(QueueError(R"({"limit":4})"), "name: must be a name of 1 to 128 characters of [A-Za-z0-9._-]");
  EXPECT_EQ(QueueError(R"({"name":"a b"})"), "name: must be a name of 1 to 128 characters of [A-Za-z0-9._-]");
  EXPECT_EQ(QueueError(R"({"name":"other"})", "vision"), "name: must be the queue the path names, \"vision\"");
  EXPECT_EQ(QueueError(R"({"name":"q","limit":"lots"})"),
            "limit: must be a GPU count, or an object of GPU type (or \"*\") to count");
  EXPECT_EQ(QueueError(R"({"name":"q","limit":{"H100":1.5}})"),
            "limit: must be a GPU count, or an object of GPU type (or \"*\") to count");
  EXPECT_EQ(QueueError(R"({"name":"q","limit":-3})").substr(0, 7), "limit: ");
  EXPECT_EQ(QueueError(R"({"name":"q","guarantee":8,"limit":4})"), "guarantee: guarantee 8 is above the limit 4");
  EXPECT_EQ(QueueError(R"({"name":"q","share":0})").substr(0, 7), "share: ");
  EXPECT_EQ(QueueError(R"({"name":"q","share":"big"})"), "share: must be an integer from 1 to 1000000");
  EXPECT_EQ(QueueError(R"({"name":"q","parent":7})"),
            "parent: must be a queue's name, 1 to 128 characters of [A-Za-z0-9._-]");
  EXPECT_EQ(QueueError("[1]"), "body: must be a JSON object {name, parent, guarantee, limit, share}");
}

TEST(ApiQueues, TheFilesQueuesComeFirstAndAnApiQueueItNamesIsShadowed) {
  ApiQueues api;
  api.Put(ApiQueueOf(R"({"name":"research","limit":4})"));
  api.Put(ApiQueueOf(R"({"name":"vision","limit":8,"share":3})"));
  const QueuesInForce in_force = api.Merge(FileQueues(), {{"research", 2.0}});
  ASSERT_EQ(in_force.quotas.size(), 2u);
  EXPECT_EQ(in_force.quotas[0].limit.at("*"), 32) << "the file's research, not the API's";
  EXPECT_EQ(in_force.quotas[1].name, "vision");
  EXPECT_EQ(in_force.shares, (std::map<std::string, double>{{"research", 2.0}, {"vision", 3.0}}));
  EXPECT_EQ(in_force.source.at("research"), "file");
  EXPECT_EQ(in_force.source.at("vision"), "api");
  EXPECT_EQ(in_force.shadowed, std::vector<std::string>{"research"});
}

TEST(ApiQueues, ParentsComeBeforeTheirChildrenAndAQueueWithoutItsParentIsLeftOut) {
  ApiQueues api;
  // Names sort child first: the merge still puts the parent before it.
  api.Put(ApiQueueOf(R"({"name":"a-child","parent":"z-parent","limit":4})"));
  api.Put(ApiQueueOf(R"({"name":"z-parent","parent":"research","limit":8})"));
  QueuesInForce in_force = api.Merge(FileQueues(), {});
  ASSERT_EQ(in_force.quotas.size(), 3u);
  EXPECT_EQ(in_force.quotas[1].name, "z-parent");
  EXPECT_EQ(in_force.quotas[2].name, "a-child");
  EXPECT_TRUE(in_force.left_out.empty());
  // The file drops research: both API queues below it are left out.
  in_force = api.Merge({}, {});
  EXPECT_TRUE(in_force.quotas.empty());
  EXPECT_EQ(in_force.left_out.size(), 2u);
}

TEST(ApiQueues, APutNeedsAParentInForceAndNoLoopAndARemoveNoChild) {
  ApiQueues api;
  auto entry = [](const std::string& text) { return *ApiQueueFromJson(json::parse(text), ""); };
  EXPECT_TRUE(api.CheckPut(entry(R"({"name":"vision","parent":"research"})"), FileQueues()).ok());
  Status missing = api.CheckPut(entry(R"({"name":"vision","parent":"nope"})"), FileQueues());
  EXPECT_EQ(missing.field() + ": " + missing.message(), "parent: \"nope\" is not a queue");
  api.Put(ApiQueueOf(R"({"name":"a","parent":"research"})"));
  api.Put(ApiQueueOf(R"({"name":"b","parent":"a"})"));
  Status loop = api.CheckPut(entry(R"({"name":"a","parent":"b"})"), FileQueues());
  EXPECT_EQ(loop.message(), "queue \"a\" would be nested under itself");
  Status child = api.CheckRemove("a", FileQueues());
  EXPECT_EQ(child.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(child.message(), "queue \"b\" is nested under \"a\"; delete it or change its parent first");
  EXPECT_TRUE(api.CheckRemove("b", FileQueues()).ok());
  EXPECT_TRUE(api.Remove("b"));
  EXPECT_FALSE(api.Remove("b"));
}

}  // namespace
}  // namespace muster::server
