#include "core/run_time_predictor.h"

#include <gtest/gtest.h>

#include "core/cluster_state.h"

namespace muster::core {
namespace {

TEST(RunTimePredictor, PredictsTheMeanOfAUsersLastTwoRuns) {
  RunTimePredictor p;
  const int32_t alice = p.Intern("alice");
  EXPECT_EQ(p.Intern("alice"), alice);
  EXPECT_EQ(p.Intern(""), -1);
  EXPECT_TRUE(p.Predict(alice).is_infinite());
  EXPECT_TRUE(p.Predict(-1).is_infinite());
  p.Note(alice, Duration::Hours(4));
  EXPECT_EQ(p.Predict(alice), Duration::Hours(4));
  p.Note(alice, Duration::Hours(2));
  EXPECT_EQ(p.Predict(alice), Duration::Hours(3));
  p.Note(alice, Duration::Hours(6));  // the 4 h run is forgotten
  EXPECT_EQ(p.Predict(alice), Duration::Hours(4));
  EXPECT_TRUE(p.Predict(p.Intern("bob")).is_infinite());
}

TEST(RunTimePredictor, OnlyRunsThatEndedOnTheirOwnPredictTheUsersNextJob) {
  ClusterState state;
  NodeSpec node;
  node.name = "a";
  node.gpu_type = "H100";
  node.capacity.gpus = 8;
  ASSERT_TRUE(state.AddNode(node).ok());
  JobSpec spec;
  spec.per_replica.gpus = 4;
  spec.time_limit = Duration::Hours(10);
  spec.user = "alice";
  auto start = [&] {
    const JobId id = *state.Submit(spec, Time::Zero());
    EXPECT_TRUE(state.Bind({id, {{0, 1, spec.per_replica}}}, Time::Zero()).ok());
    return id;
  };
  auto run = [&](JobState end, Duration ran) { ASSERT_TRUE(state.Finish(start(), end, Time::Zero() + ran).ok()); };
  run(JobState::kCompleted, Duration::Hours(2));
  run(JobState::kCancelled, Duration::Minutes(1));
  run(JobState::kNodeFail, Duration::Minutes(1));
  run(JobState::kFailed, Duration::Hours(4));
  // The next run is planned to end at the mean of 2 h and 4 h, within its limit.
  const JobId next = start();
  EXPECT_EQ(state.running().at(next).predicted_end, Time::Zero() + Duration::Hours(3));
  EXPECT_EQ(state.running().at(next).expected_end, Time::Zero() + Duration::Hours(10));
  // A stop's grace ends it sooner than predicted.
  ASSERT_TRUE(state.MarkStopping(next, Time::Zero() + Duration::Hours(1)).ok());
  EXPECT_EQ(state.running().at(next).predicted_end, Time::Zero() + Duration::Hours(1));
  EXPECT_TRUE(state.CheckInvariants().ok());
  ASSERT_TRUE(state.Requeue(next, Time::Zero() + Duration::Hours(1), "test").ok());
  EXPECT_TRUE(state.CheckInvariants().ok());
}

}  // namespace
}  // namespace muster::core
