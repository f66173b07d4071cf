// Running attempts in the control loop, in process: users' signals and who
// hears them, progress and the checkpoint request it answers, checkpoint
// commits fenced to the current attempt, resume candidates fixed for a new
// attempt, time limits, and a hung job failing at its stall timeout.
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "server/testing/loop_harness.h"

namespace muster::server::testing {
namespace {

class ControlLoopAttempts : public ::testing::Test {
 protected:
  ControlLoopAttempts() : n1_(h_, "n1", 8), n2_(h_, "n2", 8) {
    EXPECT_TRUE(n1_.Sync().ok());
    EXPECT_TRUE(n2_.Sync().ok());
  }
  int64_t Run(const std::string& spec) {
    auto job = h_.Submit(spec);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    if (!job.ok()) return 0;
    SyncBoth();
    EXPECT_EQ(h_.State(job->id), "RUNNING");
    return job->id;
  }
  void SyncBoth() {
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(n1_.Sync().ok());
      EXPECT_TRUE(n2_.Sync().ok());
    }
  }
  StatusOr<ControlLoop::SignalAnswer> Signal(int64_t job, int signal,
                                             std::optional<api::SignalTarget> to = std::nullopt,
                                             const std::string& who = "alice") {
    using R = ControlLoop::SignalAnswer;
    return h_.Await<R>([&](ControlLoop::Done<StatusOr<R>> done) {
      h_.loop().SignalJob(job, signal, to, LoopHarness::User(who), done);
    });
  }
  StatusOr<ControlLoop::ProgressAnswer> Progress(int64_t job, int32_t attempt, int64_t step) {
    ControlLoop::ProgressReport p;
    p.job = job;
    p.attempt = attempt;
    p.step = step;
    p.metrics = {{"loss", 0.5}};
    p.who = LoopHarness::User("alice");
    using R = ControlLoop::ProgressAnswer;
    return h_.Await<R>([&](ControlLoop::Done<StatusOr<R>> done) { h_.loop().ReportProgress(p, done); });
  }
  StatusOr<store::CheckpointRow> Commit(int64_t job, int32_t attempt, int64_t step) {
    CheckpointCatalog::Commit c;
    c.job = job;
    c.attempt = attempt;
    c.step = step;
    c.location = "/ckpt/step-" + std::to_string(step);
    c.manifest_sha256 = std::string(64, 'a' + static_cast<char>(step % 6));
    c.files = 1;
    c.bytes = 1 << 20;
    using R = store::CheckpointRow;
    return h_.Await<R>(
        [&](ControlLoop::Done<StatusOr<R>> done) { h_.loop().CommitCheckpoint(c, LoopHarness::User("alice"), done); });
  }

  LoopHarness h_;
  PlayedAgent n1_, n2_;
};

TEST_F(ControlLoopAttempts, ASignalReachesEveryReplicasNodeOnceListedForAMinute) {
  const int64_t job = Run("replicas: 2\nresources: {gpus: 8}\ncommand: [train]\n");
  auto answer = Signal(job, SIGUSR1);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->attempt, 1);
  EXPECT_EQ(answer->nodes.size(), 2u);
  ASSERT_TRUE(n1_.Sync().ok());
  ASSERT_EQ(n1_.last().signals.size(), 1u);
  EXPECT_EQ(n1_.last().signals[0].signal, SIGUSR1);
  EXPECT_EQ(n1_.last().signals[0].to, "all");
  EXPECT_EQ(h_.EventMessage(job, "Signalled"), "SIGUSR1 to all of attempt 1 by alice");
  h_.Advance(Duration::Seconds(61), Duration::Seconds(10));
  EXPECT_TRUE(n1_.last().signals.empty()) << "listed for a minute only";
}

TEST_F(ControlLoopAttempts, ASignalIsRefusedForAJobNotRunningOrStepsItHasNot) {
  auto pending = h_.Submit("resources: {gpus: 1}\nhold: true\ncommand: [train]\n");
  ASSERT_TRUE(pending.ok());
  auto refused = Signal(pending->id, SIGUSR1);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().ToString();
  const int64_t job = Run("resources: {gpus: 1}\ncommand: [train]\n");
  auto steps = Signal(job, SIGUSR1, api::SignalTarget::kSteps);
  ASSERT_FALSE(steps.ok());
  EXPECT_EQ(steps.status().field(), "to");
  auto bob = Signal(job, SIGUSR1, std::nullopt, "bob");
  EXPECT_EQ(bob.status().code(), StatusCode::kPermissionDenied);
}

TEST_F(ControlLoopAttempts, ProgressIsShownWithTheJobAndAStoppingAttemptIsAskedToCheckpoint) {
  const int64_t job = Run("resources: {gpus: 1}\ncheckpoint: {dir: /ckpt, gracePeriod: 1m}\ncommand: [train]\n");
  auto p = Progress(job, 1, 100);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->checkpoint_requested);
  auto why = h_.Explain(job);
  ASSERT_TRUE(why.ok());
  const nlohmann::json status = nlohmann::json::parse(why->job.status_json);
  EXPECT_EQ(status["attempt"]["progress"]["metrics"]["loss"], 0.5) << status.dump();
  EXPECT_EQ(status["attempt"]["progress"]["step"], 100) << status.dump();
  PlayedAgent& on = n1_.Runs(job) ? n1_ : n2_;
  on.HoldStops(true);
  ASSERT_TRUE(h_.Act(job, ControlLoop::Action::kRequeue).ok());
  ASSERT_TRUE(on.Sync().ok());
  p = Progress(job, 1, 101);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->checkpoint_requested) << "its attempt is being stopped";
  auto old = Progress(job, 7, 1);
  EXPECT_EQ(old.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(ControlLoopAttempts, OnlyTheCurrentAttemptMayCommitAndTheNextAttemptResumesFromTheNewest) {
  const int64_t job = Run("resources: {gpus: 1}\ncheckpoint: {dir: /ckpt, keep: 2}\ncommand: [train]\n");
  ASSERT_TRUE(Commit(job, 1, 1).ok());
  ASSERT_TRUE(Commit(job, 1, 2).ok());
  auto stale = Commit(job, 5, 3);
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.status().message().find("is not the current one"), std::string::npos) << stale.status().ToString();
  auto outside = h_.Await<store::CheckpointRow>([&](ControlLoop::Done<StatusOr<store::CheckpointRow>> done) {
    CheckpointCatalog::Commit c{job, 1, 4, "/elsewhere/step-4", std::string(64, 'b'), 1, 1};
    h_.loop().CommitCheckpoint(c, LoopHarness::User("alice"), done);
  });
  EXPECT_EQ(outside.status().field(), "location") << outside.status().ToString();
  PlayedAgent& on = n1_.Runs(job) ? n1_ : n2_;
  on.Exit(job, 1);  // crashes: retried after its backoff
  SyncBoth();
  h_.Advance(Duration::Seconds(31), Duration::Seconds(10));
  PlayedAgent& next = n1_.Runs(job) ? n1_ : n2_;
  ASSERT_TRUE(next.Runs(job));
  const proto::TaskAssignment* a = next.Assignment(job);
  EXPECT_EQ(a->attempt, 2);
  ASSERT_EQ(a->resume.size(), 2u);
  EXPECT_EQ(a->resume[0].location, "/ckpt/step-2") << "newest first";
  EXPECT_EQ(a->resume[1].location, "/ckpt/step-1");
}

TEST_F(ControlLoopAttempts, AJobPastItsTimeLimitIsStoppedAndEndsTimedOut) {
  const int64_t job = Run("resources: {gpus: 1}\ntimeLimit: 10m\ncommand: [train]\n");
  PlayedAgent& on = n1_.Runs(job) ? n1_ : n2_;
  EXPECT_EQ(on.Assignment(job)->time_limit_ms, Duration::Minutes(10).millis()) << "its agent enforces it";
  h_.Advance(Duration::Minutes(10), Duration::Seconds(30));
  EXPECT_EQ(h_.State(job), "TIMEOUT") << "its agent stopped it at the limit";
}

TEST_F(ControlLoopAttempts, AJobThatStopsReportingProgressFailsAsHungAtItsStallTimeout) {
  const int64_t job = Run("resources: {gpus: 1}\nstallTimeout: 5m\nretry: {limit: 0}\ncommand: [train]\n");
  ASSERT_TRUE(Progress(job, 1, 1).ok());
  h_.Advance(Duration::Minutes(4), Duration::Seconds(30));
  ASSERT_TRUE(Progress(job, 1, 2).ok());
  h_.Advance(Duration::Minutes(4), Duration::Seconds(30));
  EXPECT_EQ(h_.State(job), "RUNNING") << "progress came within the timeout";
  h_.Advance(Duration::Minutes(2), Duration::Seconds(30));
  EXPECT_EQ(h_.State(job), "FAILED");
  EXPECT_TRUE(h_.HasEvent(job, "Stalled")) << ::testing::PrintToString(h_.Events(job));
}

TEST_F(ControlLoopAttempts, AFailingReplicaEndsItsGangAndStopsItsSiblings) {
  const int64_t job = Run("replicas: 2\nresources: {gpus: 8}\nretry: {limit: 0}\ncommand: [train]\n");
  n1_.Exit(job, 2);
  SyncBoth();
  EXPECT_FALSE(n2_.Runs(job)) << "the sibling was stopped";
  EXPECT_EQ(h_.State(job), "FAILED");
  const nlohmann::json status = nlohmann::json::parse(h_.Stored(job).status_json);
  const nlohmann::json& replicas = status["attemptHistory"][0]["replicas"];
  ASSERT_EQ(replicas.size(), 2u) << status.dump();
}

}  // namespace
}  // namespace muster::server::testing
