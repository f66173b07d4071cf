// Backfill planned with predicted run times (SchedulerOptions::
// predict_run_times, core/run_time_predictor.h).
#include <gtest/gtest.h>

#include "scheduler/test_util.h"

namespace muster::scheduler {
namespace {

using core::ClusterState;
using core::JobId;
using testing::AddNodes;
using testing::Apply;
using testing::Gpus;
using testing::MakeScheduler;
using testing::ReasonOf;
using testing::Started;

SchedulerOptions Options(bool predict) {
  SchedulerOptions o;
  o.predict_run_times = predict;
  return o;
}

core::JobSpec Of(const std::string& user, core::JobSpec spec) {
  spec.user = user;
  return spec;
}

// One 8-GPU node. A of alice (limit 10 h; her last two jobs ran 1 h)
// holds 4 GPUs; B needs all 8 and is blocked; C of carol (limit 12 h; her
// last two ran 30 min) fits in the 4 free GPUs.
struct Scene {
  ClusterState state;
  JobId a = 0, b = 0, c = 0;
  explicit Scene(Time c_submit = Time::Zero()) {
    AddNodes(state, 1, 8, 0);
    state.NoteRunTime("alice", Duration::Hours(1));
    state.NoteRunTime("alice", Duration::Hours(1));
    state.NoteRunTime("carol", Duration::Minutes(20));
    state.NoteRunTime("carol", Duration::Minutes(40));
    a = *state.Submit(Of("alice", Gpus(1, 4, Duration::Hours(10))), Time::Zero());
    Apply(state, MakeScheduler()->Cycle(state.Snapshot(Time::Zero())), Time::Zero());
    b = *state.Submit(Of("bob", Gpus(1, 8, Duration::Hours(2))), Time::Zero());
    c = *state.Submit(Of("carol", Gpus(1, 4, Duration::Hours(12), "low")), c_submit);
  }
};

TEST(RunTimePrediction, APredictedShortJobBackfillsBeforeAReservationItsLimitWouldDelay) {
  for (bool predict : {false, true}) {
    Scene s;
    ASSERT_EQ(s.state.running().at(s.a).predicted_end, Time::Zero() + Duration::Hours(1));
    const Time now = Time::Zero() + Duration::Minutes(10);
    const core::Decisions d = MakeScheduler(Options(predict))->Cycle(s.state.Snapshot(now));
    ASSERT_FALSE(d.reservations.empty());
    EXPECT_EQ(d.reservations[0].job, s.b);
    // B's planned start: A's predicted end, or its limit.
    EXPECT_EQ(d.reservations[0].start, Time::Zero() + (predict ? Duration::Hours(1) : Duration::Hours(10)))
        << "predict=" << predict;
    // C is predicted to end (30 min) before B's start; by its 12 h limit,
    // it would outlast B's planned start at A's 10 h limit.
    EXPECT_EQ(Started(d, s.c), predict) << "predict=" << predict;
  }
}

TEST(RunTimePrediction, AJobPastItsPredictionIsPlannedToItsLimit) {
  Scene s;
  // A has run 2 h, past its 1 h prediction: B waits for A's limit, and C
  // (predicted to end in 30 min) backfills before it.
  const Time now = Time::Zero() + Duration::Hours(2);
  const core::Decisions d = MakeScheduler(Options(true))->Cycle(s.state.Snapshot(now));
  ASSERT_FALSE(d.reservations.empty());
  EXPECT_EQ(d.reservations[0].start, Time::Zero() + Duration::Hours(10));
  EXPECT_TRUE(Started(d, s.c));
}

TEST(RunTimePrediction, BackfillBeforeAStarvingJobsReservationGoesByLimits) {
  // The same, with B waiting past the starvation threshold (8 h) when A
  // is still within its prediction: C's limit, not its prediction, decides.
  Scene s;
  ASSERT_TRUE(s.state.running().count(s.a));
  const Time now = Time::Zero() + Duration::Minutes(30);
  SchedulerOptions o = Options(true);
  o.starvation_threshold = Duration::Minutes(20);
  const core::Decisions d = MakeScheduler(o)->Cycle(s.state.Snapshot(now));
  ASSERT_FALSE(d.reservations.empty());
  EXPECT_EQ(d.reservations[0].job, s.b);
  EXPECT_FALSE(Started(d, s.c));
  ASSERT_NE(ReasonOf(d, s.c), nullptr);
}

TEST(RunTimePrediction, WithoutHistoryTheLimitIsThePlan) {
  ClusterState state;
  AddNodes(state, 1, 8, 0);
  const JobId a = *state.Submit(Of("dave", Gpus(1, 4, Duration::Hours(10))), Time::Zero());
  Apply(state, MakeScheduler()->Cycle(state.Snapshot(Time::Zero())), Time::Zero());
  EXPECT_EQ(state.running().at(a).predicted_end, state.running().at(a).expected_end);
  // A prediction above the limit is cut to the limit.
  state.NoteRunTime("erin", Duration::Hours(50));
  const JobId e = *state.Submit(Of("erin", Gpus(1, 4, Duration::Hours(3))), Time::Zero());
  Apply(state, MakeScheduler()->Cycle(state.Snapshot(Time::Zero())), Time::Zero());
  EXPECT_EQ(state.running().at(e).predicted_end, Time::Zero() + Duration::Hours(3));
  EXPECT_TRUE(state.CheckInvariants().ok());
}

}  // namespace
}  // namespace muster::scheduler
