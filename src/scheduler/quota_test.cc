// Queue quotas: limits (the most a queue may hold) and guarantees (what a
// queue may reclaim from borrowing queues by preemption).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/random.h"
#include "core/cluster_state.h"
#include "scheduler/queue_quotas.h"
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
    ClusterState state(
        WithQueues({{"q0", {}, {{"*", 12}}, ""}, {"q1", {}, {{"H100", 8}, {"*", 20}}, ""}, {"q2", {}, {}, ""}}));
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
  ASSERT_TRUE(state.Requeue(b2, now, "Preempted").ok());
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
  ASSERT_TRUE(state.Requeue(c1, now, "Preempted").ok());
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
  ClusterState state(
      WithQueues({{"org", {{"*", 16}}, {}, ""}, {"t1", {{"*", 8}}, {}, "org"}, {"t2", {{"*", 8}}, {}, "org"}}));
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

namespace muster::scheduler {
namespace {

// Fair share between queues (queue_quotas.h): a queue's share is what it
// holds beyond its guarantee over its weight; queues without a guarantee
// are victims of fair-share reclaims, never reclaimers.
TEST(FairShareQuota, AShareIsWhatAQueueHoldsBeyondItsGuaranteeOverItsWeight) {
  ClusterState state(WithQueues({{"a", {{"*", 21}}, {}, ""}, {"b", {{"*", 21}}, {}, ""}, {"c", {{"*", 21}}, {}, ""}}));
  AddNodes(state, 8, 8, 0);
  const Time t0 = Time::Zero();
  for (int i = 0; i < 36; ++i) Submit(state, "a", 1, t0);
  for (int i = 0; i < 2; ++i) Submit(state, "b", 8, t0);
  for (int i = 0; i < 5; ++i) Submit(state, "c", 2, t0);
  for (int i = 0; i < 2; ++i) Submit(state, "d", 1, t0);  // no guarantee
  CycleAndApply(state, t0);
  const Time now = t0 + Duration::Hours(1);
  const JobId gang = Submit(state, "b", 8, now);
  core::ClusterSnapshot snap = state.Snapshot(now);
  const int32_t a = state.QueueId("a"), b = state.QueueId("b"), c = state.QueueId("c"), d = state.QueueId("d");
  QueueQuotas equal(snap);
  EXPECT_EQ(equal.ShareAfter(a, 0), 15);
  EXPECT_EQ(equal.ShareAfter(b, 0), -5) << "below its guarantee";
  EXPECT_EQ(equal.ShareAfter(b, 8), 3);
  EXPECT_EQ(equal.ShareAfter(c, 0), -11);
  EXPECT_EQ(equal.ShareAfter(d, 0), 2) << "no guarantee: all it holds";
  const core::PendingJob* j = nullptr;
  for (const core::PendingJob& p : snap.pending) {
    if (p.id == gang) j = &p;
  }
  ASSERT_NE(j, nullptr);
  EXPECT_FALSE(equal.MayReclaim(*j)) << "the guarantee rule: 16 + 8 > 21";
  EXPECT_TRUE(equal.MayReclaimForShare(*j, false)) << "below its guarantee, and a's share is higher";
  EXPECT_TRUE(equal.ShareReclaimableFrom(*j, a));
  EXPECT_TRUE(equal.ShareReclaimableFrom(*j, d));
  EXPECT_FALSE(equal.ShareReclaimableFrom(*j, c));
  EXPECT_TRUE(equal.ShareKeepsOrder(*j, {{a, 8}, {a, 11}}, false)) << "a keeps -4";
  EXPECT_FALSE(equal.ShareKeepsOrder(*j, {{a, 8}, {a, 12}}, false)) << "a would fall to b's -5";
  // Weight 3 for a: its 15 past its guarantee count as 5.
  std::vector<double> shares(state.num_queues(), 1.0);
  shares[a] = 3;
  snap.queue_shares = shares;
  QueueQuotas weighted(snap);
  EXPECT_EQ(weighted.ShareAfter(a, 0), 5);
  EXPECT_FALSE(weighted.ShareKeepsOrder(*j, {{a, 36}}, false));
}

// At or past its guarantee a queue reclaims only with reclaim_past_guarantee,
// and then leaves the victims' queue at least one job's size above it.
TEST(FairShareQuota, PastItsGuaranteeAQueueReclaimsOnlyWhenAskedAndKeepsABand) {
  ClusterState state(WithQueues({{"a", {{"*", 21}}, {}, ""}, {"b", {{"*", 21}}, {}, ""}}));
  AddNodes(state, 8, 8, 0);
  const Time t0 = Time::Zero();
  for (int i = 0; i < 40; ++i) Submit(state, "a", 1, t0);
  for (int i = 0; i < 3; ++i) Submit(state, "b", 8, t0);
  CycleAndApply(state, t0);
  const Time now = t0 + Duration::Hours(1);
  const JobId one = Submit(state, "b", 1, now);
  core::ClusterSnapshot snap = state.Snapshot(now);
  const int32_t a = state.QueueId("a");
  QueueQuotas quotas(snap);
  ASSERT_EQ(quotas.ShareAfter(a, 0), 19);
  ASSERT_EQ(quotas.ShareAfter(state.QueueId("b"), 0), 3);
  const core::PendingJob* j = nullptr;
  for (const core::PendingJob& p : snap.pending) {
    if (p.id == one) j = &p;
  }
  ASSERT_NE(j, nullptr);
  EXPECT_FALSE(quotas.MayReclaimForShare(*j, false));
  EXPECT_TRUE(quotas.MayReclaimForShare(*j, true));
  EXPECT_TRUE(quotas.ShareKeepsOrder(*j, {{a, 1}}, true)) << "a at 18, b at 4: a band of 14";
  EXPECT_TRUE(quotas.ShareKeepsOrder(*j, {{a, 14}}, true)) << "a at 5, b at 4: a band of 1, one job";
  EXPECT_FALSE(quotas.ShareKeepsOrder(*j, {{a, 15}}, true)) << "a at 4, level with b";
  EXPECT_FALSE(quotas.ShareKeepsOrder(*j, {{a, 1}}, false));
}

// A tenant of gangs below its guarantee (0 of 4) takes a whole node (and so
// holds 4 past it) from a queue flooding 1-GPU jobs (12 past its own), even
// past the flood's older blocked jobs and their reservations; the flood
// never takes a gang back to run one GPU, and past its guarantee the gang
// tenant reclaims no more.
TEST(FairShareQuota, AGangReclaimsANodeFromAFloodAndIsNotReclaimedBack) {
  ClusterState state(WithQueues({{"flood", {{"*", 4}}, {}, ""}, {"gangs", {{"*", 4}}, {}, ""}}));
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  std::vector<JobId> flood;
  for (int i = 0; i < 16; ++i) flood.push_back(Submit(state, "flood", 1, t0, "low"));
  CycleAndApply(state, t0);
  for (int i = 0; i < 20; ++i) Submit(state, "flood", 1, t0, "low");  // blocked, older than the gang
  Time now = t0 + Duration::Hours(1);
  const JobId gang = Submit(state, "gangs", 8, now, "low");
  core::Decisions d = CycleAndApply(state, now);
  ASSERT_EQ(d.preemptions.size(), 1u) << "shares after: gangs 4, flood 4, above the gangs' -4 before";
  EXPECT_EQ(d.preemptions[0].job, gang);
  EXPECT_EQ(d.preemptions[0].victims.size(), 8u);
  for (JobId v : d.preemptions[0].victims) EXPECT_NE(std::find(flood.begin(), flood.end(), v), flood.end());
  for (JobId v : d.preemptions[0].victims) ASSERT_TRUE(state.Requeue(v, now, "Preempted").ok());
  now = now + Duration::Seconds(30);
  d = CycleAndApply(state, now);
  ASSERT_TRUE(Started(d, gang));

  // Both at share 4, the gangs past their guarantee: a second gang waits.
  now = now + Duration::Hours(1);
  const JobId second = Submit(state, "gangs", 8, now, "low");
  d = CycleAndApply(state, now);
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_FALSE(Started(d, second));
}

// Guarantees 4 and 4 on 16 GPUs, full: a holds 12 (share 8), b 4 (share
// 0), both with 1-GPU jobs waiting. A GPU frees: a's older job would take
// a to share 8 while b, at share 1 after its start, waits and would reclaim
// it: a yields, b's job starts, nothing is preempted. Two GPUs free: b
// takes one, and a the one b leaves.
TEST(FairShareQuota, AStartThatWouldBeReclaimedYields) {
  ClusterState state(WithQueues({{"a", {{"*", 4}}, {}, ""}, {"b", {{"*", 4}}, {}, ""}}));
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  std::vector<JobId> a_jobs;
  for (int i = 0; i < 12; ++i) a_jobs.push_back(Submit(state, "a", 1, t0, "low"));
  for (int i = 0; i < 4; ++i) Submit(state, "b", 1, t0, "low");
  CycleAndApply(state, t0);
  ASSERT_EQ(state.running().size(), 16u);
  Time now = t0 + Duration::Hours(1);
  const JobId a_next = Submit(state, "a", 1, now - Duration::Minutes(30), "low");
  const JobId b_next = Submit(state, "b", 1, now, "low");
  ASSERT_TRUE(state.Finish(a_jobs[0], core::JobState::kCompleted, now).ok());
  core::Decisions d = CycleAndApply(state, now);
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_TRUE(Started(d, b_next));
  EXPECT_FALSE(Started(d, a_next));
  ASSERT_NE(ReasonOf(d, a_next), nullptr);
  EXPECT_EQ(ReasonOf(d, a_next)->code, ReasonCode::kFairShare);
  EXPECT_EQ(core::FormatReason(*ReasonOf(d, a_next), "", now, ""),
            "FairShare: need 1 GPU; its queue holds 11, past its guarantee of 4, and a queue further below its "
            "fair share waits for GPUs");
  now = now + Duration::Minutes(1);
  const JobId b_last = Submit(state, "b", 1, now, "low");
  ASSERT_TRUE(state.Finish(a_jobs[1], core::JobState::kCompleted, now).ok());
  ASSERT_TRUE(state.Finish(a_jobs[2], core::JobState::kCompleted, now).ok());
  d = CycleAndApply(state, now);
  EXPECT_TRUE(Started(d, b_last));
  EXPECT_TRUE(Started(d, a_next)) << "what b did not take goes to a";
}

// The gang tenant holds both nodes, 14 past its guarantee of 2; the flood,
// with 20 jobs waiting, is short of its guarantee of 2: it may reclaim, but
// a 1-GPU job does not stop an 8-GPU gang, as the flood is owed 2 GPUs, not
// 8. The flood gets the node as a gang ends.
TEST(FairShareQuota, AFewGpusNeverStopAGang) {
  ClusterState state(WithQueues({{"flood", {{"*", 2}}, {}, ""}, {"gangs", {{"*", 2}}, {}, ""}}));
  AddNodes(state, 2, 8, 0);
  const Time t0 = Time::Zero();
  const JobId g1 = Submit(state, "gangs", 8, t0, "low");
  const JobId g2 = Submit(state, "gangs", 8, t0, "low");
  CycleAndApply(state, t0);
  Time now = t0 + Duration::Hours(1);
  std::vector<JobId> ones;
  for (int i = 0; i < 20; ++i) ones.push_back(Submit(state, "flood", 1, now, "low"));
  core::Decisions d = CycleAndApply(state, now);
  EXPECT_TRUE(d.preemptions.empty()) << "victims: " << (d.preemptions.empty() ? 0 : d.preemptions[0].victims.size());
  EXPECT_EQ(state.running().count(g1) + state.running().count(g2), 2u);
  now = now + Duration::Hours(1);
  ASSERT_TRUE(state.Finish(g1, core::JobState::kCompleted, now).ok());
  d = CycleAndApply(state, now);
  EXPECT_EQ(d.bindings.size(), 8u) << "the freed node goes to the flood";
}

}  // namespace
}  // namespace muster::scheduler
