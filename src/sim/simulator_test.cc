#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/report.h"

namespace muster::sim {
namespace {

TraceJob T(const std::string& id, int64_t submit, int64_t gpus, int64_t duration, int64_t prio = 0) {
  TraceJob j;
  j.id = id;
  j.submit_s = submit;
  j.num_gpus = gpus;
  j.duration_s = duration;
  j.priority = prio;
  j.tenant = "t1";
  j.gpu_milli = gpus * 1000;
  return j;
}

ClusterDescription Nodes(const std::string& spec, int64_t per_leaf = 0) {
  auto c = ClusterFromFlags({spec, per_leaf, 0, "gpu"});
  EXPECT_TRUE(c.ok());
  return *c;
}

SimOptions Opts(const std::string& policy) {
  SimOptions o;
  o.scheduler.policy = policy;
  o.scheduler.explain = false;
  o.audit_every = 1;  // full audit after every event
  return o;
}

const JobResult& Find(const SimResult& r, const std::string& id) {
  for (const JobResult& j : r.jobs) {
    if (j.trace_id == id) return j;
  }
  throw std::runtime_error("no job " + id);
}

// One 4-GPU node. A holds it for 100 s; B (2 GPUs) arrives at 10, C (1 GPU)
// at 20. Under strict FIFO, C waits behind B although it would fit sooner:
// both start at 100. D can never fit and is reported.
TEST(Simulator, FifoHandWorkedExample) {
  const std::vector<TraceJob> trace = {T("A", 0, 4, 100), T("B", 10, 2, 50), T("C", 20, 1, 10), T("D", 0, 8, 10)};
  auto r = Simulate(trace, Nodes("1x4"), Opts("fifo"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Find(*r, "A").start_s, 0);
  EXPECT_EQ(Find(*r, "B").start_s, 100);
  EXPECT_EQ(Find(*r, "C").start_s, 100);
  EXPECT_EQ(Find(*r, "C").end_s, 110);
  EXPECT_EQ(Find(*r, "D").outcome, Outcome::kUnschedulable);
  EXPECT_NE(Find(*r, "D").note.find("Unschedulable: need 2x4 GPU"), std::string::npos) << Find(*r, "D").note;

  const nlohmann::json j = ReportJson(*r);
  EXPECT_EQ(j["jobs"], 4);
  EXPECT_EQ(j["completed"], 3);
  EXPECT_EQ(j["unschedulable"], 1);
  EXPECT_EQ(j["max_wait_s"], 90);
  EXPECT_EQ(j["p50_wait_s"], 80);
  EXPECT_DOUBLE_EQ(j["mean_jct_s"].get<double>(), (100.0 + 140.0 + 90.0) / 3);
  EXPECT_EQ(j["makespan_s"], 150);
  // Busy GPU-seconds 4*100 + 2*50 + 1*10 over 4 GPUs x 150 s.
  EXPECT_DOUBLE_EQ(j["utilization"].get<double>(), 510.0 / 600.0);
  for (const char* key : {"p99_jct_s", "mean_wait_s", "p99_wait_s", "per_class", "per_tenant"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["per_tenant"].contains("t1"));
}

TEST(Simulator, FifoSkipStartsWhatFitsNow) {
  const std::vector<TraceJob> trace = {T("A", 0, 3, 100), T("B", 10, 2, 50), T("C", 20, 1, 10)};
  auto r = Simulate(trace, Nodes("1x4"), Opts("fifo-skip"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, "B").start_s, 100);
  EXPECT_EQ(Find(*r, "C").start_s, 20);
}

TEST(Simulator, MultiNodeGangsUseWholeNodes) {
  const std::vector<TraceJob> trace = {T("big", 0, 16, 10), T("odd", 0, 12, 10)};
  auto r = Simulate(trace, Nodes("4x8", 2), Opts("muster"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Find(*r, "big").replicas, 2);
  EXPECT_EQ(Find(*r, "big").nodes, 2);
  EXPECT_EQ(Find(*r, "odd").replicas, 2);  // 12 = 2 x 6
  EXPECT_EQ(Find(*r, "odd").nodes, 2);
}

TEST(Simulator, SkippedRowsAreReportedNotDropped) {
  std::vector<TraceJob> trace = {T("ok", 0, 1, 10), T("nodur", 0, 1, -1), T("cpu", 0, 0, 10)};
  auto r = Simulate(trace, Nodes("1x8"), Opts("muster"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, "nodur").outcome, Outcome::kSkippedNoDuration);
  EXPECT_EQ(Find(*r, "cpu").outcome, Outcome::kSkippedNoGpus);
  const nlohmann::json j = ReportJson(*r);
  EXPECT_EQ(j["jobs"], 3);
  EXPECT_EQ(j["skipped"], 2);
  EXPECT_EQ(j["completed"], 1);
}

TEST(Simulator, TimeLimitBelowDurationEndsInTimeout) {
  SimOptions o = Opts("muster");
  o.time_limit_factor = 0.5;
  auto r = Simulate({T("A", 0, 1, 100)}, Nodes("1x1"), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, "A").outcome, Outcome::kTimeout);
  EXPECT_EQ(Find(*r, "A").end_s, 50);
}

TEST(Simulator, HigherPriorityClassGoesFirst) {
  const std::vector<TraceJob> trace = {T("hog", 0, 4, 100), T("lo", 1, 4, 10, 0), T("hi", 2, 4, 10, 1)};
  auto r = Simulate(trace, Nodes("1x4"), Opts("muster"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, "hi").start_s, 100);
  EXPECT_EQ(Find(*r, "lo").start_s, 110);
  EXPECT_EQ(ReportJson(*r)["per_class"].size(), 2u);
}

TEST(Simulator, BadOptionsNameTheFlag) {
  SimOptions o = Opts("muster");
  o.time_limit_factor = 0;
  EXPECT_EQ(Simulate({}, Nodes("1x1"), o).status().field(), "--time-limit-factor");
  o = Opts("nope");
  EXPECT_EQ(Simulate({}, Nodes("1x1"), o).status().field(), "--policy");
}

class TraceSlice : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto t = ReadTraceFile("test/data/traces/itp-cluster04-first1500.csv");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    trace_ = new std::vector<TraceJob>(std::move(*t));
  }
  static std::vector<TraceJob>* trace_;
};
std::vector<TraceJob>* TraceSlice::trace_ = nullptr;

// Every policy replays the real slice with a full invariant audit after
// every event, completes every job, and is deterministic.
TEST_F(TraceSlice, AllPoliciesCompleteWithInvariantsAudited) {
  std::map<std::string, nlohmann::json> reports;
  for (const std::string policy : {"fifo", "fifo-skip", "sjf", "muster"}) {
    auto r = Simulate(*trace_, Nodes("6x8", 3), Opts(policy));
    ASSERT_TRUE(r.ok()) << policy << ": " << r.status().ToString();
    EXPECT_EQ(r->audits, r->events + 1) << policy;
    const nlohmann::json j = ReportJson(*r);
    EXPECT_EQ(j["completed"], 1500) << policy;
    EXPECT_GT(j["utilization"].get<double>(), 0.1);
    EXPECT_LE(j["utilization"].get<double>(), 1.0);
    auto again = Simulate(*trace_, Nodes("6x8", 3), Opts(policy));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(ReportJson(*again).dump(), j.dump()) << policy << " is not deterministic";
    reports[policy] = j;
  }
  // The contended slice separates the policies the way their definitions say.
  EXPECT_GT(reports["fifo"]["mean_wait_s"].get<double>(), reports["fifo-skip"]["mean_wait_s"].get<double>());
  EXPECT_LT(reports["sjf"]["mean_wait_s"].get<double>(), reports["fifo-skip"]["mean_wait_s"].get<double>());
  EXPECT_GT(reports["fifo"]["mean_wait_s"].get<double>(), reports["muster"]["mean_wait_s"].get<double>());
}

TEST_F(TraceSlice, SinglePoolNeverSpansNodes) {
  auto r = Simulate(*trace_, SinglePool(Nodes("6x8", 3)), Opts("fifo-skip"));
  ASSERT_TRUE(r.ok());
  for (const JobResult& j : r->jobs) ASSERT_LE(j.nodes, 1);
  std::ostringstream csv;
  WriteJobsCsv(*r, csv);
  const std::string out = csv.str();
  EXPECT_EQ(out.rfind("id,submit,start,end,gpus,nodes,wait", 0), 0u);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1501);
}

}  // namespace
}  // namespace muster::sim

namespace muster::sim {
namespace {

// Tenant A has kept the one GPU busy; B's job, submitted after A's queued
// ones, starts first when fair-share is on, and last when it is off.
// One node of 8 GPUs. Low job A (3 h) starts at 0; high job B (1 h)
// arrives at 1 h. With preemption (checkpoints every 45 min, restart 60 s):
// A is stopped at 1 h keeping 45 min of progress, B runs from 1 h to 2 h,
// and A resumes with 2 h 15 min left plus the restart: it ends at 4 h 16 min.
// Lost: 15 min of progress and the 60 s restart, on 8 GPUs.
TEST(SimulatorPreemption, HandWorkedExample) {
  const std::vector<TraceJob> trace = {T("A", 0, 8, 3 * 3600, 0), T("B", 3600, 8, 3600, 1)};
  SimOptions o = Opts("muster");
  auto plain = Simulate(trace, Nodes("1x8"), o);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(Find(*plain, "B").start_s, 3 * 3600);
  EXPECT_EQ(plain->preemptions, 0);

  o.preemption = true;
  o.scheduler.preemption.enabled = true;
  o.checkpoint_interval = Duration::Minutes(45);
  o.restart_cost = Duration::Seconds(60);
  auto r = Simulate(trace, Nodes("1x8"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const JobResult& a = Find(*r, "A");
  const JobResult& b = Find(*r, "B");
  EXPECT_EQ(b.start_s, 3600);
  EXPECT_EQ(b.end_s, 2 * 3600);
  EXPECT_EQ(a.start_s, 0);
  EXPECT_EQ(a.preemptions, 1);
  ASSERT_EQ(a.stopped_runs.size(), 1u);
  EXPECT_EQ(a.stopped_runs[0], (std::pair<int64_t, int64_t>{0, 3600}));
  EXPECT_EQ(a.LastStart(), 2 * 3600);
  EXPECT_EQ(a.end_s, 4 * 3600 + 15 * 60 + 60);
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_EQ(r->lost_gpu_seconds, (15 * 60 + 60) * 8);
  EXPECT_EQ(a.HeldGpuSeconds(), (3600 + 2 * 3600 + 15 * 60 + 60) * 8);
  EXPECT_EQ(r->busy_gpu_seconds, a.HeldGpuSeconds() + b.HeldGpuSeconds());
  const nlohmann::json j = ReportJson(*r);
  EXPECT_EQ(j["preemptions"], 1);
  EXPECT_NEAR(j["lost_gpu_hours"].get<double>(), (15 * 60 + 60) * 8 / 3600.0, 1e-9);
  // B waited 0 s (it preempted at once); A waited 0 s for its first start.
  EXPECT_EQ(j["per_class"]["p1"]["max_wait_s"], 0);
  // Jobs waited only while A was preempted (1 h to 2 h), and all 8 GPUs were busy then.
  EXPECT_NEAR(j["waiting_hours"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(j["utilization_while_waiting"].get<double>(), 1.0, 1e-9);

  // A job that has run under the minimum run time is not preempted.
  o.scheduler.preemption.min_run_time = Duration::Hours(2);
  auto young = Simulate(trace, Nodes("1x8"), o);
  ASSERT_TRUE(young.ok());
  EXPECT_EQ(young->preemptions, 0);
  EXPECT_EQ(Find(*young, "B").start_s, 3 * 3600);
}

TEST(SimulatorPreemption, AFractionOfJobsGoesToTheHighClass) {
  std::vector<TraceJob> trace;
  for (int i = 0; i < 1000; ++i) trace.push_back(T("j" + std::to_string(i), i, 1, 10));
  SimOptions o = Opts("muster");
  o.high_priority_fraction = 0.25;
  auto r = Simulate(trace, Nodes("4x8"), o);
  ASSERT_TRUE(r.ok());
  int high = 0;
  for (const JobResult& j : r->jobs) high += j.priority_class == "p1";
  EXPECT_GT(high, 200);
  EXPECT_LT(high, 300);
  o.high_priority_fraction = 1.5;
  EXPECT_EQ(Simulate(trace, Nodes("4x8"), o).status().field(), "--high-priority-fraction");
}

TEST(SimulatorFairShare, AnIdleTenantOvertakesABusyOne) {
  std::vector<TraceJob> trace;
  for (int i = 0; i < 4; ++i) {
    TraceJob a = T("a" + std::to_string(i), i, 1, 3600);
    a.tenant = "A";
    trace.push_back(a);
  }
  TraceJob b = T("b", 10, 1, 3600);
  b.tenant = "B";
  trace.push_back(b);
  SimOptions on = Opts("muster");
  auto with = Simulate(trace, Nodes("1x1"), on);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_EQ(Find(*with, "b").start_s, 3600);  // right after a0
  EXPECT_EQ(Find(*with, "a1").start_s, 7200);
  SimOptions off = Opts("muster");
  off.fairshare.weight = 0;
  auto without = Simulate(trace, Nodes("1x1"), off);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(Find(*without, "b").start_s, 4 * 3600);  // behind all of A's
  const nlohmann::json j = ReportJson(*with);
  EXPECT_NEAR(j["per_tenant"]["A"]["usage_share"].get<double>(), 0.8, 1e-9);
  EXPECT_EQ(j["fairshare_weight"], 5000);
}

// Two tenants keep a 4-GPU cluster busy with 1-hour 1-GPU jobs for days;
// with shares 3:1 A ends up with about three quarters of the GPU-hours,
// with --equal-shares about half, and the fairness index judges each run by
// its own shares.
TEST(SimulatorFairShare, ConfiguredSharesSetTheLongRunSplit) {
  std::vector<TraceJob> trace;
  for (int i = 0; i < 400; ++i) {
    for (const char* t : {"A", "B"}) {
      TraceJob j = T(std::string(t) + std::to_string(i), 0, 1, 3600);
      j.tenant = t;
      trace.push_back(j);
    }
  }
  ClusterDescription cluster = Nodes("1x4");
  cluster.shares = {{"A", 3.0}, {"B", 1.0}};
  SimOptions opts = Opts("muster");
  opts.fairshare.half_life = Duration::Hours(12);
  opts.fairshare.weight = 100000;
  opts.scheduler.weights.age_cap = 0;
  // Over the first 100 hours both tenants always have jobs waiting.
  auto share_of_a = [](const SimResult& r) {
    double a = 0, all = 0;
    for (const JobResult& j : r.jobs) {
      if (j.start_s >= 100 * 3600) continue;
      all += 1;
      a += j.tenant == "A";
    }
    return a / all;
  };
  auto weighted = Simulate(trace, cluster, opts);
  ASSERT_TRUE(weighted.ok()) << weighted.status().ToString();
  EXPECT_NEAR(share_of_a(*weighted), 0.75, 0.05);
  EXPECT_GT(ReportJson(*weighted)["fairness"]["jain"].get<double>(), 0.95);
  opts.equal_shares = true;
  auto equal = Simulate(trace, cluster, opts);
  ASSERT_TRUE(equal.ok());
  EXPECT_NEAR(share_of_a(*equal), 0.5, 0.05);
  EXPECT_GT(ReportJson(*equal)["fairness"]["jain"].get<double>(), 0.95);
}

}  // namespace
}  // namespace muster::sim

namespace muster::sim {
namespace {

// Two nodes of 8. A (2x8, 1 h) runs on both; gpu-0 goes silent at 10 min and
// is lost 120 s later (the server's defaults), so A loses the work since its
// last checkpoint (every 5 min: 10 min kept, 2 min lost on 16 GPUs) and is
// requeued; with one node left it can never run again: the scheduler
// reports it unschedulable.
// B (1x8, submitted at 30 min) runs on the node left.
TEST(Simulator, NodeFailureRequeuesTheGangThroughTheLifecycle) {
  const std::vector<TraceJob> trace = {T("A", 0, 16, 3600), T("B", 1800, 8, 600)};
  SimOptions o = Opts("muster");
  o.checkpoint_interval = Duration::Minutes(5);
  o.node_failures = {{"gpu-0", 600}};
  o.stories = true;
  auto r = Simulate(trace, Nodes("2x8"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const JobResult& a = Find(*r, "A");
  EXPECT_EQ(a.node_losses, 1);
  ASSERT_EQ(a.stopped_runs.size(), 1u);
  EXPECT_EQ(a.stopped_runs[0], (std::pair<int64_t, int64_t>{0, 600 + 121}));
  EXPECT_EQ(a.outcome, Outcome::kUnschedulable);
  EXPECT_NE(a.note.find("the cluster has 8 such GPU"), std::string::npos) << a.note;
  EXPECT_EQ(r->nodes_lost, 1);
  EXPECT_EQ(r->lost_gpu_seconds, (600 + 121 - 600) * 16);
  const JobResult& b = Find(*r, "B");
  EXPECT_EQ(b.start_s, 1800);
  EXPECT_EQ(b.outcome, Outcome::kCompleted);
  ASSERT_EQ(r->stories.size(), 2u);
  EXPECT_EQ(r->stories[0].events,
            (std::vector<std::string>{"Submitted", "Started", "ReplicaFailed NODE_FAIL", "Retrying NODE_FAIL"}));
  ASSERT_EQ(r->stories[0].attempts.size(), 1u);
  EXPECT_NE(r->stories[0].attempts[0].find("gpu-0: was lost with its node gpu-0"), std::string::npos)
      << r->stories[0].attempts[0];
  EXPECT_EQ(r->stories[0].state, "FAILED");
  EXPECT_EQ(r->stories[1].state, "COMPLETED");
}

TEST(Simulator, NodeFailureOfAnUnknownNodeIsRefused) {
  SimOptions o = Opts("muster");
  o.node_failures = {{"nope", 5}};
  auto r = Simulate({T("A", 0, 8, 60)}, Nodes("1x8"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "--node-failure");
  EXPECT_NE(r.status().message().find("nope"), std::string::npos);
}

}  // namespace
}  // namespace muster::sim

namespace muster::sim {
namespace {

// Two 8-GPU nodes. A (16 GPUs, two 8-GPU replicas) runs 1,000 s at full
// size; B (8 GPUs) arrives at 100 for 500 s. Fixed, B waits for A: it ends
// at 1,500. Elastic (down to one replica), A gives B a node at 100 and runs
// at half speed after a 60 s restart, then grows back at 600 when B ends:
// 100 s done, 440 s at half speed (220), 60 s restart, the last 680 at full
// speed: A ends at 1,340, B at 600.
TEST(Simulator, AnElasticGangGivesANodeAndGrowsBack) {
  const std::vector<TraceJob> trace = {T("A", 0, 16, 1000), T("B", 100, 8, 500)};
  auto fixed = Simulate(trace, Nodes("2x8"), Opts("muster"));
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_EQ(Find(*fixed, "A").end_s, 1000);
  EXPECT_EQ(Find(*fixed, "B").end_s, 1500);

  SimOptions o = Opts("muster");
  o.elastic_min = 0.5;
  auto r = Simulate(trace, Nodes("2x8"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const JobResult& a = Find(*r, "A");
  EXPECT_EQ(a.min_replicas, 1);
  EXPECT_EQ(Find(*r, "B").start_s, 100);
  EXPECT_EQ(Find(*r, "B").end_s, 600);
  EXPECT_EQ(a.end_s, 1340);
  EXPECT_EQ(a.resizes, 2);
  EXPECT_EQ(a.preemptions, 0) << "it gave a replica back; it was not stopped";
  EXPECT_EQ(r->shrinks, 1);
  EXPECT_EQ(r->growths, 1);
  // Held: 16 GPUs for 100 s, 8 for 500 s, 16 for 740 s; the restarts (60 s
  // at 8 GPUs, then at 16) are lost work.
  EXPECT_EQ(a.HeldGpuSeconds(), 16 * 100 + 8 * 500 + 16 * 740);
  EXPECT_EQ(a.lost_gpu_seconds, 60 * 8 + 60 * 16);
  const nlohmann::json j = ReportJson(*r);
  EXPECT_EQ(j["elastic"]["shrinks"], 1);
  EXPECT_DOUBLE_EQ(j["utilization"].get<double>(), (16.0 * 100 + 8 * 500 + 16 * 740 + 8 * 500) / (16.0 * 1340));
}

}  // namespace
}  // namespace muster::sim
