#include "agent/reclaim_state.h"

#include <gtest/gtest.h>

namespace muster::agent {
namespace {

const Time kReclaimT0 = Time::FromMillis(1'767'225'600'000);

ReclaimNotice In(Duration d, const std::string& source = "test") { return {kReclaimT0 + d, source}; }

TEST(ReclaimState, AnEarlierNoticeReplacesTheOneHeardAndStopsAreCutToTheEarlierDeadline) {
  ReclaimState r;
  EXPECT_EQ(r.CutGrace(30'000, kReclaimT0), 30'000) << "no reclaim: the whole grace";
  EXPECT_TRUE(r.NoteCloud(In(Duration::Minutes(2)), kReclaimT0));
  EXPECT_FALSE(r.NoteCloud(In(Duration::Minutes(3)), kReclaimT0)) << "a later one changes nothing";
  EXPECT_TRUE(r.NoteCloud(In(Duration::Seconds(90)), kReclaimT0 + Duration::Seconds(5)));
  EXPECT_EQ(r.cloud()->deadline, kReclaimT0 + Duration::Seconds(90));
  EXPECT_EQ(r.CutGrace(300'000, kReclaimT0 + Duration::Seconds(60)), 30'000);
  r.NoteServer(kReclaimT0 + Duration::Seconds(70));
  EXPECT_EQ(r.CutGrace(300'000, kReclaimT0 + Duration::Seconds(60)), 10'000) << "the server's is earlier";
  EXPECT_EQ(r.CutGrace(300'000, kReclaimT0 + Duration::Minutes(5)), 0) << "never below 0";
}

TEST(ReclaimState, AnAgentAloneWithANoticeStopsItsTasksOnceAfterAQuarterOfIt) {
  ReclaimState r;
  ReclaimNotice notice;
  Time seen;
  EXPECT_FALSE(r.StopAlone(kReclaimT0, &notice, &seen)) << "no notice";
  ASSERT_TRUE(r.NoteCloud(In(Duration::Seconds(20)), kReclaimT0));
  EXPECT_TRUE(r.AwaitingServer());
  EXPECT_FALSE(r.StopAlone(kReclaimT0 + Duration::Seconds(4), &notice, &seen)) << "a quarter of 20 s is 5 s";
  EXPECT_TRUE(r.StopAlone(kReclaimT0 + Duration::Seconds(5), &notice, &seen));
  EXPECT_EQ(notice.deadline, kReclaimT0 + Duration::Seconds(20));
  EXPECT_EQ(seen, kReclaimT0);
  EXPECT_FALSE(r.StopAlone(kReclaimT0 + Duration::Seconds(6), &notice, &seen)) << "once";
  EXPECT_FALSE(r.AwaitingServer());
}

TEST(ReclaimState, ANoticeTheServerAcknowledgedIsTheServersToActOn) {
  ReclaimState r;
  ASSERT_TRUE(r.NoteCloud(In(Duration::Hours(1)), kReclaimT0));
  r.NoteServer(kReclaimT0 + Duration::Hours(1));
  EXPECT_FALSE(r.AwaitingServer());
  ReclaimNotice notice;
  Time seen;
  EXPECT_FALSE(r.StopAlone(kReclaimT0 + Duration::Minutes(30), &notice, &seen));
  r.NoteServer(std::nullopt);  // the server no longer says so (an uncordon)
  EXPECT_TRUE(r.StopAlone(kReclaimT0 + Duration::Seconds(10), &notice, &seen)) << "at most 10 s alone";
}

}  // namespace
}  // namespace muster::agent
