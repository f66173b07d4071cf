#include "server/pending_reasons.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

core::PendingReason Reason(int64_t job, core::ReasonCode code) {
  core::PendingReason r;
  r.job = job;
  r.code = code;
  return r;
}

std::vector<int64_t> Jobs(const std::vector<const core::PendingReason*>& changed) {
  std::vector<int64_t> out;
  for (const core::PendingReason* r : changed) out.push_back(r->job);
  return out;
}

TEST(PendingReasons, OnlyNewOrChangedReasonsAreReturnedAndJobsNoLongerPendingAreForgotten) {
  using core::ReasonCode;
  PendingReasons reasons;
  std::vector<core::PendingReason> cycle = {Reason(1, ReasonCode::kResources), Reason(2, ReasonCode::kPriority)};
  EXPECT_EQ(Jobs(reasons.Update(cycle)), (std::vector<int64_t>{1, 2}));
  cycle[1].jobs_ahead = 7;  // the same code: the row keeps its reason
  EXPECT_TRUE(reasons.Update(cycle).empty());
  EXPECT_EQ(reasons.Find(2)->jobs_ahead, 7) << "the text shown is the last cycle's";
  cycle = {Reason(2, ReasonCode::kQuota)};
  EXPECT_EQ(Jobs(reasons.Update(cycle)), std::vector<int64_t>{2});
  EXPECT_EQ(reasons.Find(1), nullptr) << "no longer pending";
  reasons.Forget(2);  // its row was written elsewhere
  EXPECT_EQ(Jobs(reasons.Update(cycle)), std::vector<int64_t>{2}) << "written again";
}

}  // namespace
}  // namespace muster::server
