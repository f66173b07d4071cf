// Queue quotas: limits (the most a queue may hold) and guarantees (what a
// queue may reclaim from borrowing queues by preemption).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/random.h"
#include "core/cluster_state.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace muster::scheduler {
namespace {

using core::ClusterConfig;
using core::ClusterState;
using core::JobId;
using core::QueueConfig;
using core::ReasonCode;
using testing::AddNodes;
using testing::Gpus;
using testing::ReasonOf;
using testing::Started;

std::unique_ptr<Scheduler> Make() { return testing::MakeScheduler(); }

ClusterConfig WithQueues(std::vector<QueueConfig> queues) {
  ClusterConfig c;
  c.queues = std::move(queues);
  return c;
}

JobId Submit(ClusterState& state, const std::string& queue, int gpus, Time now, const std::string& cls = "normal",
             const std::string& type = "") {
  core::JobSpec spec = Gpus(1, gpus, Duration::Hours(24), cls);
  spec.queue = queue;
  spec.gpu_type = type;
  auto id = state.Submit(spec, now);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return *id;
}

core::Decisions CycleAndApply(ClusterState& state, Time now) {
  core::Decisions d = Make()->Cycle(state.Snapshot(now));
  testing::Apply(state, d, now);
  return d;
}

TEST(Quota, AQueueAtItsLimitWaitsWithTheNumbersWhileOthersStart) {
  ClusterState state(WithQueues({{"a", {}, {{"*", 8}}, ""}}));
  AddNodes(state, 2, 8, 0);
  const Time now = Time::Zero();
  const JobId a1 = Submit(state, "a", 4, now);
  const JobId a2 = Submit(state, "a", 4, now);
  const JobId a3 = Submit(state, "a", 4, now);
  const JobId b1 = Submit(state, "b", 4, now);
  const core::Decisions d = CycleAndApply(state, now);
  EXPECT_TRUE(Started(d, a1));
  EXPECT_TRUE(Started(d, a2));
  EXPECT_TRUE(Started(d, b1));
  ASSERT_NE(ReasonOf(d, a3), nullptr);
  EXPECT_EQ(ReasonOf(d, a3)->code, ReasonCode::kQuota);
  EXPECT_EQ(ReasonOf(d, a3)->queue_used, 8);
  EXPECT_EQ(ReasonOf(d, a3)->queue_limit, 8);
  EXPECT_EQ(core::FormatReason(*ReasonOf(d, a3), "any", now), "Quota: need 4 GPU; its queue holds 8 of its limit of 8");
}

// A job larger than its queue's limit can never run: Unschedulable, saying
// so, not Quota as if it waited its turn (Kueue: inadmissible; Slurm
// refuses it). Its queue's other jobs start.
TEST(Quota, AJobLargerThanItsQueuesLimitIsUnschedulable) {
  ClusterState state(WithQueues({{"a", {}, {{"*", 16}}, ""}}));
  AddNodes(state, 4, 8, 0);
  const Time now = Time::Zero();
  core::JobSpec big = Gpus(3, 8, Duration::Hours(1));
  big.queue = "a";
  auto huge = state.Submit(big, now);
  ASSERT_TRUE(huge.ok());
  const JobId small = Submit(state, "a", 8, now);
  const core::Decisions d = CycleAndApply(state, now);
  EXPECT_TRUE(Started(d, small));
  ASSERT_NE(ReasonOf(d, *huge), nullptr);
  EXPECT_EQ(ReasonOf(d, *huge)->code, ReasonCode::kUnschedulable);
  EXPECT_EQ(core::FormatReason(*ReasonOf(d, *huge), "any", now),
            "Unschedulable: need 3x8 GPU, more than its queue's limit of 16");
}

TEST(Quota, LimitsPerGpuTypeApplyToThatType) {
  ClusterState state(WithQueues({{"a", {}, {{"H100", 8}}, ""}}));
  AddNodes(state, 2, 8, 0, "h", "H100");
  AddNodes(state, 2, 8, 0, "g", "A100");
  const Time now = Time::Zero();
  const JobId h1 = Submit(state, "a", 8, now, "normal", "H100");
  const JobId h2 = Submit(state, "a", 8, now, "normal", "H100");
  const JobId g1 = Submit(state, "a", 8, now, "normal", "A100");
  const JobId g2 = Submit(state, "a", 8, now, "normal", "A100");
  const core::Decisions d = CycleAndApply(state, now);
  EXPECT_TRUE(Started(d, h1));
  EXPECT_EQ(ReasonOf(d, h2)->code, ReasonCode::kQuota);
  EXPECT_TRUE(Started(d, g1));
  EXPECT_TRUE(Started(d, g2));
}

// Random queues with limits, jobs of every size ending at random: after
// every cycle no queue holds more than its limit, per type or in all.
TEST(Quota, RandomizedUsageNeverExceedsALimit) {
  int64_t quota_waits = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    Random rng(seed);
    ClusterState state(WithQueues({{"q0", {}, {{"*", 12}}, ""}, {"q1", {}, {{"H100", 8}, {"*", 20}}, ""}, {"q2", {}, {}, ""}}));
    AddNodes(state, static_cast<int>(rng.Uniform(2, 6)), 8, 2, "h", "H100");
    AddNodes(state, static_cast<int>(rng.Uniform(1, 4)), 8, 2, "g", "A100");
    Time now = Time::Zero();
    for (int step = 0; step < 30; ++step) {
      for (int k = rng.Uniform(0, 5); k > 0; --k) {
        const int gpus = std::vector<int>{1, 2, 4, 8}[rng.Uniform(0, 3)];
        const std::string type = std::vector<std::string>{"", "H100", "A100"}[rng.Uniform(0, 2)];
        Submit(state, "q" + std::to_string(rng.Uniform(0, 2)), gpus, now,
               std::vector<std::string>{"low", "normal", "high"}[rng.Uniform(0, 2)], type);
      }
      const core::Decisions d = CycleAndApply(state, now);
      for (const auto& r : d.reasons) quota_waits += r.code == ReasonCode::kQuota;
      ASSERT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
      const auto snap = state.Snapshot(now);
      for (int32_t q = 0; q < state.num_queues(); ++q) {
        const core::QueueQuota* quota = snap.QuotaOf(q);
        if (quota == nullptr) continue;
        int64_t total = 0;
        for (int32_t t = 0; t < snap.num_gpu_types; ++t) {
          ASSERT_LE(snap.UsageOf(q, t), quota->Limit(t)) << "seed " << seed << " queue " << q << " type " << t;
          total += snap.UsageOf(q, t);
        }
        ASSERT_LE(total, quota->limit_total) << "seed " << seed << " queue " << q;
      }
      now = now + Duration::Minutes(rng.Uniform(1, 30));
      std::vector<JobId> ending;
      for (const auto& [id, r] : state.running()) {
        if (r.stopping || rng.Bernoulli(0.3)) ending.push_back(id);
      }
      std::sort(ending.begin(), ending.end());
      for (JobId id : ending) ASSERT_TRUE(state.Finish(id, core::JobState::kCompleted, now).ok());
    }
  }
  EXPECT_GT(quota_waits, 50);  // limits were reached
}

// Queue a is guaranteed 8 GPUs and idle; queue b borrows the whole cluster
// with jobs of a preemptible class. When a needs its guarantee (with a job
// of a class that may not preempt by class), one of b's jobs (the one
// losing least) is preempted, and a's job starts in the first cycle after
// it has stopped.
TEST(Quota, AReclaimReturnsTheGuaranteeOnceTheBorrowerStops) {
  ClusterState state(WithQueues({{"a", {{"*", 8}}, {}, ""}}));
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  const JobId b1 = Submit(state, "b", 8, t0, "low");
  const JobId b2 = Submit(state, "b", 8, t0, "low");
  CycleAndApply(state, t0);
  Time now = t0 + Duration::Hours(1);
  ASSERT_TRUE(state.NoteCheckpoint(b2, now - Duration::Minutes(1)).ok());
  const JobId a = Submit(state, "a", 8, now);
  core::Decisions d = CycleAndApply(state, now);
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_TRUE(d.preemptions[0].reclaim);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{b2});
  EXPECT_EQ(ReasonOf(d, a)->code, ReasonCode::kPreempting);
  ASSERT_TRUE(state.Requeue(b2, "Preempted").ok());
  now = now + Duration::Seconds(30);
  d = CycleAndApply(state, now);
  EXPECT_TRUE(Started(d, a));
  EXPECT_FALSE(Started(d, b2));
  EXPECT_EQ(state.running().count(b1), 1u);  // only what the guarantee needed was taken
}

// A reclaim takes only jobs of preemptible classes, unless reclaimAnyClass
// says jobs on borrowed GPUs are preemptible whatever their class.
TEST(Quota, AReclaimTakesPreemptibleClassesUnlessToldOtherwise) {
  ClusterState state(WithQueues({{"a", {{"*", 8}}, {}, ""}}));
  AddNodes(state, 1, 8, 0);
  const Time t0 = Time::Zero();
  Submit(state, "b", 8, t0, "normal");
  CycleAndApply(state, t0);
  const Time now = t0 + Duration::Hours(1);
  Submit(state, "a", 8, now);
  EXPECT_TRUE(Make()->Cycle(state.Snapshot(now)).preemptions.empty());
  SchedulerOptions o;
  o.preemption.reclaim_any_class = true;
  auto any = std::move(Scheduler::Create(o)).value();
  EXPECT_EQ(any->Cycle(state.Snapshot(now)).preemptions.size(), 1u);
}

TEST(Quota, AReclaimTakesOnlyFromQueuesOverTheirGuaranteeAndOnlyUpToItsOwn) {
  ClusterState state(WithQueues({{"a", {{"*", 8}}, {}, ""}, {"b", {{"*", 8}}, {}, ""}}));
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  const JobId b1 = Submit(state, "b", 8, t0, "low");  // within b's guarantee
  const JobId c1 = Submit(state, "c", 8, t0, "low");  // c has none: it borrows
  CycleAndApply(state, t0);
  Time now = t0 + Duration::Hours(1);
  ASSERT_TRUE(state.NoteCheckpoint(b1, now).ok());  // b1 would lose nothing, but b is within its guarantee
  const JobId a1 = Submit(state, "a", 8, now);
  core::Decisions d = CycleAndApply(state, now);
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{c1});
  ASSERT_TRUE(state.Requeue(c1, "Preempted").ok());
  d = CycleAndApply(state, now + Duration::Seconds(30));
  ASSERT_TRUE(Started(d, a1));

  // a holds its guarantee: a second job of a may not reclaim beyond it.
  now = now + Duration::Hours(1);
  const JobId a2 = Submit(state, "a", 8, now);
  d = CycleAndApply(state, now);
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_EQ(ReasonOf(d, a2)->code, ReasonCode::kResources);
}

// A higher class never takes what another queue is guaranteed, so a
// reclaim is never undone by a preemption (no thrashing): queue a's low job
// within its guarantee stays; once a borrows, its low jobs may be preempted.
TEST(Quota, AHigherClassDoesNotPreemptAnotherQueueWithinItsGuarantee) {
  ClusterState state(WithQueues({{"a", {{"*", 8}}, {}, ""}}));
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  const JobId a1 = Submit(state, "a", 8, t0, "low");  // within a's guarantee
  const JobId b1 = Submit(state, "b", 8, t0, "low");  // b borrows
  CycleAndApply(state, t0);
  Time now = t0 + Duration::Hours(1);
  ASSERT_TRUE(state.NoteCheckpoint(a1, now).ok());  // a1 would be the cheaper victim
  const JobId high = Submit(state, "c", 8, now, "high");
  core::Decisions d = CycleAndApply(state, now);
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, high);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{b1});
  EXPECT_FALSE(d.preemptions[0].reclaim);

  // Within its own queue a higher class preempts freely.
  const JobId a_high = Submit(state, "a", 8, now, "high");
  d = CycleAndApply(state, now);
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, a_high);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{a1});
}

// Teams nested under an organization: the organization's limit bounds the
// teams together.
TEST(Quota, AParentQueuesLimitBoundsItsChildrenTogether) {
  ClusterState state(WithQueues({{"org", {}, {{"*", 8}}, ""}, {"t1", {}, {}, "org"}, {"t2", {}, {}, "org"}}));
  AddNodes(state, 2, 8, 0);
  const Time now = Time::Zero();
  const JobId a = Submit(state, "t1", 8, now);
  const JobId b = Submit(state, "t2", 4, now);
  const JobId c = Submit(state, "other", 8, now);
  const core::Decisions d = CycleAndApply(state, now);
  EXPECT_TRUE(Started(d, a));
  EXPECT_TRUE(Started(d, c));
  ASSERT_NE(ReasonOf(d, b), nullptr);
  EXPECT_EQ(ReasonOf(d, b)->code, ReasonCode::kQuota);
  EXPECT_EQ(ReasonOf(d, b)->quota_level, 1);
  EXPECT_EQ(core::FormatReason(*ReasonOf(d, b), "any", now),
            "Quota: need 4 GPU; its parent queue holds 8 of its limit of 8");
}

// An organization within its guarantee protects its teams from other
// organizations' reclaims, even a team above its own (zero) guarantee; a
// queue of nobody's that borrows is reclaimed from instead, though it
// would lose more.
TEST(Quota, AnOrganizationWithinItsGuaranteeProtectsItsTeams) {
  ClusterState state(WithQueues({{"A", {{"*", 8}}, {}, ""},
                                 {"a1", {{"*", 8}}, {}, "A"},
                                 {"B", {{"*", 16}}, {}, ""},
                                 {"b1", {}, {}, "B"},
                                 {"b2", {}, {}, "B"}}));
  AddNodes(state, 3, 8, 0);
  const Time t0 = Time::Zero();
  const JobId b1 = Submit(state, "b1", 8, t0, "low");
  const JobId b2 = Submit(state, "b2", 8, t0, "low");
  const JobId c = Submit(state, "c", 8, t0, "low");
  CycleAndApply(state, t0);
  Time now = t0 + Duration::Hours(1);
  ASSERT_TRUE(state.NoteCheckpoint(b1, now).ok());
  ASSERT_TRUE(state.NoteCheckpoint(b2, now).ok());
  const JobId a = Submit(state, "a1", 8, now);
  const core::Decisions d = CycleAndApply(state, now);
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, a);
  EXPECT_TRUE(d.preemptions[0].reclaim);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{c});
}

// Within an organization, a team under its guarantee reclaims from a
// sibling that borrows.
TEST(Quota, ATeamReclaimsFromASiblingThatBorrows) {
  ClusterState state(WithQueues({{"org", {{"*", 16}}, {}, ""}, {"t1", {{"*", 8}}, {}, "org"}, {"t2", {{"*", 8}}, {}, "org"}}));
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  Submit(state, "t2", 8, t0, "low");
  Submit(state, "t2", 8, t0, "low");  // t2 borrows t1's share while t1 is idle
  CycleAndApply(state, t0);
  const Time now = t0 + Duration::Hours(1);
  const JobId t1 = Submit(state, "t1", 8, now);
  const core::Decisions d = CycleAndApply(state, now);
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, t1);
  EXPECT_TRUE(d.preemptions[0].reclaim);
}

}  // namespace
}  // namespace muster::scheduler
