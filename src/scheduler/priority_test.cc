#include "scheduler/priority.h"

#include <gtest/gtest.h>

#include "core/cluster_state.h"

namespace muster::scheduler {
namespace {

core::PendingJob Job(int32_t cls, Time submit, int64_t gpus = 1) {
  core::PendingJob j;
  j.priority_class = cls;
  j.submit_time = submit;
  j.per_replica.gpus = gpus;
  return j;
}

class PriorityTest : public ::testing::Test {
 protected:
  core::ClusterSnapshot At(Time now) {
    core::ClusterSnapshot s = state_.Snapshot(now);
    return s;
  }
  core::ClusterState state_;  // classes low 0, normal 10000, high 20000
  PriorityWeights w_;
};

TEST_F(PriorityTest, BreakdownSumsItsParts) {
  w_.size_points_per_gpu = 1;
  const auto b = ComputePriority(Job(1, Time::Zero(), 8), At(Time::Zero() + Duration::Hours(3)), w_);
  EXPECT_EQ(b.class_points, 10'000);
  EXPECT_EQ(b.age_points, 1'500);
  EXPECT_EQ(b.fairshare_points, 0);
  EXPECT_EQ(b.size_points, 8);
  EXPECT_EQ(b.total(), 11'508);
}

TEST_F(PriorityTest, AgeIsCappedAndNeverNegative) {
  const auto old = ComputePriority(Job(0, Time::Zero()), At(Time::Zero() + Duration::Hours(10'000)), w_);
  EXPECT_EQ(old.age_points, w_.age_cap);
  // Submitted "in the future" (clock skew between writers): no negative age.
  const auto future = ComputePriority(Job(0, Time::FromSeconds(100)), At(Time::Zero()), w_);
  EXPECT_EQ(future.age_points, 0);
}

TEST_F(PriorityTest, AgeCountsFromBeginTime) {
  core::PendingJob j = Job(0, Time::Zero());
  j.begin_time = Time::Zero() + Duration::Hours(2);
  EXPECT_EQ(ComputePriority(j, At(Time::Zero() + Duration::Hours(3)), w_).age_points, 500);
}

// A job that waited behind its dependency came out of the wait with all
// that time as age, ahead of jobs that could run all along. As in Slurm,
// age counts from when it became eligible: the end of its last dependency.
TEST_F(PriorityTest, AgeCountsFromTheEndOfTheLastDependency) {
  core::JobSpec spec;
  auto first = state_.Submit(spec, Time::Zero());
  auto second = state_.Submit(spec, Time::Zero());
  ASSERT_TRUE(first.ok() && second.ok());
  core::PendingJob j = Job(0, Time::Zero());
  j.dependencies = {{core::DependencyType::kAfterAny, *first}, {core::DependencyType::kAfterAny, *second}};
  const Time t0 = Time::Zero();
  EXPECT_EQ(ComputePriority(j, At(t0 + Duration::Hours(4)), w_).age_points, 0) << "not eligible while both wait";
  ASSERT_TRUE(state_.EndPending(*first, core::JobState::kCancelled, t0 + Duration::Hours(1), "x").ok());
  EXPECT_EQ(ComputePriority(j, At(t0 + Duration::Hours(4)), w_).age_points, 0) << "one still waits";
  ASSERT_TRUE(state_.EndPending(*second, core::JobState::kCancelled, t0 + Duration::Hours(2), "x").ok());
  EXPECT_EQ(ComputePriority(j, At(t0 + Duration::Hours(4)), w_).age_points, 1'000) << "2 h since the last ended";
  // Ended before this state was built (a restart): the same.
  core::ClusterState restored;
  ASSERT_TRUE(restored.RestoreEnded(*first, spec, t0, core::JobState::kCompleted, t0 + Duration::Hours(1), "").ok());
  ASSERT_TRUE(restored.RestoreEnded(*second, spec, t0, core::JobState::kCompleted, t0 + Duration::Hours(3), "").ok());
  EXPECT_EQ(ComputePriority(j, restored.Snapshot(t0 + Duration::Hours(4)), w_).age_points, 500);
}

// The same for a hold: a held job is not eligible, and its age counts from
// its release.
TEST_F(PriorityTest, AHeldJobAgesFromItsRelease) {
  core::JobSpec spec;
  spec.hold = true;
  const Time t0 = Time::Zero();
  auto id = state_.Submit(spec, t0);
  ASSERT_TRUE(id.ok());
  auto pending = [&](Time now) { return state_.Snapshot(now).pending[0]; };
  EXPECT_EQ(ComputePriority(pending(t0 + Duration::Hours(5)), At(t0 + Duration::Hours(5)), w_).age_points, 0);
  ASSERT_TRUE(state_.Release(*id, t0 + Duration::Hours(5)).ok());
  EXPECT_EQ(ComputePriority(pending(t0 + Duration::Hours(7)), At(t0 + Duration::Hours(7)), w_).age_points, 1'000);
  EXPECT_EQ(state_.Find(*id)->released_at, t0 + Duration::Hours(5)) << "kept with the job, for the store";
}

TEST_F(PriorityTest, SizeIsOffByDefaultAndCapped) {
  EXPECT_EQ(ComputePriority(Job(0, Time::Zero(), 64), At(Time::Zero()), w_).size_points, 0);
  w_.size_points_per_gpu = 10;
  EXPECT_EQ(ComputePriority(Job(0, Time::Zero(), 1024), At(Time::Zero()), w_).size_points, w_.size_cap);
}

// The aging bound: a job of class c that has waited (class step / rate)
// hours ranks at least as high as any fresh job of class c + 1.
TEST_F(PriorityTest, AgeLiftsAcrossOneClassInBoundedTime) {
  const int64_t step = 10'000;
  const int64_t hours = step / w_.age_points_per_hour;  // 20 h with defaults
  ASSERT_GT(w_.age_cap, step) << "defaults must let age cross one class";
  const Time now = Time::Zero() + Duration::Hours(hours);
  const auto waited_low = ComputePriority(Job(0, Time::Zero(), 1), At(now), w_);
  const auto fresh_normal = ComputePriority(Job(1, now, 1), At(now), w_);
  EXPECT_GE(waited_low.total(), fresh_normal.total());
  const auto younger_low = ComputePriority(Job(0, Time::Zero() + Duration::Hours(1), 1), At(now), w_);
  EXPECT_LT(younger_low.total(), fresh_normal.total());
}

TEST(PriorityWeights, ValidateNamesTheField) {
  PriorityWeights w;
  w.age_cap = -1;
  const Status s = w.Validate();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "priority.ageCap");
}

}  // namespace
}  // namespace muster::scheduler
