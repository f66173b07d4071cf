#include "server/preemption_record.h"

#include <gtest/gtest.h>

#include <map>

namespace muster::server {
namespace {

using Preemptor = PreemptionRecord::Preemptor;

const Time kRecordT0 = Time::FromMillis(1'000'000);

TEST(PreemptionRecord, AHoldStandsUntilItsPreemptorStartsOrItsDeadlinePasses) {
  PreemptionRecord r;
  r.AddHold(7, {{1, 2}, kRecordT0 + Duration::Minutes(3), 4});
  r.AddHold(8, {{3}, kRecordT0 + Duration::Minutes(3), 2});
  EXPECT_EQ(r.HeldGpus(), 6);
  std::map<int64_t, Preemptor> where = {{7, Preemptor::kWaiting}, {8, Preemptor::kWaiting}};
  const auto of = [&](int64_t job) { return where.at(job); };
  EXPECT_TRUE(r.Sweep(kRecordT0 + Duration::Minutes(1), of).empty());
  where[8] = Preemptor::kStarted;
  EXPECT_TRUE(r.Sweep(kRecordT0 + Duration::Minutes(2), of).empty()) << "a started preemptor's hold served";
  EXPECT_EQ(r.HeldGpus(), 4);
  const auto lapsed = r.Sweep(kRecordT0 + Duration::Minutes(3), of);
  ASSERT_EQ(lapsed.size(), 1u);
  EXPECT_EQ(lapsed[0].preemptor, 7);
  EXPECT_EQ(lapsed[0].was, Preemptor::kWaiting);
  EXPECT_EQ(lapsed[0].victims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.HeldGpus(), 0);
  EXPECT_TRUE(r.Sweep(kRecordT0 + Duration::Minutes(4), of).empty()) << "forgotten once lapsed";
}

TEST(PreemptionRecord, AHoldWhosePreemptorIsGoneLapsesAtOnceInOrderOfPreemptor) {
  PreemptionRecord r;
  for (int64_t p : {30, 10, 20}) r.AddHold(p, {{p + 1}, kRecordT0 + Duration::Hours(1), 1});
  const auto lapsed = r.Sweep(kRecordT0, [](int64_t) { return Preemptor::kGone; });
  ASSERT_EQ(lapsed.size(), 3u);
  EXPECT_EQ(lapsed[0].preemptor, 10);
  EXPECT_EQ(lapsed[1].preemptor, 20);
  EXPECT_EQ(lapsed[2].preemptor, 30);
}

TEST(PreemptionRecord, ImmunityEndsWithAnAttemptThatStartedAfterIt) {
  PreemptionRecord r;
  r.MarkImmune(5, kRecordT0);
  EXPECT_TRUE(r.immune(5));
  EXPECT_FALSE(r.EndsImmunity(5, kRecordT0 - Duration::Seconds(1))) << "the attempt it was immune in";
  EXPECT_FALSE(r.EndsImmunity(5, kRecordT0));
  EXPECT_TRUE(r.immune(5));
  EXPECT_TRUE(r.EndsImmunity(5, kRecordT0 + Duration::Seconds(1)));
  EXPECT_FALSE(r.immune(5));
  EXPECT_FALSE(r.EndsImmunity(6, kRecordT0 + Duration::Hours(1))) << "never immune";
}

TEST(PreemptionRecord, AGraceCutIsHeardOnTheNodesOfItsAttemptUntilTheAttemptIsGone) {
  PreemptionRecord r;
  r.CutGrace(4, 2, Duration::Seconds(30));
  r.CutGrace(3, 1, Duration::Seconds(10));
  std::map<int64_t, int32_t> running = {{3, 1}, {4, 2}};
  const auto here = [&](int64_t job, int32_t attempt) -> std::optional<bool> {
    auto it = running.find(job);
    if (it == running.end() || it->second != attempt) return std::nullopt;
    return job == 4;  // only job 4 has a replica on this node
  };
  auto cuts = r.CutsOn(here);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0].job, 4);
  EXPECT_EQ(cuts[0].attempt, 2);
  EXPECT_EQ(cuts[0].grace_ms, 30'000);
  running[4] = 3;  // a new attempt: the cut was for the old one
  EXPECT_TRUE(r.CutsOn(here).empty());
  running[4] = 2;
  EXPECT_TRUE(r.CutsOn(here).empty()) << "forgotten";
  const auto everywhere = [&](int64_t job, int32_t attempt) -> std::optional<bool> { return true; };
  cuts = r.CutsOn(everywhere);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0].job, 3) << "job 3's cut stood all along";
}

}  // namespace
}  // namespace muster::server
