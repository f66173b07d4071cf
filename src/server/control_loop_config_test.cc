// Queue administration and configuration reload in the control loop, in
// process: a reload's queues and classes in force at the next cycle with
// nothing running disturbed, a refused reload changing nothing, API queues
// kept in the store across a restart, and what may not be done to them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/testing/loop_harness.h"

namespace muster::server::testing {
namespace {

constexpr char kQueuesConfig[] = "queues:\n  - {name: research, limit: 4}\n";

class ControlLoopConfig : public ::testing::Test {
 protected:
  ControlLoopConfig() : h_(kQueuesConfig), n1_(h_, "n1", 8) { EXPECT_TRUE(n1_.Sync().ok()); }

  Status Reload(const std::string& config) {
    StatusOr<ServerOptions> next = ParseServerOptions(config, "reloaded configuration");
    if (!next.ok()) return next.status();
    next->store_path = h_.options().store_path;
    next_ = *next;  // the loop keeps what it is given
    return h_.loop().Reconfigure(next_);
  }
  StatusOr<ControlLoop::QueueView> Put(const std::string& name, const std::string& body,
                                       const std::string& who = "root") {
    using R = ControlLoop::QueueView;
    return h_.Await<R>([&](ControlLoop::Done<StatusOr<R>> done) {
      h_.loop().PutQueue(nlohmann::json::parse(body), name, LoopHarness::User(who), store::AuditRow{}, done);
    });
  }
  StatusOr<bool> Delete(const std::string& name) {
    return h_.Await<bool>(
        [&](ControlLoop::Done<StatusOr<bool>> done) { h_.loop().DeleteQueue(name, store::AuditRow{}, done); });
  }
  std::optional<ControlLoop::QueueView> Queue(const std::string& name) {
    auto all = h_.Queues();
    EXPECT_TRUE(all.ok());
    for (const ControlLoop::QueueView& q : all.ok() ? *all : std::vector<ControlLoop::QueueView>{}) {
      if (q.name == name) return q;
    }
    return std::nullopt;
  }
  int64_t SubmitTo(const std::string& queue, int gpus = 4) {
    auto job = h_.Submit("queue: " + queue + "\nresources: {gpus: " + std::to_string(gpus) + "}\ncommand: [train]\n");
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id : 0;
  }

  LoopHarness h_;
  PlayedAgent n1_;
  ServerOptions next_;
};

TEST_F(ControlLoopConfig, AQueueLimitRaisedByAReloadTakesEffectAndNothingRunningIsDisturbed) {
  const int64_t first = SubmitTo("research"), second = SubmitTo("research");
  ASSERT_TRUE(n1_.Sync().ok());
  EXPECT_TRUE(n1_.Runs(first));
  EXPECT_EQ(h_.Reason(second), "Quota") << "within its limit of 4 GPUs, though the node has room";
  const store::JobRow before = h_.Stored(first);
  ASSERT_TRUE(Reload("queues:\n  - {name: research, limit: 8}\n").ok());
  ASSERT_TRUE(n1_.Sync().ok());
  EXPECT_TRUE(n1_.Runs(second));
  const store::JobRow after = h_.Stored(first);
  EXPECT_EQ(after.attempts, 1);
  EXPECT_EQ(after.start_ms, before.start_ms);
  EXPECT_EQ(Queue("research")->limit.at("*"), 8);
}

TEST_F(ControlLoopConfig, AReloadThatReordersClassesIsRefusedAndChangesNothing) {
  Status s = Reload("queues:\n  - {name: research, limit: 2}\npriorityClasses: [{name: normal, weight: 10000}]\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("class \"low\" must stay"), std::string::npos) << s.ToString();
  EXPECT_EQ(Queue("research")->limit.at("*"), 4) << "refused whole";
  // Growing the list, in order, is allowed; the new class takes jobs.
  ASSERT_TRUE(Reload("priorityClasses: [{name: low, weight: 0, preemptible: true}, {name: normal, weight: 10000},\n"
                     "  {name: high, weight: 20000, mayPreempt: true},\n"
                     "  {name: interactive, weight: 30000, mayPreempt: true, interactive: true},\n"
                     "  {name: urgent, weight: 50000, mayPreempt: true}]\n")
                  .ok());
  auto urgent = h_.Submit("priority: urgent\nresources: {gpus: 1}\ncommand: [train]\n");
  EXPECT_TRUE(urgent.ok()) << urgent.status().ToString();
}

TEST_F(ControlLoopConfig, AnApiQueueTakesEffectAtTheNextCycleAndSurvivesARestart) {
  auto made = Put("vision", R"({"limit": 4, "share": 2})");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(made->source, "api");
  EXPECT_EQ(made->changed_by, "root");
  const int64_t first = SubmitTo("vision"), second = SubmitTo("vision");
  ASSERT_TRUE(n1_.Sync().ok());
  EXPECT_TRUE(n1_.Runs(first));
  EXPECT_FALSE(n1_.Runs(second));
  ASSERT_TRUE(Put("vision", R"({"limit": 8, "share": 2})").ok());
  ASSERT_TRUE(n1_.Sync().ok());
  EXPECT_TRUE(n1_.Runs(second));
  ASSERT_TRUE(h_.Restart().ok());
  auto kept = Queue("vision");
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->limit.at("*"), 8);
  EXPECT_EQ(kept->share, 2);
  EXPECT_EQ(kept->source, "api");
  EXPECT_EQ(Queue("research")->source, "file");
}

TEST_F(ControlLoopConfig, TheFilesQueuesAndBadFieldsAreRefusedThroughTheApi) {
  auto file = Put("research", R"({"limit": 2})");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kFailedPrecondition) << file.status().ToString();
  auto bad = Put("vision", R"({"limit": "lots"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "limit") << bad.status().ToString();
  auto orphan = Put("sub", R"({"parent": "nope"})");
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(orphan.status().field(), "parent") << orphan.status().ToString();
  auto create_twice = Put("", R"({"name": "vision"})");
  ASSERT_TRUE(create_twice.ok()) << create_twice.status().ToString();
  create_twice = Put("", R"({"name": "vision"})");
  EXPECT_EQ(create_twice.status().code(), StatusCode::kFailedPrecondition) << "POST refuses a queue there is";
}

TEST_F(ControlLoopConfig, ADeletedQueuesJobsStayWithNoQuota) {
  ASSERT_TRUE(Put("vision", R"({"limit": 4})").ok());
  const int64_t first = SubmitTo("vision"), second = SubmitTo("vision");
  ASSERT_TRUE(n1_.Sync().ok());
  ASSERT_FALSE(n1_.Runs(second));
  auto deleted = Delete("vision");
  ASSERT_TRUE(deleted.ok());
  EXPECT_TRUE(*deleted);
  ASSERT_TRUE(n1_.Sync().ok());
  EXPECT_TRUE(n1_.Runs(first));
  EXPECT_TRUE(n1_.Runs(second)) << "no limit any more";
  auto again = Delete("vision");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again) << "there was none";
}

}  // namespace
}  // namespace muster::server::testing
