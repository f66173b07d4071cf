#include "scheduler/preemption.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/random.h"
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

std::unique_ptr<Scheduler> Make(PreemptionOptions p = {}) {
  SchedulerOptions o;
  o.preemption = p;
  return testing::MakeScheduler(o);
}

JobId Submit(ClusterState& state, int replicas, int gpus, const std::string& cls, Time now) {
  auto id = state.Submit(Gpus(replicas, gpus, Duration::Hours(24), cls), now);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return *id;
}

// Submits and starts a job now (the cluster must have room).
JobId Start(ClusterState& state, int replicas, int gpus, const std::string& cls, Time now) {
  const JobId id = Submit(state, replicas, gpus, cls, now);
  const core::Decisions d = Make()->Cycle(state.Snapshot(now));
  EXPECT_TRUE(Started(d, id)) << "job " << id << " did not start";
  Apply(state, d, now);
  return id;
}

std::set<JobId> Victims(const core::Decisions& d) {
  std::set<JobId> v;
  for (const auto& p : d.preemptions) v.insert(p.victims.begin(), p.victims.end());
  return v;
}

TEST(Preemption, AHighJobStopsALowOneOnlyAfterItsMinimumRunTimeAndStartsInItsPlace) {
  ClusterState state;
  AddNodes(state, 1, 8, 0);
  const Time t0 = Time::Zero();
  const JobId low = Start(state, 1, 8, "low", t0);
  const JobId high = Submit(state, 1, 8, "high", t0 + Duration::Minutes(1));

  core::Decisions d = Make()->Cycle(state.Snapshot(t0 + Duration::Minutes(2)));
  EXPECT_TRUE(d.preemptions.empty()) << "the low job has run under 5 minutes";
  EXPECT_EQ(ReasonOf(d, high)->code, ReasonCode::kResources);

  Time now = t0 + Duration::Minutes(6);
  d = Make()->Cycle(state.Snapshot(now));
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, high);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{low});
  EXPECT_EQ(d.preemptions[0].lost_gpu_seconds, 8 * 6 * 60);  // no checkpoint: all 6 minutes
  ASSERT_NE(ReasonOf(d, high), nullptr);
  EXPECT_EQ(ReasonOf(d, high)->code, ReasonCode::kPreempting);
  EXPECT_EQ(ReasonOf(d, high)->other_job, low);
  Apply(state, d, now);

  // During the grace period nothing more is preempted and nothing starts.
  now = now + Duration::Seconds(10);
  d = Make()->Cycle(state.Snapshot(now));
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_TRUE(d.bindings.empty());
  EXPECT_EQ(ReasonOf(d, high)->code, ReasonCode::kPreempting);
  EXPECT_NE(core::FormatReason(*ReasonOf(d, high), "H100", now).find("waits for job 1, preempted for it"),
            std::string::npos)
      << core::FormatReason(*ReasonOf(d, high), "H100", now);

  // The victim stops; the preemptor starts; the victim waits with its
  // original submit time (its age) and its class.
  ASSERT_TRUE(state.Requeue(low, now, "Preempted").ok());
  d = Make()->Cycle(state.Snapshot(now));
  EXPECT_TRUE(Started(d, high));
  Apply(state, d, now);
  EXPECT_EQ(state.Find(low)->submit_time, t0);
  const auto pending = state.Snapshot(now).pending;
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, low);
  EXPECT_EQ(pending[0].submit_time, t0);
  EXPECT_EQ(pending[0].priority_class, 0);
  EXPECT_TRUE(pending[0].nominated.empty());
  ASSERT_TRUE(state.CheckInvariants().ok());
}

TEST(Preemption, OnlyPreemptibleLowerClassesAreVictimsAndOnlyClassesThatMayPreemptPreempt) {
  ClusterState state;
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  Start(state, 1, 8, "normal", t0);  // not preemptible
  Start(state, 1, 8, "high", t0);    // a higher class
  const Time now = t0 + Duration::Hours(1);
  Submit(state, 1, 8, "high", now);
  Submit(state, 1, 8, "normal", now);
  EXPECT_TRUE(Make()->Cycle(state.Snapshot(now)).preemptions.empty());

  ClusterState lows;
  AddNodes(lows, 1, 8, 0);
  Start(lows, 1, 8, "low", t0);
  Submit(lows, 1, 8, "normal", now);  // normal may not preempt
  Submit(lows, 1, 8, "low", now);     // nor may a job of the same class
  EXPECT_TRUE(Make()->Cycle(lows.Snapshot(now)).preemptions.empty());

  PreemptionOptions off;
  off.enabled = false;
  Submit(lows, 1, 8, "high", now);
  EXPECT_TRUE(Make(off)->Cycle(lows.Snapshot(now)).preemptions.empty());
  EXPECT_EQ(Make()->Cycle(lows.Snapshot(now)).preemptions.size(), 1u);
}

// The example of preemption.h.
TEST(Preemption, TheVictimsLoseTheLeastWork) {
  for (const int b_minutes : {24, 40}) {
    ClusterState state;
    AddNodes(state, 2, 8, 0);
    const Time t0 = Time::Zero();
    const JobId a1 = Start(state, 1, 4, "low", t0);
    const JobId a2 = Start(state, 1, 4, "low", t0);
    const JobId b = Start(state, 1, 8, "low", t0);
    const Time now = t0 + Duration::Hours(2);
    // GPU-minutes since the newest checkpoint: a1 4x2.5 = 10, a2 4x5 = 20, b 8x(b_minutes/8).
    ASSERT_TRUE(state.NoteCheckpoint(a1, now - Duration::Seconds(150)).ok());
    ASSERT_TRUE(state.NoteCheckpoint(a2, now - Duration::Minutes(5)).ok());
    ASSERT_TRUE(state.NoteCheckpoint(b, now - Duration::Seconds(b_minutes * 60 / 8)).ok());
    const JobId high = Submit(state, 1, 8, "high", now);
    const core::Decisions d = Make()->Cycle(state.Snapshot(now));
    ASSERT_EQ(d.preemptions.size(), 1u);
    EXPECT_EQ(d.preemptions[0].job, high);
    if (b_minutes == 24) {
      EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{b});
      EXPECT_EQ(d.preemptions[0].lost_gpu_seconds, 24 * 60);
    } else {
      EXPECT_EQ(Victims(d), (std::set<JobId>{a1, a2}));
      EXPECT_EQ(d.preemptions[0].lost_gpu_seconds, 30 * 60);
    }
  }
}

TEST(Preemption, EqualLossGoesToTheFewestVictims) {
  ClusterState state;
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  Start(state, 1, 4, "low", t0);
  Start(state, 1, 4, "low", t0);
  const JobId whole = Start(state, 1, 8, "low", t0);
  const Time now = t0 + Duration::Hours(1);  // 4x1h + 4x1h = 8x1h
  Submit(state, 1, 8, "high", now);
  const core::Decisions d = Make()->Cycle(state.Snapshot(now));
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{whole});
}

TEST(Preemption, AGangTakesTheCheapestNodesItNeedsAndNoMore) {
  ClusterState state;
  AddNodes(state, 4, 8, 0);
  const Time t0 = Time::Zero();
  std::vector<JobId> lows;
  for (int i = 0; i < 4; ++i) lows.push_back(Start(state, 1, 8, "low", t0));
  const Time now = t0 + Duration::Hours(3);
  // Checkpoints 10, 50, 20 and 40 minutes ago.
  const int ago[] = {10, 50, 20, 40};
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(state.NoteCheckpoint(lows[i], now - Duration::Minutes(ago[i])).ok());
  const JobId gang = Submit(state, 2, 8, "high", now);
  const core::Decisions d = Make()->Cycle(state.Snapshot(now));
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, gang);
  EXPECT_EQ(Victims(d), (std::set<JobId>{lows[0], lows[2]}));
  EXPECT_EQ(d.preemptions[0].lost_gpu_seconds, 8 * 30 * 60);
  int64_t gpus = 0;
  for (const auto& a : d.preemptions[0].allocations) gpus += a.resources.gpus;
  EXPECT_EQ(gpus, 16);
}

TEST(Preemption, HeldCapacityIsNotGivenToAnotherJobWhileTheVictimsStop) {
  ClusterState state;
  AddNodes(state, 1, 8, 0);
  const Time t0 = Time::Zero();
  const JobId v1 = Start(state, 1, 4, "low", t0);
  const JobId v2 = Start(state, 1, 4, "low", t0);
  Time now = t0 + Duration::Hours(1);
  const JobId high = Submit(state, 1, 8, "high", now);
  core::Decisions d = Make()->Cycle(state.Snapshot(now));
  ASSERT_EQ(d.preemptions.size(), 1u);
  Apply(state, d, now);

  // One victim stops first; a 4-GPU normal job would fit in what it freed.
  ASSERT_TRUE(state.Requeue(v1, now, "Preempted").ok());
  const JobId other = Submit(state, 1, 4, "normal", now);
  now = now + Duration::Seconds(5);
  d = Make()->Cycle(state.Snapshot(now));
  EXPECT_FALSE(Started(d, other));
  EXPECT_FALSE(Started(d, v1));
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_EQ(ReasonOf(d, high)->other_job, v2);

  ASSERT_TRUE(state.Requeue(v2, now, "Preempted").ok());
  d = Make()->Cycle(state.Snapshot(now + Duration::Seconds(20)));
  EXPECT_TRUE(Started(d, high));
  EXPECT_FALSE(Started(d, other));
}

TEST(Preemption, NothingIsPreemptedForAJobThatCouldNotStartAfterwards) {
  ClusterState state;
  AddNodes(state, 2, 8, 1);  // two leaves of one node
  const Time t0 = Time::Zero();
  Start(state, 1, 8, "low", t0);
  Start(state, 1, 8, "normal", t0);
  const Time now = t0 + Duration::Hours(1);
  // 16 GPUs within one leaf never fit; 16 anywhere would need the normal job.
  auto leaf = Gpus(2, 8, Duration::Hours(1), "high");
  leaf.topology = core::TopologyScope::kLeaf;
  ASSERT_TRUE(state.Submit(leaf, now).ok());
  Submit(state, 2, 8, "high", now);
  Submit(state, 1, 16, "high", now);  // larger than any node
  const core::Decisions d = Make()->Cycle(state.Snapshot(now));
  EXPECT_TRUE(d.preemptions.empty());
}

TEST(Preemption, AJobEvictedForAPreemptorThatDidNotStartIsNotEvictedAgain) {
  ClusterState state;
  AddNodes(state, 1, 8, 0);
  const JobId low = Start(state, 1, 8, "low", Time::Zero());
  ASSERT_TRUE(state.SetPreemptImmune(low, true).ok());
  const Time now = Time::Zero() + Duration::Hours(1);
  Submit(state, 1, 8, "high", now);
  EXPECT_TRUE(Make()->Cycle(state.Snapshot(now)).preemptions.empty());
  ASSERT_TRUE(state.SetPreemptImmune(low, false).ok());
  EXPECT_EQ(Make()->Cycle(state.Snapshot(now)).preemptions.size(), 1u);
}

TEST(Preemption, AtMostMaxPerCyclePreemptorsAndAVictimServesOnlyOne) {
  ClusterState state;
  AddNodes(state, 6, 8, 0);
  for (int i = 0; i < 6; ++i) Start(state, 1, 8, "low", Time::Zero());
  const Time now = Time::Zero() + Duration::Hours(1);
  for (int i = 0; i < 6; ++i) Submit(state, 1, 8, "high", now);
  PreemptionOptions p;
  p.max_per_cycle = 4;
  const core::Decisions d = Make(p)->Cycle(state.Snapshot(now));
  EXPECT_EQ(d.preemptions.size(), 4u);
  EXPECT_EQ(Victims(d).size(), 4u);
  p.max_per_cycle = -1;
  SchedulerOptions o;
  o.preemption = p;
  EXPECT_EQ(Scheduler::Create(o).status().field(), "scheduler.preemption.maxPerCycle");
}

TEST(Preemption, SimulatedCheckpointsEveryIntervalBoundTheLoss) {
  core::RunningJob r;
  r.start = Time::Zero();
  r.allocations = {{0, 1, {2, 0, 0}}};
  r.checkpoint_interval = Duration::Minutes(30);
  EXPECT_EQ(LostGpuSeconds(r, Time::Zero() + Duration::Minutes(70)), 2 * 10 * 60);
  r.last_checkpoint = Time::Zero() + Duration::Minutes(65);
  EXPECT_EQ(LostGpuSeconds(r, Time::Zero() + Duration::Minutes(70)), 2 * 5 * 60);
}

// Random clusters of low, normal and high jobs, with preemptions applied as
// the server does and victims stopping by the next cycle: every preemptor
// starts in the cycle after its victims stopped, on the held capacity; no
// victim is of a class it may not preempt or younger than the minimum run
// time; the accounting stays whole.
TEST(Preemption, RandomizedEveryPreemptorStartsOnceItsVictimsStop) {
  int64_t preemptions = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Random rng(seed);
    ClusterState state;
    AddNodes(state, static_cast<int>(rng.Uniform(2, 10)), 8, static_cast<int>(rng.Uniform(1, 4)));
    Time now = Time::Zero();
    std::vector<JobId> waiting;  // preemptors from the last cycle
    std::vector<JobId> stopping;
    for (int step = 0; step < 30; ++step) {
      for (JobId v : stopping) ASSERT_TRUE(state.Requeue(v, now, "Preempted").ok());
      stopping.clear();
      for (int k = rng.Uniform(0, 4); k > 0; --k) {
        const int64_t g = std::vector<int64_t>{1, 2, 4, 8, 16}[rng.Uniform(0, 4)];
        const int32_t replicas = g > 8 ? 2 : 1;
        const std::string cls = std::vector<std::string>{"low", "low", "normal", "high"}[rng.Uniform(0, 3)];
        ASSERT_TRUE(
            state
                .Submit(Gpus(replicas, static_cast<int>(g / replicas), Duration::Minutes(rng.Uniform(30, 600)), cls),
                        now)
                .ok());
      }
      const auto snap = state.Snapshot(now);
      const core::Decisions d = Make()->Cycle(snap);
      for (JobId p : waiting) ASSERT_TRUE(Started(d, p)) << "seed " << seed << " step " << step << " job " << p;
      waiting.clear();
      for (const auto& p : d.preemptions) {
        ++preemptions;
        waiting.push_back(p.job);
        for (JobId v : p.victims) {
          const core::RunningJob& r = state.running().at(v);
          ASSERT_EQ(snap.classes[r.priority_class].name, "low");
          ASSERT_GE(now - r.start, Duration::Minutes(5));
          stopping.push_back(v);
        }
      }
      Apply(state, d, now);
      ASSERT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
      now = now + Duration::Minutes(rng.Uniform(1, 20));
      std::vector<JobId> ending;
      for (const auto& [id, r] : state.running()) {
        if (!r.stopping && (r.expected_end <= now || rng.Bernoulli(0.1))) ending.push_back(id);
      }
      std::sort(ending.begin(), ending.end());
      for (JobId id : ending) ASSERT_TRUE(state.Finish(id, core::JobState::kCompleted, now).ok());
    }
  }
  EXPECT_GT(preemptions, 20);  // the property was exercised
}

}  // namespace
}  // namespace muster::scheduler
