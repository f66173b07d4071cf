// The las policy: order by attained service, preemption by service band,
// aging and the starvation guard (order/attained_service_order.h).
#include <gtest/gtest.h>

#include "core/cluster_state.h"
#include "scheduler/order/attained_service_order.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace muster::scheduler {
namespace {

using core::ClusterState;
using core::JobId;
using testing::AddNodes;
using testing::Apply;
using testing::Gpus;
using testing::Started;

constexpr int64_t kHour = 3600;

std::unique_ptr<Scheduler> Las() {
  SchedulerOptions o;
  o.policy = "las";
  return testing::MakeScheduler(o);
}

JobId Submit(ClusterState& state, Time at, const std::string& cls = "low") {
  auto id = state.Submit(Gpus(1, 8, Duration::Hours(100), cls), at);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return *id;
}

void CycleAndApply(ClusterState& state, Time now) { Apply(state, Las()->Cycle(state.Snapshot(now)), now); }

// One 8-GPU node, running one job of `cls` since time zero.
JobId StartOne(ClusterState& state, const std::string& cls = "low") {
  AddNodes(state, 1, 8, 0);
  const JobId id = Submit(state, Time::Zero(), cls);
  CycleAndApply(state, Time::Zero());
  return id;
}

TEST(AttainedService, BandsGrowByTheFactor) {
  const ServiceBands b;  // 8 GPU-hours, then x8
  EXPECT_EQ(b.BandOf(0), 0);
  EXPECT_EQ(b.BandOf(8 * kHour - 1), 0);
  EXPECT_EQ(b.BandOf(8 * kHour), 1);
  EXPECT_EQ(b.BandOf(64 * kHour - 1), 1);
  EXPECT_EQ(b.BandOf(64 * kHour), 2);
  EXPECT_EQ(b.BandOf(INT64_MAX / 2), b.max_band);
}

TEST(AttainedService, ANewJobStopsOneThatHasRunAHigherBandsWorth) {
  ClusterState state;
  const Time t0 = Time::Zero();
  const JobId old = StartOne(state);
  // 30 minutes in, the running job has 4 GPU-hours: band 0, as a new job's.
  const JobId fresh = Submit(state, t0 + Duration::Minutes(30));
  core::Decisions d = Las()->Cycle(state.Snapshot(t0 + Duration::Minutes(30)));
  EXPECT_TRUE(d.preemptions.empty());
  // Two hours in it has 16: band 1, and the new job stops it.
  const Time now = t0 + Duration::Hours(2);
  d = Las()->Cycle(state.Snapshot(now));
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, fresh);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{old});
  EXPECT_TRUE(d.preemptions[0].for_service);
  EXPECT_FALSE(d.preemptions[0].reclaim);
  // A class that is not preemptible is never stopped for service.
  ClusterState other;
  StartOne(other, "normal");
  Submit(other, t0 + Duration::Minutes(30), "normal");
  EXPECT_TRUE(Las()->Cycle(other.Snapshot(now)).preemptions.empty());
}

TEST(AttainedService, ARequeuedJobKeepsItsServiceAndAgesBackToTheFront) {
  ClusterState state;
  const Time t0 = Time::Zero();
  const JobId old = StartOne(state);
  Time now = t0 + Duration::Hours(2);
  ASSERT_TRUE(state.Requeue(old, now, "stopped").ok());  // 16 GPU-hours: band 1
  const JobId fresh = Submit(state, now);
  core::Decisions d = Las()->Cycle(state.Snapshot(now));
  EXPECT_TRUE(Started(d, fresh)) << "band 0 goes first, though submitted later";
  EXPECT_FALSE(Started(d, old));
  Apply(state, d, now);
  ASSERT_TRUE(state.Finish(fresh, core::JobState::kCompleted, now + Duration::Minutes(1)).ok());

  // Two pending again: after 6 hours waiting (one age step) the old job is
  // back in band 0, and older there.
  const JobId newer = Submit(state, now + Duration::Hours(6));
  now = now + Duration::Hours(6);
  d = Las()->Cycle(state.Snapshot(now));
  EXPECT_TRUE(Started(d, old));
  EXPECT_FALSE(Started(d, newer));
}

TEST(AttainedService, ARunThatFollowedAStarvingWaitIsNotStoppedForService) {
  ClusterState state;
  const Time t0 = Time::Zero();
  const JobId blocker = StartOne(state, "normal");
  const JobId waited = Submit(state, t0);
  // It waits 9 hours, past the 8-hour starvation threshold, then runs.
  Time now = t0 + Duration::Hours(9);
  ASSERT_TRUE(state.Finish(blocker, core::JobState::kCompleted, now).ok());
  core::Decisions d = Las()->Cycle(state.Snapshot(now));
  ASSERT_TRUE(Started(d, waited));
  Apply(state, d, now);
  EXPECT_EQ(state.running().at(waited).queued, Duration::Hours(9));
  // Three hours later it has 24 GPU-hours (band 1); a new job waits.
  now = now + Duration::Hours(3);
  Submit(state, now);
  d = Las()->Cycle(state.Snapshot(now));
  EXPECT_TRUE(d.preemptions.empty());
}

TEST(AttainedService, AJobWaitingHalfAgainPastTheStarvationThresholdStopsAnyBand) {
  ClusterState state;
  const Time t0 = Time::Zero();
  // A ran 100 hours on all 8 GPUs (800 GPU-hours: band 3), then was requeued.
  const JobId a = StartOne(state);
  Time now = t0 + Duration::Hours(100);
  ASSERT_TRUE(state.Requeue(a, now, "stopped").ok());
  const JobId b = Submit(state, now);
  CycleAndApply(state, now);
  ASSERT_TRUE(state.running().count(b));
  // 11 hours on, A has waited past the threshold (8 h) and B has 88
  // GPU-hours (band 2, below A's): A does not stop it.
  core::Decisions d = Las()->Cycle(state.Snapshot(now + Duration::Hours(11)));
  EXPECT_TRUE(d.preemptions.empty());
  // Past 12 hours (1.5 x the threshold) A stops B whatever its band.
  d = Las()->Cycle(state.Snapshot(now + Duration::Hours(13)));
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, a);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{b});
  EXPECT_TRUE(d.preemptions[0].for_service);
}

}  // namespace
}  // namespace muster::scheduler
