#include "core/job.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace muster::core {
namespace {

const std::vector<JobState> kAllStates = {
    JobState::kPending,    JobState::kHeld,        JobState::kStarting, JobState::kRunning,
    JobState::kCompleting, JobState::kCompleted,   JobState::kFailed,   JobState::kCancelled,
    JobState::kTimeout,    JobState::kOutOfMemory, JobState::kNodeFail, JobState::kPreempted,
};

const std::vector<JobState> kTerminalStates = {
    JobState::kCompleted,   JobState::kFailed,   JobState::kCancelled, JobState::kTimeout,
    JobState::kOutOfMemory, JobState::kNodeFail, JobState::kPreempted,
};

TEST(JobStateTest, IsTerminal) {
  const std::set<JobState> terminal(kTerminalStates.begin(), kTerminalStates.end());
  for (JobState s : kAllStates) {
    EXPECT_EQ(IsTerminal(s), terminal.count(s) == 1) << JobStateName(s);
  }
  EXPECT_FALSE(IsTerminal(JobState::kPending));
  EXPECT_FALSE(IsTerminal(JobState::kHeld));
  EXPECT_FALSE(IsTerminal(JobState::kRunning));
  EXPECT_FALSE(IsTerminal(JobState::kCompleting));
  EXPECT_TRUE(IsTerminal(JobState::kCompleted));
}

// The CLI's one check of "has it ended", on states as the API names them:
// STARTING has not (it was taken for ended by `muster logs -f` and `muster
// dev`), PREEMPTED has (an interactive session waited on after it), and a
// name from a newer server is not taken for an end.
TEST(JobStateTest, IsTerminalNameAgreesWithIsTerminal) {
  for (JobState s : kAllStates) EXPECT_EQ(IsTerminalName(JobStateName(s)), IsTerminal(s)) << JobStateName(s);
  EXPECT_FALSE(IsTerminalName("STARTING"));
  EXPECT_TRUE(IsTerminalName("PREEMPTED"));
  EXPECT_FALSE(IsTerminalName("SOMETHING_NEW"));
  EXPECT_FALSE(IsTerminalName(""));
}

TEST(JobStateTest, TerminalStatesNeverChange) {
  for (JobState from : kTerminalStates) {
    for (JobState to : kAllStates) {
      EXPECT_FALSE(IsValidTransition(from, to)) << JobStateName(from) << " -> " << JobStateName(to);
    }
  }
}

TEST(JobStateTest, PendingTransitions) {
  EXPECT_TRUE(IsValidTransition(JobState::kPending, JobState::kRunning));
  EXPECT_TRUE(IsValidTransition(JobState::kPending, JobState::kStarting));
  EXPECT_TRUE(IsValidTransition(JobState::kPending, JobState::kHeld));
  EXPECT_TRUE(IsValidTransition(JobState::kPending, JobState::kCancelled));
  EXPECT_TRUE(IsValidTransition(JobState::kPending, JobState::kFailed));
  EXPECT_FALSE(IsValidTransition(JobState::kPending, JobState::kPending));
  EXPECT_FALSE(IsValidTransition(JobState::kPending, JobState::kCompleted));
  EXPECT_FALSE(IsValidTransition(JobState::kPending, JobState::kTimeout));
}

TEST(JobStateTest, HeldTransitions) {
  EXPECT_FALSE(IsValidTransition(JobState::kHeld, JobState::kRunning));
  EXPECT_FALSE(IsValidTransition(JobState::kHeld, JobState::kStarting));
  EXPECT_FALSE(IsValidTransition(JobState::kHeld, JobState::kCompleted));
  EXPECT_TRUE(IsValidTransition(JobState::kHeld, JobState::kPending));
  EXPECT_TRUE(IsValidTransition(JobState::kHeld, JobState::kCancelled));
}

TEST(JobStateTest, RunningTransitions) {
  for (JobState to : kTerminalStates) {
    EXPECT_TRUE(IsValidTransition(JobState::kRunning, to)) << JobStateName(to);
  }
  EXPECT_TRUE(IsValidTransition(JobState::kRunning, JobState::kPending));  // requeue
  EXPECT_TRUE(IsValidTransition(JobState::kRunning, JobState::kCompleting));
  EXPECT_TRUE(IsValidTransition(JobState::kStarting, JobState::kRunning));
  EXPECT_TRUE(IsValidTransition(JobState::kCompleting, JobState::kCompleted));
  EXPECT_FALSE(IsValidTransition(JobState::kRunning, JobState::kHeld));
  EXPECT_FALSE(IsValidTransition(JobState::kRunning, JobState::kRunning));
  EXPECT_FALSE(IsValidTransition(JobState::kStarting, JobState::kStarting));
}

TEST(JobStateTest, Names) {
  EXPECT_STREQ(JobStateName(JobState::kPending), "PENDING");
  EXPECT_STREQ(JobStateName(JobState::kHeld), "HELD");
  EXPECT_STREQ(JobStateName(JobState::kStarting), "STARTING");
  EXPECT_STREQ(JobStateName(JobState::kRunning), "RUNNING");
  EXPECT_STREQ(JobStateName(JobState::kCompleting), "COMPLETING");
  EXPECT_STREQ(JobStateName(JobState::kCompleted), "COMPLETED");
  EXPECT_STREQ(JobStateName(JobState::kFailed), "FAILED");
  EXPECT_STREQ(JobStateName(JobState::kCancelled), "CANCELLED");
  EXPECT_STREQ(JobStateName(JobState::kTimeout), "TIMEOUT");
  EXPECT_STREQ(JobStateName(JobState::kOutOfMemory), "OUT_OF_MEMORY");
  EXPECT_STREQ(JobStateName(JobState::kNodeFail), "NODE_FAIL");
  EXPECT_STREQ(JobStateName(JobState::kPreempted), "PREEMPTED");
}

TEST(JobStateTest, NamesAreDistinct) {
  std::set<std::string> names;
  for (JobState s : kAllStates) names.insert(JobStateName(s));
  EXPECT_EQ(names.size(), kAllStates.size());
}

TEST(JobStateTest, SlurmCodes) {
  EXPECT_STREQ(JobStateCode(JobState::kPending), "PD");
  EXPECT_STREQ(JobStateCode(JobState::kHeld), "PD");
  EXPECT_STREQ(JobStateCode(JobState::kStarting), "CF");
  EXPECT_STREQ(JobStateCode(JobState::kRunning), "R");
  EXPECT_STREQ(JobStateCode(JobState::kCompleting), "CG");
  EXPECT_STREQ(JobStateCode(JobState::kCompleted), "CD");
  EXPECT_STREQ(JobStateCode(JobState::kFailed), "F");
  EXPECT_STREQ(JobStateCode(JobState::kCancelled), "CA");
  EXPECT_STREQ(JobStateCode(JobState::kTimeout), "TO");
  EXPECT_STREQ(JobStateCode(JobState::kOutOfMemory), "OOM");
  EXPECT_STREQ(JobStateCode(JobState::kNodeFail), "NF");
  EXPECT_STREQ(JobStateCode(JobState::kPreempted), "PR");
}

TEST(JobEnumsTest, DependencyTypeNames) {
  EXPECT_STREQ(DependencyTypeName(DependencyType::kAfterOk), "afterok");
  EXPECT_STREQ(DependencyTypeName(DependencyType::kAfterAny), "afterany");
  EXPECT_STREQ(DependencyTypeName(DependencyType::kAfterNotOk), "afternotok");
}

TEST(JobEnumsTest, TopologyScopeNames) {
  EXPECT_STREQ(TopologyScopeName(TopologyScope::kNode), "node");
  EXPECT_STREQ(TopologyScopeName(TopologyScope::kLeaf), "leaf");
  EXPECT_STREQ(TopologyScopeName(TopologyScope::kSpine), "spine");
  EXPECT_STREQ(TopologyScopeName(TopologyScope::kAny), "any");
}

TEST(JobSpecTest, Defaults) {
  const JobSpec spec;
  EXPECT_EQ(spec.queue, "default");
  EXPECT_EQ(spec.priority_class, "normal");
  EXPECT_EQ(spec.replicas, 1);
  EXPECT_TRUE(spec.time_limit.is_infinite());
  EXPECT_EQ(spec.topology, TopologyScope::kAny);
  EXPECT_FALSE(spec.hold);
  EXPECT_FALSE(spec.begin_time.has_value());
}

}  // namespace
}  // namespace muster::core
