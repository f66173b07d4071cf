#include "server/job_table.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

TEST(JobTableTest, EveryChangeIsWrittenAsTheWholeRowWithItsStatusRebuilt) {
  int status_calls = 0;
  JobTable jobs([&](int64_t job) {
    return "{\"job\":" + std::to_string(job) + ",\"n\":" + std::to_string(++status_calls) + "}";
  });
  store::JobRow row;
  row.id = 4;
  row.user = "ann";
  store::WriteBatch b;
  const store::JobRow& added = jobs.Add(row, core::JobState::kPending, b);
  EXPECT_EQ(added.state, "PENDING");
  ASSERT_EQ(b.jobs.size(), 1u);
  EXPECT_EQ(b.jobs[0].status_json, "{\"job\":4,\"n\":1}");

  // A start: a new attempt, its time, the state; written once after the
  // step's other changes.
  const Time t = Time::FromSeconds(1000);
  JobTable::Change start = JobTable::Change::To(core::JobState::kRunning, "");
  start.started = true;
  ASSERT_TRUE(jobs.Apply(4, start, t).ok());
  EXPECT_EQ(jobs.at(4).attempts, 1);
  EXPECT_EQ(jobs.at(4).start_ms, t.millis());
  store::WriteBatch b2;
  jobs.Write(4, b2);
  ASSERT_EQ(b2.jobs.size(), 1u);
  EXPECT_EQ(b2.jobs[0].state, "RUNNING");
  EXPECT_EQ(b2.jobs[0].status_json, "{\"job\":4,\"n\":2}");

  // Back to pending (a requeue), then ended.
  JobTable::Change requeue = JobTable::Change::To(core::JobState::kPending, "Requeued: its node was lost");
  requeue.back_to_pending = true;
  store::WriteBatch b3;
  ASSERT_TRUE(jobs.Update(4, requeue, t, b3).ok());
  EXPECT_FALSE(b3.jobs[0].start_ms.has_value());
  EXPECT_EQ(b3.jobs[0].reason, "Requeued: its node was lost");
  ASSERT_TRUE(jobs.Update(4, JobTable::Change::Ended(core::JobState::kCancelled, "cancelled by ann", t), t, b3).ok());
  EXPECT_EQ(b3.jobs[1].state, "CANCELLED");
  EXPECT_EQ(b3.jobs[1].end_ms, t.millis());
  EXPECT_EQ(jobs.Find(5), nullptr);
}

TEST(JobTableTest, APendingReasonIsWrittenAloneAndOnlyWhenItChanged) {
  JobTable jobs([](int64_t) { return std::string("{}"); });
  store::JobRow row;
  row.id = 1;
  store::WriteBatch b;
  jobs.Add(row, core::JobState::kPending, b);
  store::WriteBatch reasons;
  jobs.WriteReason(1, "Resources", reasons);
  jobs.WriteReason(1, "Resources", reasons);
  jobs.WriteReason(1, "Priority", reasons);
  ASSERT_EQ(reasons.reasons.size(), 2u);
  EXPECT_EQ(reasons.reasons[1].second, "Priority");
  EXPECT_TRUE(reasons.jobs.empty());
  EXPECT_EQ(jobs.at(1).reason, "Priority");
}

TEST(JobTableTest, AStateChangeTheTransitionTableForbidsIsRefused) {
  JobTable jobs([](int64_t) { return std::string("{}"); });
  store::JobRow row;
  row.id = 9;
  store::WriteBatch b;
  jobs.Add(row, core::JobState::kHeld, b);
  // HELD cannot start: the state stays, and the refusal names both states.
  const Status s = jobs.Apply(9, JobTable::Change::To(core::JobState::kRunning, "x"), Time::Zero());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("HELD to RUNNING"), std::string::npos) << s.message();
  EXPECT_EQ(jobs.at(9).state, "HELD");
  // Ended: nothing moves it again.
  ASSERT_TRUE(
      jobs.Apply(9, JobTable::Change::Ended(core::JobState::kCancelled, "by ann", Time::FromSeconds(5)), Time::Zero())
          .ok());
  EXPECT_FALSE(jobs.Apply(9, JobTable::Change::To(core::JobState::kPending, ""), Time::Zero()).ok());
  EXPECT_EQ(jobs.at(9).state, "CANCELLED");
  // The same state again is no transition (a new reason).
  EXPECT_TRUE(jobs.Apply(9, JobTable::Change::To(core::JobState::kCancelled, "by ann, again"), Time::Zero()).ok());
}

// Metrics: a job's wait to its first start, and its end counted once.
TEST(JobTableTest, StartsAndEndsAreCountedInTheMetrics) {
  ServerMetrics metrics;
  JobTable jobs([](int64_t) { return "{}"; });
  jobs.SetMetrics(&metrics);
  store::JobRow row;
  row.id = 7;
  row.queue = "research";
  row.submit_ms = Time::FromSeconds(100).millis();
  store::WriteBatch b;
  jobs.Add(row, core::JobState::kPending, b);
  JobTable::Change start = JobTable::Change::To(core::JobState::kRunning, "");
  start.started = true;
  ASSERT_TRUE(jobs.Apply(7, start, Time::FromSeconds(130)).ok());
  const Time end = Time::FromSeconds(200);
  ASSERT_TRUE(jobs.Apply(7, JobTable::Change::Ended(core::JobState::kCompleted, "", end), end).ok());
  // The same end again (a report heard twice) is not a second end.
  ASSERT_TRUE(jobs.Apply(7, JobTable::Change::Ended(core::JobState::kCompleted, "", end), end).ok());
  const std::string text = metrics.Scrape({});
  EXPECT_NE(text.find("muster_jobs_ended_total{queue=\"research\",state=\"COMPLETED\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("muster_job_wait_seconds_sum{queue=\"research\"} 30\n"), std::string::npos) << text;
}

// What a batch wrote, for watches: each job once, as the batch leaves it,
// with its state before the batch (taken once; "" when the batch added it).
TEST(JobTableTest, ABatchsChangesCarryEachJobsStateBeforeIt) {
  JobTable jobs([](int64_t) { return std::string("{}"); });
  store::JobRow row;
  row.id = 1;
  store::WriteBatch b;
  jobs.Add(row, core::JobState::kPending, b);
  row.id = 2;
  jobs.Add(row, core::JobState::kPending, b);
  std::vector<JobWatch::Change> c = jobs.Changes(b, true);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].state_before, "");
  EXPECT_EQ(c[1].row.id, 2);

  // Job 1 starts and ends in one batch; job 2's reason changes.
  const Time t = Time::FromSeconds(10);
  store::WriteBatch b2;
  ASSERT_TRUE(jobs.Update(1, JobTable::Change::To(core::JobState::kRunning, ""), t, b2).ok());
  ASSERT_TRUE(jobs.Update(1, JobTable::Change::Ended(core::JobState::kCompleted, "", t), t, b2).ok());
  jobs.WriteReason(2, "Resources", b2);
  c = jobs.Changes(b2, true);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].row.id, 1);
  EXPECT_EQ(c[0].row.state, "COMPLETED");
  EXPECT_EQ(c[0].state_before, "PENDING");
  EXPECT_EQ(c[1].row.id, 2);
  EXPECT_EQ(c[1].row.reason, "Resources");
  EXPECT_EQ(c[1].state_before, std::nullopt);  // its state did not change

  // Not kept: nothing made, and the states before are forgotten all the same.
  store::WriteBatch b3;
  ASSERT_TRUE(jobs.Update(2, JobTable::Change::To(core::JobState::kHeld, ""), t, b3).ok());
  EXPECT_TRUE(jobs.Changes(b3, false).empty());
  store::WriteBatch b4;
  jobs.Write(2, b4);
  c = jobs.Changes(b4, true);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].state_before, std::nullopt);
}

}  // namespace
}  // namespace muster::server
