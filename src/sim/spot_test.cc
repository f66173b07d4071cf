// Spot capacity in the simulator: nodes the cloud reclaims with notice
// (SimOptions::reclaims), jobs that checkpoint at the notice, and jobs that
// must stay on on-demand nodes.
#include <gtest/gtest.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "sim/report.h"
#include "sim/simulator.h"

namespace muster::sim {
namespace {

TraceJob Job(const std::string& id, int64_t submit, int64_t gpus, int64_t duration) {
  TraceJob j;
  j.id = id;
  j.submit_s = submit;
  j.num_gpus = gpus;
  j.gpu_milli = gpus * 1000;
  j.duration_s = duration;
  j.tenant = "t";
  return j;
}

// 10 nodes of 8 GPUs, 5 of them spot; every GPU busy with 10-hour jobs.
ClusterDescription HalfSpot() {
  auto c = ParseClusterYaml(
      "nodeGroups: [{count: 5, gpus: 8, prefix: od-}, {count: 5, gpus: 8, prefix: spot-, spot: true}]\n", "half spot");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

std::vector<TraceJob> Busy() {
  std::vector<TraceJob> trace;
  for (int i = 0; i < 40; ++i) trace.push_back(Job("one" + std::to_string(i), 0, 1, 10 * 3600));
  for (int i = 0; i < 5; ++i) trace.push_back(Job("eight" + std::to_string(i), 0, 8, 10 * 3600));
  return trace;
}

SimOptions Options() {
  SimOptions o;
  o.scheduler.explain = false;
  o.audit_every = 1;
  // A burst: notices for 2 of the 5 spot nodes (a fifth of the cluster)
  // within one minute, 3 hours in.
  o.reclaim_bursts = {{3 * 3600, 0.4}};
  return o;
}

nlohmann::json Reclaims(const SimResult& r) {
  const nlohmann::json j = ReportJson(r);
  std::printf("reclaims %s, jobs that lost more than a checkpoint interval: %lld\n", j["reclaims"].dump().c_str(),
              static_cast<long long>(j["jobs_lost_over_checkpoint_interval"].get<int64_t>()));
  return j["reclaims"];
}

// With the checkpoint written in time, the jobs on reclaimed nodes lose
// only their restart, run again elsewhere, and all end.
TEST(Spot, ABurstOfReclaimsWithTimeToCheckpointLosesOnlyRestarts) {
  auto r = Simulate(Busy(), HalfSpot(), Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const nlohmann::json rc = Reclaims(*r);
  EXPECT_EQ(rc["notices"], 2);
  EXPECT_GE(rc["jobs_stopped"].get<int64_t>(), 2);
  EXPECT_EQ(rc["checkpointed"], rc["jobs_stopped"]);
  // Each stopped job pays its 1-minute restart, nothing more.
  int64_t restarts = 0;
  for (const JobResult& j : r->jobs) {
    EXPECT_EQ(j.outcome, Outcome::kCompleted) << j.trace_id;
    if (j.reclaims > 0) restarts += 60 * j.gpus;
  }
  EXPECT_EQ(r->lost_gpu_seconds, restarts);
  EXPECT_EQ(ReportJson(*r)["jobs_lost_over_checkpoint_interval"], 0);
}

// Checkpoints that share too little storage bandwidth are cut off at the
// deadline: those jobs lose the work since their last periodic checkpoint
// (up to 30 minutes), the first writers still make it.
TEST(Spot, CheckpointsThatCannotAllBeWrittenInTimeLoseWork) {
  SimOptions o = Options();
  o.checkpoint_gb_per_gpu = 20;
  o.checkpoint_gbps = 1;  // an 8-GPU job's 160 GB takes 160 s: past the 2-minute deadline
  auto r = Simulate(Busy(), HalfSpot(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const nlohmann::json rc = Reclaims(*r);
  EXPECT_LT(rc["checkpointed"].get<int64_t>(), rc["jobs_stopped"].get<int64_t>());
  EXPECT_GT(rc["lost_gpu_hours"].get<double>(), 0.1);
  auto fast = Simulate(Busy(), HalfSpot(), Options());
  ASSERT_TRUE(fast.ok());
  EXPECT_GT(rc["lost_gpu_hours"].get<double>(), Reclaims(*fast)["lost_gpu_hours"].get<double>());
}

// Without notice to checkpoint (a notice of 0 and a write that takes time),
// every job on a reclaimed node loses back to its last periodic checkpoint.
TEST(Spot, NoNoticeLosesBackToThePeriodicCheckpoint) {
  SimOptions o = Options();
  o.reclaim_notice = Duration::Zero();
  o.checkpoint_gbps = 10;
  auto r = Simulate(Busy(), HalfSpot(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Reclaims(*r)["checkpointed"], 0);
  // 3 h in, each had just checkpointed at 3 h: each loses its restart and
  // at most the seconds since.
  for (const JobResult& j : r->jobs) {
    if (j.reclaims > 0) {
      EXPECT_LE(j.lost_gpu_seconds, (60 + 60) * j.gpus) << j.trace_id;
    }
  }
}

// Jobs that may not use spot capacity never run there; a reclaimed node
// that comes back takes work again.
TEST(Spot, OnDemandJobsStayOffSpotAndReclaimedNodesComeBack) {
  SimOptions o = Options();
  o.spot_fraction = 0;
  o.stories = true;
  auto r = Simulate(Busy(), HalfSpot(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Reclaims(*r)["jobs_stopped"], 0) << "no job ran on spot";
  for (const JobResult& j : r->jobs) EXPECT_EQ(j.outcome, Outcome::kCompleted) << j.trace_id;
  for (const JobStory& s : r->stories) {
    for (const std::string& line : s.attempts)
      EXPECT_EQ(line.find("spot-"), std::string::npos) << s.job << ": " << line;
  }

  SimOptions back = Options();
  back.reclaim_bursts = {{3 * 3600, 1.0}};  // every spot node
  back.reclaim_downtime = Duration::Hours(1);
  std::vector<TraceJob> trace = Busy();
  for (int i = 0; i < 10; ++i) trace.push_back(Job("late" + std::to_string(i), 5 * 3600, 8, 3600));
  auto returned = Simulate(trace, HalfSpot(), back);
  ASSERT_TRUE(returned.ok()) << returned.status().ToString();
  int64_t gone = 0;
  for (const JobResult& j : returned->jobs) {
    EXPECT_EQ(j.outcome, Outcome::kCompleted) << j.trace_id;
    if (j.reclaims > 0) ++gone;
  }
  EXPECT_GT(gone, 0);
  back.reclaim_downtime = Duration::Zero();  // never back: the same jobs end later
  auto never = Simulate(trace, HalfSpot(), back);
  ASSERT_TRUE(never.ok()) << never.status().ToString();
  EXPECT_GT(never->last_end_s, returned->last_end_s);
}

// Half the jobs never checkpoint. Placed with no regard to it, some of them
// land on spot nodes and a reclaim costs their whole run; placed by the
// default rule (jobs that checkpoint often on spot first, the others on
// on-demand first), the reclaimed nodes hold only jobs that checkpoint,
// which lose no more than their restart.
TEST(Spot, JobsThatCheckpointGoToSpotFirstAndTheOthersStayOnOnDemand) {
  std::vector<TraceJob> trace;
  for (int i = 0; i < 60; ++i) trace.push_back(Job("one" + std::to_string(i), 0, 1, 10 * 3600));
  SimOptions o = Options();
  o.checkpointing_fraction = 0.5;
  o.stories = true;
  auto preferring = Simulate(trace, HalfSpot(), o);
  ASSERT_TRUE(preferring.ok()) << preferring.status().ToString();
  o.scheduler.spot_checkpoint_interval = Duration::Zero();
  auto blind = Simulate(trace, HalfSpot(), o);
  ASSERT_TRUE(blind.ok()) << blind.status().ToString();
  const nlohmann::json with = Reclaims(*preferring), without = Reclaims(*blind);
  std::printf("lost GPU-hours: %.2f preferring, %.2f without a preference\n", with["lost_gpu_hours"].get<double>(),
              without["lost_gpu_hours"].get<double>());
  ASSERT_GT(without["jobs_stopped"].get<int64_t>(), 0);
  EXPECT_LT(without["checkpointed"].get<int64_t>(), without["jobs_stopped"].get<int64_t>())
      << "some job that never checkpoints ran on a reclaimed node";
  ASSERT_GT(with["jobs_stopped"].get<int64_t>(), 0);
  EXPECT_EQ(with["checkpointed"], with["jobs_stopped"]) << "only jobs that checkpoint ran there";
  EXPECT_EQ(ReportJson(*preferring)["jobs_lost_over_checkpoint_interval"], 0);
  EXPECT_LT(with["lost_gpu_hours"].get<double>(), 0.2 * without["lost_gpu_hours"].get<double>());
  // The 60 jobs fit: every on-demand GPU is used before a job that does
  // not checkpoint goes to spot (30 of them, 40 on-demand GPUs).
  for (const JobResult& j : preferring->jobs) EXPECT_EQ(j.outcome, Outcome::kCompleted) << j.trace_id;
}

TEST(Spot, BadReclaimsNameTheFlag) {
  SimOptions o = Options();
  o.reclaims = {{"no-such-node", 10}};
  auto r = Simulate(Busy(), HalfSpot(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "--reclaims");
  o.reclaims.clear();
  o.reclaim_bursts = {{10, 1.5}};
  r = Simulate(Busy(), HalfSpot(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "--reclaim-burst");
}

}  // namespace
}  // namespace muster::sim
