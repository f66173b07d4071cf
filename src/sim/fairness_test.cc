#include "sim/fairness.h"

#include <gtest/gtest.h>

namespace muster::sim {
namespace {

JobResult Job(const std::string& tenant, int64_t submit, int64_t start, int64_t end, int64_t gpus) {
  JobResult j;
  j.tenant = tenant;
  j.submit_s = submit;
  j.start_s = start;
  j.end_s = end;
  j.gpus = gpus;
  return j;
}

// The header's example: A holds 6 GPUs and B 2 for an hour while both have
// a job waiting.
std::vector<JobResult> Example() {
  return {Job("A", 0, 0, 3600, 6), Job("A", 0, 3600, 3700, 1), Job("B", 0, 0, 3600, 2), Job("B", 0, 3600, 3700, 1)};
}

TEST(TenantFairness, TheHeadersExample) {
  // B waits for 5 GPUs, so both demand more than 4.
  const Fairness f = TenantFairness(
      {Job("A", 0, 0, 3600, 6), Job("A", 0, 3600, 3700, 1), Job("B", 0, 0, 3600, 2), Job("B", 0, 3600, 3700, 5)});
  EXPECT_NEAR(f.jain, 0.8, 1e-9);
  EXPECT_NEAR(f.contended_hours, 1.0, 1e-9);
  EXPECT_NEAR(f.ratio.at("A"), 1.5, 1e-9);
  EXPECT_NEAR(f.ratio.at("B"), 0.5, 1e-9);
}

TEST(TenantFairness, NoTenantIsOwedMoreThanItAsksFor) {
  // B holds 2 and waits for 1 more: it asks for 3, so it is owed 3 and A 5.
  const Fairness f = TenantFairness(Example());
  // (Both wait for one GPU in the example: A demands 7, B 3.)
  EXPECT_NEAR(f.ratio.at("B"), 2.0 / 3.0, 1e-9);
  EXPECT_NEAR(f.ratio.at("A"), 6.0 / 5.0, 1e-9);
}

TEST(TenantFairness, SharesSetWhatIsOwed) {
  // With shares 3:1 the same split is exactly fair.
  const Fairness f = TenantFairness(Example(), {{"A", 3.0}, {"B", 1.0}});
  EXPECT_NEAR(f.jain, 1.0, 1e-9);
  EXPECT_NEAR(f.ratio.at("A"), 1.0, 1e-9);
}

TEST(TenantFairness, ATenantWaitingAloneIsNotCompared) {
  // B waits while A runs, but A has nothing waiting: no contention.
  const Fairness f = TenantFairness({Job("A", 0, 0, 3600, 8), Job("B", 0, 3600, 7200, 8)});
  EXPECT_EQ(f.contended_hours, 0);
  EXPECT_EQ(f.jain, 1.0);
  EXPECT_TRUE(f.ratio.empty());
}

TEST(TenantFairness, OneTenantTakingEverythingScoresOneOverN) {
  // Three tenants wait for an hour; only A holds GPUs.
  const Fairness f = TenantFairness(
      {Job("A", 0, 0, 3600, 8), Job("A", 0, 3600, 3601, 1), Job("B", 0, 3600, 3601, 1), Job("C", 0, 3600, 3601, 1)});
  EXPECT_NEAR(f.jain, 1.0 / 3.0, 1e-9);
}

TEST(TenantFairness, TenantsOwedAlmostNothingAreListedButNotCounted) {
  // C waits a second next to the example's hour: it is owed (and gets) next
  // to nothing, so its ratio is reported but not in the index.
  std::vector<JobResult> jobs = {Job("A", 0, 0, 3600, 6), Job("A", 0, 3600, 3700, 1), Job("B", 0, 0, 3600, 2),
                                 Job("B", 0, 3600, 3700, 5), Job("C", 100, 101, 200, 1)};
  const Fairness f = TenantFairness(jobs);
  EXPECT_NEAR(f.jain, 0.8, 1e-3);
  ASSERT_EQ(f.excluded, std::vector<std::string>{"C"});
  EXPECT_TRUE(f.ratio.count("C"));
}

}  // namespace
}  // namespace muster::sim
