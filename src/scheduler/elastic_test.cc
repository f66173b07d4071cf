// Elastic jobs: started with what fits (at least their minimum), grown while
// capacity is free, and giving back their newest replicas before any job is
// stopped whole.
#include <gtest/gtest.h>

#include <string>

#include "core/cluster_state.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace muster::scheduler {
namespace {

using core::ClusterState;
using core::JobId;
using core::ReasonCode;
using testing::AddNodes;
using testing::Apply;
using testing::Gpus;
using testing::ReasonOf;
using testing::Started;

const Time t0 = Time::Zero();
const Duration kDay = Duration::Hours(24);

JobId Submit(ClusterState& state, core::JobSpec spec, Time at) {
  auto id = state.Submit(std::move(spec), at);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : 0;
}

core::JobSpec Elastic(int min, int max, int gpus, const std::string& cls = "normal") {
  core::JobSpec spec = Gpus(max, gpus, kDay, cls);
  spec.min_replicas = min;
  return spec;
}

int32_t Replicas(const ClusterState& state, JobId job) { return state.running().at(job).replicas(); }

core::Decisions Cycle(ClusterState& state, Time now) {
  const core::Decisions d = testing::MakeScheduler()->Cycle(state.Snapshot(now));
  Apply(state, d, now);
  EXPECT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
  return d;
}

TEST(Elastic, StartsWithWhatFitsAndAtLeastItsMinimum) {
  ClusterState state;
  AddNodes(state, 2, 8, 0);
  const JobId fixed = Submit(state, Gpus(1, 8, kDay), t0);
  Cycle(state, t0);
  const JobId elastic = Submit(state, Elastic(1, 4, 4), t0);
  const JobId too_big = Submit(state, Elastic(3, 4, 4), t0);
  const core::Decisions d = Cycle(state, t0);
  ASSERT_TRUE(Started(d, elastic));
  EXPECT_EQ(Replicas(state, elastic), 2) << "8 GPUs free: two of its 4-GPU replicas";
  EXPECT_FALSE(Started(d, too_big)) << "its minimum, 12 GPUs, does not fit";
  ASSERT_NE(ReasonOf(d, too_big), nullptr);
  EXPECT_EQ(ReasonOf(d, too_big)->code, ReasonCode::kResources);
  EXPECT_EQ(ReasonOf(d, too_big)->replicas, 3) << "it waits for its minimum";
  (void)fixed;
}

TEST(Elastic, GrowsWhenCapacityFrees) {
  ClusterState state;
  AddNodes(state, 2, 8, 0);
  const JobId fixed = Submit(state, Gpus(1, 8, kDay), t0);
  Cycle(state, t0);
  const JobId elastic = Submit(state, Elastic(1, 4, 4), t0);
  Cycle(state, t0);
  ASSERT_EQ(Replicas(state, elastic), 2);
  const core::Decisions same = Cycle(state, t0 + Duration::Minutes(1));
  EXPECT_TRUE(same.growths.empty()) << "nothing is free";
  ASSERT_TRUE(state.Finish(fixed, core::JobState::kCompleted, t0 + Duration::Minutes(2)).ok());
  const core::Decisions d = Cycle(state, t0 + Duration::Minutes(2));
  ASSERT_EQ(d.growths.size(), 1u);
  EXPECT_EQ(d.growths[0].job, elastic);
  EXPECT_EQ(Replicas(state, elastic), 4);
  // The replicas it had are where they were; the new ones come after.
  const core::RunningJob& r = state.running().at(elastic);
  EXPECT_EQ(r.allocations.size(), 2u);
  // GPU-seconds: 8 GPUs for 2 minutes, then 16.
  EXPECT_EQ(r.AttainedGpuSeconds(t0 + Duration::Minutes(3)), 8 * 120 + 16 * 60);
}

TEST(Elastic, GivesBackItsNewestReplicasInsteadOfBeingPreempted) {
  ClusterState state;
  AddNodes(state, 2, 8, 0);
  const JobId elastic = Submit(state, Elastic(1, 4, 4, "low"), t0);
  Cycle(state, t0);
  ASSERT_EQ(Replicas(state, elastic), 4);
  const Time now = t0 + Duration::Hours(1);
  const JobId high = Submit(state, Gpus(1, 8, kDay, "high"), now);
  const core::Decisions d = Cycle(state, now);
  ASSERT_EQ(d.preemptions.size(), 1u);
  const core::Preemption& p = d.preemptions[0];
  EXPECT_EQ(p.job, high);
  ASSERT_EQ(p.shrinks.size(), 1u);
  EXPECT_EQ(p.shrinks[0].job, elastic);
  EXPECT_EQ(p.shrinks[0].keep, 2) << "one node's worth, its two newest replicas";
  EXPECT_FALSE(state.running().at(elastic).stopping) << "it is not stopped whole";
  // Its newest replicas were on the second node, which the high job gets.
  const core::RunningJob& r = state.running().at(elastic);
  ASSERT_EQ(p.allocations.size(), 1u);
  EXPECT_EQ(p.allocations[0].node, r.allocations.back().node);
  // Nothing grows or shrinks it again while its replicas stop.
  const core::Decisions wait = Cycle(state, now + Duration::Seconds(10));
  EXPECT_TRUE(wait.growths.empty());
  EXPECT_TRUE(wait.preemptions.empty());
  EXPECT_EQ(ReasonOf(wait, high)->code, ReasonCode::kPreempting);
  // They stopped: the high job starts on the held node, and the elastic
  // job runs on with two.
  ASSERT_TRUE(state.ShrinkTo(elastic, 2, now + Duration::Seconds(20)).ok());
  const core::Decisions after = Cycle(state, now + Duration::Seconds(20));
  EXPECT_TRUE(Started(after, high));
  EXPECT_EQ(Replicas(state, elastic), 2);
  EXPECT_TRUE(after.growths.empty()) << "nothing is free";
}

TEST(Elastic, AJobOfItsOwnClassTakesBackWhatItGrewInto) {
  ClusterState state;
  AddNodes(state, 2, 8, 0);
  const JobId elastic = Submit(state, Elastic(2, 4, 4), t0);
  Cycle(state, t0);
  ASSERT_EQ(Replicas(state, elastic), 4);
  const JobId other = Submit(state, Gpus(1, 4, kDay), t0 + Duration::Minutes(1));
  const core::Decisions d = Cycle(state, t0 + Duration::Minutes(1));
  ASSERT_EQ(d.preemptions.size(), 1u) << "normal may not preempt normal, but the replicas above the minimum yield";
  ASSERT_EQ(d.preemptions[0].shrinks.size(), 1u);
  EXPECT_EQ(d.preemptions[0].shrinks[0].keep, 3);
  EXPECT_EQ(d.preemptions[0].job, other);
}

TEST(Elastic, NeverBelowItsMinimumAndNotForALowerClass) {
  ClusterState state;
  AddNodes(state, 2, 8, 0);
  const JobId elastic = Submit(state, Elastic(3, 4, 4), t0);
  Cycle(state, t0);
  ASSERT_EQ(Replicas(state, elastic), 4);
  // 8 GPUs would take it below its minimum of three replicas.
  const JobId big = Submit(state, Gpus(1, 8, kDay), t0 + Duration::Minutes(1));
  // A low job may not take a normal job's replicas.
  const JobId low = Submit(state, Gpus(1, 4, kDay, "low"), t0 + Duration::Minutes(1));
  const core::Decisions d = Cycle(state, t0 + Duration::Minutes(1));
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_EQ(Replicas(state, elastic), 4);
  EXPECT_EQ(ReasonOf(d, big)->code, ReasonCode::kResources);
  EXPECT_EQ(ReasonOf(d, low)->code, ReasonCode::kResources);
}

TEST(Elastic, DoesNotGrowWhileAJobOfItsClassWaitsForCapacity) {
  ClusterState state;
  AddNodes(state, 3, 8, 0);
  const JobId fixed = Submit(state, Gpus(1, 8, kDay), t0);
  const JobId elastic = Submit(state, Elastic(1, 4, 8), t0);
  Cycle(state, t0);
  ASSERT_EQ(Replicas(state, elastic), 2);
  ASSERT_TRUE(state.Finish(fixed, core::JobState::kCompleted, t0 + Duration::Minutes(1)).ok());
  // Wants all three nodes: blocked, and it would take back what the
  // elastic job grew into.
  const JobId wide = Submit(state, Gpus(3, 8, kDay), t0 + Duration::Minutes(1));
  const core::Decisions d = Cycle(state, t0 + Duration::Minutes(1));
  EXPECT_TRUE(d.growths.empty());
  EXPECT_FALSE(Started(d, wide));
  EXPECT_EQ(Replicas(state, elastic), 2);
  // A lower class waiting does not stop it.
  ASSERT_TRUE(state.EndPending(wide, core::JobState::kCancelled, t0 + Duration::Minutes(2), "").ok());
  Submit(state, Gpus(3, 8, kDay, "low"), t0 + Duration::Minutes(2));
  const core::Decisions grew = Cycle(state, t0 + Duration::Minutes(2));
  ASSERT_EQ(grew.growths.size(), 1u);
  EXPECT_EQ(Replicas(state, elastic), 3);
}

TEST(ElasticState, GrowAndShrinkKeepEveryDeviceAccountedFor) {
  ClusterState state;
  AddNodes(state, 2, 8, 0);
  const JobId elastic = Submit(state, Elastic(1, 4, 3), t0);
  const JobId other = Submit(state, Gpus(1, 2, kDay), t0);
  core::Binding b{elastic, {{0, 1, core::Resources{3, 0, 0}}}};
  ASSERT_TRUE(state.Bind(b, t0).ok());
  ASSERT_TRUE(state.Bind({other, {{0, 1, core::Resources{2, 0, 0}}}}, t0).ok());
  // Over its maximum, or on capacity that is not free: refused, nothing changes.
  EXPECT_FALSE(state.Grow(elastic, {{1, 4, core::Resources{12, 0, 0}}}, t0).ok());
  EXPECT_FALSE(state.Grow(elastic, {{0, 2, core::Resources{6, 0, 0}}}, t0).ok());
  ASSERT_TRUE(state.Grow(elastic, {{1, 2, core::Resources{6, 0, 0}}, {0, 1, core::Resources{3, 0, 0}}}, t0).ok());
  ASSERT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
  EXPECT_EQ(Replicas(state, elastic), 4);
  EXPECT_EQ(state.nodes()[0].free.gpus, 0);
  EXPECT_FALSE(state.ShrinkTo(elastic, 0, t0).ok()) << "below its minimum";
  ASSERT_TRUE(state.ShrinkTo(elastic, 2, t0).ok());
  ASSERT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
  // The newest went: the one on node 0, then one of the two on node 1.
  const core::RunningJob& r = state.running().at(elastic);
  ASSERT_EQ(r.allocations.size(), 2u);
  EXPECT_EQ(r.allocations[1].node, 1);
  EXPECT_EQ(r.allocations[1].replicas, 1);
  EXPECT_EQ(r.gpu_ids[1].size(), 3u);
  EXPECT_EQ(state.nodes()[0].free.gpus, 3);
  EXPECT_EQ(state.nodes()[1].free.gpus, 5);
  EXPECT_FALSE(state.Grow(other, {{1, 1, core::Resources{2, 0, 0}}}, t0).ok()) << "a fixed gang does not grow";
}

}  // namespace
}  // namespace muster::scheduler
