// Admin reservations (core::AdminReservation): the jobs that name one run on
// its nodes alone and within its window; every other job may use those
// nodes only to end, by its limit, before the window opens, and no
// preemption frees them for it.
#include <gtest/gtest.h>

#include <set>

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
using testing::NodesOf;
using testing::ReasonOf;
using testing::Started;

const Time kT0 = Time::Zero() + Duration::Hours(100);

JobId Submit(ClusterState& state, int gpus, Duration limit, Time now, const std::string& reservation = "",
             const std::string& cls = "normal") {
  core::JobSpec spec = Gpus(1, gpus, limit, cls);
  spec.reservation = reservation;
  auto id = state.Submit(spec, now);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return *id;
}

std::string Why(const core::Decisions& d, JobId job, Time now) {
  const core::PendingReason* r = ReasonOf(d, job);
  return r ? core::FormatReason(*r, "H100", now, "") : "";
}

// n0 and n1 (8 GPUs each) are reserved from kT0 + 2h to kT0 + 4h; n2 is open.
ClusterState Cluster() {
  ClusterState state;
  AddNodes(state, 3, 8, 0);
  state.SetReservations({{"maint", {"n0", "n1"}, kT0 + Duration::Hours(2), kT0 + Duration::Hours(4)}});
  return state;
}

TEST(Reservation, OtherJobsUseItsNodesOnlyToEndBeforeItOpens) {
  ClusterState state = Cluster();
  auto s = testing::MakeScheduler();
  // Three 8-GPU jobs, before the window: two would run into it (3 h), one
  // ends before it (1 h). The first long one takes the open node, the
  // other waits; the short one takes a reserved node.
  const JobId long_a = Submit(state, 8, Duration::Hours(3), kT0);
  const JobId long_b = Submit(state, 8, Duration::Hours(3), kT0);
  const JobId short_job = Submit(state, 8, Duration::Hours(1), kT0);
  core::Decisions d = s->Cycle(state.Snapshot(kT0));
  EXPECT_EQ(NodesOf(d, long_a), std::set<core::NodeIndex>{2});
  EXPECT_FALSE(Started(d, long_b)) << "would run into the window";
  EXPECT_TRUE(Started(d, short_job));
  EXPECT_NE(NodesOf(d, short_job), std::set<core::NodeIndex>{2}) << "it ends before the window";
  Apply(state, d, kT0);
  // Inside the window nothing else starts on its nodes, however short.
  ASSERT_TRUE(state.Finish(short_job, core::JobState::kCompleted, kT0 + Duration::Hours(2)).ok());
  const Time in = kT0 + Duration::Hours(2) + Duration::Minutes(1);
  const JobId tiny = Submit(state, 1, Duration::Minutes(5), in);
  d = s->Cycle(state.Snapshot(in));
  EXPECT_FALSE(Started(d, tiny));
  EXPECT_FALSE(Started(d, long_b));
  // After it, they may.
  const Time after = kT0 + Duration::Hours(4);
  d = s->Cycle(state.Snapshot(after));
  EXPECT_TRUE(Started(d, tiny));
  EXPECT_TRUE(Started(d, long_b));
}

TEST(Reservation, ItsJobsWaitForItsWindowThenRunOnItsNodesAlone) {
  ClusterState state = Cluster();
  auto s = testing::MakeScheduler();
  const JobId member = Submit(state, 8, Duration::Hours(1), kT0, "maint");
  core::Decisions d = s->Cycle(state.Snapshot(kT0));
  EXPECT_FALSE(Started(d, member)) << "n2 is free, but not its";
  ASSERT_NE(ReasonOf(d, member), nullptr);
  EXPECT_EQ(ReasonOf(d, member)->code, ReasonCode::kReservation);
  EXPECT_EQ(Why(d, member, kT0), "Reservation: reservation maint starts in 2h");
  // In the window: on its nodes, two 8-GPU jobs at once; a third waits for room there.
  const Time in = kT0 + Duration::Hours(2);
  const JobId second = Submit(state, 8, Duration::Hours(1), in, "maint");
  const JobId third = Submit(state, 8, Duration::Hours(1), in, "maint");
  d = s->Cycle(state.Snapshot(in));
  std::set<core::NodeIndex> used = NodesOf(d, member);
  used.merge(NodesOf(d, second));
  EXPECT_EQ(used, (std::set<core::NodeIndex>{0, 1}));
  EXPECT_FALSE(Started(d, third)) << "n2 is free, but outside the reservation";
  ASSERT_NE(ReasonOf(d, third), nullptr);
  EXPECT_EQ(ReasonOf(d, third)->code, ReasonCode::kResources);
}

TEST(Reservation, AJobOutlastingItsWindowOrOfAGoneOneWaitsSayingWhy) {
  ClusterState state = Cluster();
  auto s = testing::MakeScheduler();
  const Time in = kT0 + Duration::Hours(3);
  const JobId too_long = Submit(state, 8, Duration::Hours(2), in, "maint");
  const JobId unlimited = Submit(state, 8, Duration::Infinite(), in, "maint");
  const JobId fits = Submit(state, 8, Duration::Minutes(30), in, "maint");
  core::Decisions d = s->Cycle(state.Snapshot(in));
  EXPECT_FALSE(Started(d, too_long));
  EXPECT_FALSE(Started(d, unlimited));
  EXPECT_TRUE(Started(d, fits));
  EXPECT_EQ(Why(d, too_long, in), "Reservation: its time limit runs past the end of reservation maint in 1h");
  ASSERT_NE(ReasonOf(d, unlimited), nullptr);
  EXPECT_EQ(ReasonOf(d, unlimited)->code, ReasonCode::kReservation);
  // The reservation is deleted: its jobs wait, saying so; its nodes are open.
  state.SetReservations({});
  const JobId open = Submit(state, 8, Duration::Hours(5), in);
  d = s->Cycle(state.Snapshot(in));
  EXPECT_EQ(Why(d, too_long, in), "Reservation: its reservation has ended or was deleted");
  EXPECT_TRUE(Started(d, open));
  // One named before it exists waits too, and runs once it is made.
  const JobId early = Submit(state, 8, Duration::Minutes(10), in, "later");
  d = s->Cycle(state.Snapshot(in));
  EXPECT_FALSE(Started(d, early));
  state.SetReservations({{"later", {"n1"}, in, in + Duration::Hours(1)}});
  d = s->Cycle(state.Snapshot(in));
  EXPECT_EQ(NodesOf(d, early), std::set<core::NodeIndex>{1});
}

// The backfill plan promises a reserved node to no other job: a job that
// will end there before the window frees it in the plan too early to be of
// use to a job that would run into the window.
TEST(Reservation, NoPlanPromisesItsNodesToAnotherJob) {
  ClusterState state = Cluster();  // n0, n1 reserved from kT0 + 2h to kT0 + 4h; n2 open
  auto s = testing::MakeScheduler();
  const JobId on_open = Submit(state, 8, Duration::Hours(3), kT0);
  const JobId before = Submit(state, 8, Duration::Hours(1), kT0);
  core::Decisions d = s->Cycle(state.Snapshot(kT0));
  ASSERT_EQ(NodesOf(d, on_open), std::set<core::NodeIndex>{2});
  ASSERT_TRUE(Started(d, before));
  Apply(state, d, kT0);
  // Three hours' work: on either reserved node it would run into the
  // window (also from kT0 + 1h, when `before` frees one); the open node
  // frees at kT0 + 3h.
  const JobId blocked = Submit(state, 8, Duration::Hours(3), kT0);
  d = s->Cycle(state.Snapshot(kT0));
  ASSERT_FALSE(Started(d, blocked));
  bool planned = false;
  for (const auto& r : d.reservations) {
    if (r.job != blocked) continue;
    planned = true;
    EXPECT_EQ(r.start, kT0 + Duration::Hours(3));
    for (const auto& a : r.allocations) EXPECT_EQ(a.node, 2);
  }
  EXPECT_TRUE(planned);
}

// A higher class does not preempt its way onto reserved nodes: what it
// would free there is not its to take.
TEST(Reservation, NoPreemptionFreesItsNodesForAnotherJob) {
  ClusterState state;
  AddNodes(state, 1, 8, 0);
  auto s = testing::MakeScheduler();
  const JobId low = Submit(state, 8, Duration::Hours(1), kT0, "", "low");
  core::Decisions d = s->Cycle(state.Snapshot(kT0));
  ASSERT_TRUE(Started(d, low));
  Apply(state, d, kT0);
  state.SetReservations({{"r", {"n0"}, kT0 + Duration::Hours(1), kT0 + Duration::Hours(3)}});
  const Time later = kT0 + Duration::Minutes(30);
  const JobId high = Submit(state, 8, Duration::Hours(2), later, "", "high");
  d = s->Cycle(state.Snapshot(later));
  EXPECT_FALSE(Started(d, high));
  EXPECT_TRUE(d.preemptions.empty()) << "victim " << d.preemptions[0].victims[0];
}

}  // namespace
}  // namespace muster::scheduler
