// Interactive classes: placed before everything else, never held back by a
// reservation, preempting only best-effort work, and at once.
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

JobId Submit(ClusterState& state, int replicas, int gpus, Duration limit, const std::string& cls, Time at) {
  auto id = state.Submit(Gpus(replicas, gpus, limit, cls), at);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : 0;
}

std::unique_ptr<Scheduler> Make(const std::string& policy = "muster") {
  SchedulerOptions o;
  o.policy = policy;
  return testing::MakeScheduler(o);
}

// Two 8-GPU nodes, each half used by a normal job ending in an hour, and a
// 16-GPU job that waited longest, reserved for when they end.
struct ReservedCluster {
  ClusterState state;
  JobId big = 0;
  ReservedCluster() {
    AddNodes(state, 2, 8, 0);
    Submit(state, 1, 4, Duration::Hours(1), "normal", t0);
    Submit(state, 1, 4, Duration::Hours(1), "normal", t0);
    Apply(state, Make()->Cycle(state.Snapshot(t0)), t0);
    big = Submit(state, 2, 8, Duration::Hours(10), "normal", t0 + Duration::Minutes(1));
  }
};

TEST(Interactive, StartsAcrossAReservationThatHoldsBackOtherWork) {
  ReservedCluster c;
  const Time now = t0 + Duration::Minutes(10);
  // Both ask for 1 GPU past the big job's start in 50 minutes (the batch
  // job also past the interactive one's end, where the reservation moves).
  const JobId batch = Submit(c.state, 1, 1, Duration::Hours(9), "normal", now);
  const JobId shell = Submit(c.state, 1, 1, Duration::Hours(8), "interactive", now);
  const core::Decisions d = Make()->Cycle(c.state.Snapshot(now));
  EXPECT_TRUE(Started(d, shell));
  EXPECT_FALSE(Started(d, batch)) << "backfill lets no batch job delay the reservation";
  ASSERT_NE(ReasonOf(d, batch), nullptr);
  EXPECT_EQ(ReasonOf(d, batch)->code, ReasonCode::kReservedFor);
  // The big job's reservation is planned around the interactive job, which
  // holds a GPU it needs: it moves to that job's end.
  ASSERT_FALSE(d.reservations.empty());
  EXPECT_EQ(d.reservations.front().job, c.big);
  EXPECT_GE(d.reservations.front().start, now + Duration::Hours(8));
}

TEST(Interactive, GoesFirstUnderEveryPolicy) {
  for (const std::string policy : {"fifo", "fifo-skip", "sjf", "las", "muster"}) {
    ReservedCluster c;
    const Time now = t0 + Duration::Minutes(10);
    const JobId shell = Submit(c.state, 1, 2, Duration::Hours(1), "interactive", now);
    const core::Decisions d = Make(policy)->Cycle(c.state.Snapshot(now));
    EXPECT_TRUE(Started(d, shell)) << policy << ": the blocked 16-GPU job ahead of it";
  }
}

TEST(Interactive, PreemptsBestEffortWorkAtOnce) {
  ClusterState state;
  AddNodes(state, 1, 8, 0);
  const JobId low = Submit(state, 1, 8, Duration::Hours(24), "low", t0);
  Apply(state, Make()->Cycle(state.Snapshot(t0)), t0);
  // Ten seconds in: far below the 5-minute minimum run time, which still
  // protects it from a high job.
  const Time now = t0 + Duration::Seconds(10);
  const JobId high = Submit(state, 1, 1, Duration::Hours(1), "high", now);
  core::Decisions d = Make()->Cycle(state.Snapshot(now));
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_EQ(ReasonOf(d, high)->code, ReasonCode::kResources);

  const JobId shell = Submit(state, 1, 1, Duration::Hours(1), "interactive", now);
  d = Make()->Cycle(state.Snapshot(now));
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, shell);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{low});
  EXPECT_TRUE(d.preemptions[0].interactive);
  EXPECT_EQ(d.preemptions[0].grace, Duration::Seconds(30));  // the default class's preemptGrace
  EXPECT_EQ(ReasonOf(d, shell)->code, ReasonCode::kPreempting);
}

TEST(Interactive, NeverPreemptsWorkThatIsNotBestEffort) {
  for (const std::string victim_class : {"normal", "high"}) {
    ClusterState state;
    AddNodes(state, 1, 8, 0);
    Submit(state, 1, 8, Duration::Hours(2), victim_class, t0);
    Apply(state, Make()->Cycle(state.Snapshot(t0)), t0);
    const Time now = t0 + Duration::Hours(1);
    const JobId shell = Submit(state, 1, 1, Duration::Hours(1), "interactive", now);
    const core::Decisions d = Make()->Cycle(state.Snapshot(now));
    EXPECT_TRUE(d.preemptions.empty()) << victim_class;
    ASSERT_NE(ReasonOf(d, shell), nullptr);
    EXPECT_EQ(ReasonOf(d, shell)->code, ReasonCode::kResources) << victim_class;
    // It waits at the head: the first reservation, when the job ends.
    ASSERT_FALSE(d.reservations.empty());
    EXPECT_EQ(d.reservations.front().job, shell);
    EXPECT_EQ(d.reservations.front().start, t0 + Duration::Hours(2));
  }
}

TEST(Interactive, OldestInteractiveJobFirst) {
  ClusterState state;
  AddNodes(state, 1, 2, 0);
  const JobId first = Submit(state, 1, 2, Duration::Hours(1), "interactive", t0);
  const JobId second = Submit(state, 1, 2, Duration::Hours(1), "interactive", t0 + Duration::Seconds(1));
  const core::Decisions d = Make("sjf")->Cycle(state.Snapshot(t0 + Duration::Seconds(2)));
  EXPECT_TRUE(Started(d, first));
  EXPECT_FALSE(Started(d, second));
}

}  // namespace
}  // namespace muster::scheduler
