#include "server/submit_admission.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

class SubmitAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.max_pending_jobs_per_user = 3;
    options_.max_array_size = 5;
  }
  // A job of `user` in `state`.
  void Add(int64_t id, const std::string& user, core::JobState state, const std::string& queue = "default") {
    store::JobRow row;
    row.id = id;
    row.user = user;
    row.queue = queue;
    store::WriteBatch b;
    jobs_.Add(row, state, b);
  }
  static api::JobSpec Spec(int32_t array = 0) {
    api::JobSpec s;
    s.array = array;
    return s;
  }
  Status Check(const api::JobSpec& spec, const std::string& user, const MaySee& may_see = {}) {
    return CheckSubmitAdmission(spec, user, jobs_, options_, may_see);
  }

  JobTable jobs_{[](int64_t) { return std::string("{}"); }};
  ServerOptions options_;
};

TEST_F(SubmitAdmissionTest, ArraysAboveTheLimitAreRefusedOnTheirField) {
  options_.max_pending_jobs_per_user = 0;
  EXPECT_TRUE(Check(Spec(5), "ann").ok());
  const Status s = Check(Spec(6), "ann");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "spec.array");
  EXPECT_NE(s.message().find("limits.arraySize"), std::string::npos) << s.ToString();
  options_.max_array_size = 0;
  EXPECT_TRUE(Check(Spec(10'000), "ann").ok()) << "0: no limit";
}

// Jobs waiting to start count, each array task one; running and ended
// jobs do not, nor another user's; the count follows state changes.
TEST_F(SubmitAdmissionTest, AUsersWaitingJobsAreCountedAsTheirStatesChange) {
  Add(1, "ann", core::JobState::kPending);
  Add(2, "ann", core::JobState::kHeld);
  Add(3, "ann", core::JobState::kRunning);
  Add(4, "bob", core::JobState::kPending);
  EXPECT_EQ(jobs_.WaitingOf("ann"), 2);
  EXPECT_TRUE(Check(Spec(), "ann").ok());
  Status s = Check(Spec(2), "ann");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("ann has 2 jobs waiting to start; 2 more would pass"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("limits.pendingJobsPerUser"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Check(Spec(2), "bob").ok()) << "bob's limit is his own";
  // One starts: room for two.
  ASSERT_TRUE(jobs_.Apply(1, JobTable::Change::To(core::JobState::kRunning, ""), Time::Zero()).ok());
  EXPECT_EQ(jobs_.WaitingOf("ann"), 1);
  EXPECT_TRUE(Check(Spec(2), "ann").ok());
  // A requeue brings one back.
  ASSERT_TRUE(jobs_.Apply(3, JobTable::Change::To(core::JobState::kPending, "Requeued"), Time::Zero()).ok());
  EXPECT_EQ(jobs_.WaitingOf("ann"), 2);
  options_.max_pending_jobs_per_user = 0;
  EXPECT_TRUE(Check(Spec(5), "ann").ok()) << "0: no limit";
}

TEST_F(SubmitAdmissionTest, ADependencyOnAJobNotSeenIsRefusedAsAnUnknownOne) {
  Add(7, "bob", core::JobState::kPending);
  Add(8, "ann", core::JobState::kPending);
  const MaySee own = [](const store::JobRow& row) { return row.user == "ann"; };
  api::JobSpec spec = Spec();
  spec.dependencies = {{core::DependencyType::kAfterOk, 8}};
  EXPECT_TRUE(Check(spec, "ann", own).ok());
  spec.dependencies = {{core::DependencyType::kAfterOk, 8}, {core::DependencyType::kAfter, 7}};
  const Status hidden = Check(spec, "ann", own);
  spec.dependencies[1].job = 9;
  const Status missing = Check(spec, "ann", own);
  EXPECT_EQ(hidden.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hidden.field(), "spec.dependencies[1].job");
  EXPECT_EQ(hidden.message(), "unknown job 7 (or not one you may see)");
  EXPECT_EQ(missing.message(), "unknown job 9 (or not one you may see)");
  EXPECT_EQ(missing.field(), hidden.field());
  spec.dependencies[1].job = 7;
  EXPECT_TRUE(Check(spec, "ann").ok()) << "no predicate: every job is seen (an admin's submit)";
}

}  // namespace
}  // namespace muster::server
