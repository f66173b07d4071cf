// Tenant scenarios on the simulator with the defaults a site gets (only
// preemption turned on, as `muster sim --preemption`): how fair share and
// guarantees treat gangs beside small jobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>
#include "common/random.h"

#include "sim/report.h"
#include "sim/simulator.h"

namespace muster::sim {
namespace {

struct TenantLoad {
  std::string tenant;
  int64_t gpus = 1;        // per job
  double mean_hours = 1;   // exponential durations, at least 5 min
  double demand_gpus = 8;  // offered load: arrivals x gpus x mean duration
};

std::vector<TraceJob> Workload(const std::vector<TenantLoad>& loads, double days, uint64_t seed) {
  Random rng(seed);
  std::vector<TraceJob> trace;
  for (const TenantLoad& l : loads) {
    const double per_hour = l.demand_gpus / (static_cast<double>(l.gpus) * l.mean_hours);
    double t = 0;
    int n = 0;
    while (true) {
      t += -std::log(1.0 - rng.UniformDouble()) / per_hour * 3600.0;
      if (t > days * 86400.0) break;
      TraceJob j;
      j.id = l.tenant + std::to_string(n++);
      j.submit_s = static_cast<int64_t>(t);
      j.num_gpus = l.gpus;
      j.gpu_milli = l.gpus * 1000;
      j.duration_s =
          std::max<int64_t>(300, static_cast<int64_t>(-std::log(1.0 - rng.UniformDouble()) * l.mean_hours * 3600));
      j.tenant = l.tenant;
      j.user = l.tenant;
      trace.push_back(j);
    }
  }
  std::stable_sort(trace.begin(), trace.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  return trace;
}

// A tenant whose `streams` researchers each keep one `gpus`-GPU job going:
// jobs of `mean_hours` (uniform within half of it either way), the next
// submitted a pause (exponential, `gap_minutes` on average) after the
// previous would end if it started at once. Its demand is steady, about
// streams x gpus.
std::vector<TraceJob> Streams(const std::string& tenant, int64_t gpus, int streams, double mean_hours,
                              double gap_minutes, double days, uint64_t seed) {
  Random rng(seed);
  std::vector<TraceJob> trace;
  int n = 0;
  for (int s = 0; s < streams; ++s) {
    double t = rng.UniformDouble() * gap_minutes * 60;
    while (t < days * 86400.0) {
      TraceJob j;
      j.id = tenant + std::to_string(n++);
      j.submit_s = static_cast<int64_t>(t);
      j.num_gpus = gpus;
      j.gpu_milli = gpus * 1000;
      j.duration_s = static_cast<int64_t>((0.5 + rng.UniformDouble()) * mean_hours * 3600);
      j.tenant = tenant;
      j.user = tenant;
      trace.push_back(j);
      t += static_cast<double>(j.duration_s) - std::log(1.0 - rng.UniformDouble()) * gap_minutes * 60;
    }
  }
  return trace;
}

std::vector<TraceJob> Merged(std::vector<TraceJob> a, const std::vector<TraceJob>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::stable_sort(a.begin(), a.end(), [](const TraceJob& x, const TraceJob& y) { return x.submit_s < y.submit_s; });
  return a;
}

// One line per tenant from the simulator's report.
void Print(const char* name, const SimResult& r) {
  const nlohmann::json j = ReportJson(r);
  std::printf("%s: Jain %.3f, preemptions %lld, lost %.1f GPU-h\n", name, j["fairness"]["jain"].get<double>(),
              static_cast<long long>(r.preemptions), r.lost_gpu_seconds / 3600.0);
  for (const auto& [tenant, t] : j["per_tenant"].items()) {
    const double held = t["gpu_hours"].get<double>(), lost = t["lost_gpu_hours"].get<double>();
    std::printf(
        "  %-6s jobs %5lld  wait mean %6.2f h  p99 %6.2f h  max %6.2f h  held %7.1f GPU-h  lost %6.1f (%.1f%%)  "
        "preempted %lld\n",
        tenant.c_str(), t["jobs"].get<long long>(), t["mean_wait_s"].get<double>() / 3600,
        t["p99_wait_s"].get<double>() / 3600, t["max_wait_s"].get<double>() / 3600, held, lost,
        held > 0 ? 100 * lost / held : 0.0, t["preemptions"].get<long long>());
  }
}

ClusterDescription ThreeTenants() {
  auto c = ParseClusterYaml(
      "nodeGroups: [{count: 8, gpus: 8}]\n"
      "queues: [{name: small, guarantee: 21}, {name: gangs, guarantee: 21}, "
      "{name: steady, guarantee: 21}]\n",
      "three tenants");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

SimOptions Defaults() {
  SimOptions o;
  o.preemption = true;
  o.scheduler.preemption.enabled = true;
  o.scheduler.explain = false;
  return o;
}

// A tenant's jobs alone on a partition of `nodes` 8-GPU nodes of its own.
SimResult Dedicated(const std::vector<TraceJob>& trace, const std::string& tenant, int nodes) {
  std::vector<TraceJob> own;
  for (const TraceJob& t : trace) {
    if (t.tenant == tenant) own.push_back(t);
  }
  auto cluster = ClusterFromFlags({std::to_string(nodes) + "x8", 0, 0, "gpu"});
  EXPECT_TRUE(cluster.ok());
  SimOptions o;
  o.scheduler.explain = false;
  auto r = Simulate(own, *cluster, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

// Runs `trace` on the three tenants' cluster with the defaults, checks
// that every job ends and that lost work adds up, and prints the tenants.
SimResult RunThreeTenants(const std::vector<TraceJob>& trace, const char* name) {
  auto r = Simulate(trace, ThreeTenants(), Defaults());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  int64_t lost = 0;
  for (const JobResult& j : r->jobs) {
    EXPECT_EQ(j.outcome, Outcome::kCompleted) << j.trace_id;
    EXPECT_LE(j.lost_gpu_seconds, j.HeldGpuSeconds()) << j.trace_id;
    lost += j.lost_gpu_seconds;
  }
  EXPECT_EQ(lost, r->lost_gpu_seconds);
  Print(name, *r);
  return *r;
}

// Issue 24's first case: three equal tenants on 64 GPUs, each guaranteed
// 21. One floods 1-GPU jobs (48 GPUs of demand); one, three researchers
// each keeping an 8-GPU job of about 4 h going, asks 24 GPUs; one asks 12
// in 2-GPU jobs. The gang tenant's max-min fair share is 26 (the steady
// tenant takes 12, the other two split the rest): it is owed all it asks.
// Each time a gang ends and the next is submitted, the tenant holds 16, 5
// short of its guarantee, and needs a whole node, which the flood holds in
// 1-GPU jobs that end at random.
//
// Before fair-share reclaim (main at 52d2871): the gang tenant's p99 wait
// was 39 h, it lost 6.7% of its GPU-hours to reclaims, and Jain's index
// was 0.79. A queue could reclaim only while the job kept it within its
// guarantee (16 + 8 > 21: the third gang could not), while the steady
// tenant reclaimed from it whenever it held 24 (3 past its guarantee),
// stopping a gang to run 2 GPUs. Now: p99 10 minutes, nothing lost, 0.97.
TEST(TenantScenarios, AGangTenantBelowItsFairShareGetsItBesideAFlood) {
  const double days = 4;
  const auto trace = Merged(Workload({{"small", 1, 1.0, 48}, {"steady", 2, 2.0, 12}}, days, 7),
                            Streams("gangs", 8, 3, 4.0, 10, days, 8));
  const SimResult r = RunThreeTenants(trace, "three tenants, the gang tenant steady at 24 GPUs");
  const nlohmann::json j = ReportJson(r);
  const nlohmann::json& gangs = j["per_tenant"]["gangs"];
  EXPECT_LT(gangs["p99_wait_s"].get<double>(), 45 * 60.0);
  EXPECT_LT(gangs["lost_gpu_hours"].get<double>(), 0.05 * gangs["gpu_hours"].get<double>());
  EXPECT_GT(j["fairness"]["jain"].get<double>(), 0.95);
  // The steady tenant, mostly within its guarantee, hardly waits; the flood
  // pays for the reclaims (its 1-GPU jobs are the cheapest victims).
  EXPECT_LT(j["per_tenant"]["steady"]["p99_wait_s"].get<double>(), 2 * 3600.0);
  EXPECT_LT(j["per_tenant"]["steady"]["lost_gpu_hours"].get<double>(),
            0.02 * j["per_tenant"]["steady"]["gpu_hours"].get<double>());
}

// The same tenants with the gangs arriving at random (Poisson, exponential
// durations, 24 GPUs of demand on average). Its own bursts then exceed any
// fair share: alone on 32 GPUs (more than its share of 26) its p99 wait is
// 8.8 h, on 24 GPUs 17.8 h, so no scheduler meets a 45-minute p99 here.
// What holds: it loses under 5% of its GPU-hours (no reclaim stops a gang
// for a few GPUs), the tenants' Jain index is above 0.95, and the steady
// tenant hardly waits. (Before fair-share reclaim: gang p99 45 h, 5.6% of
// its GPU-hours lost, Jain 0.85; now p99 about 18 h, none lost, 0.99.)
TEST(TenantScenarios, GangsArrivingAtRandomLoseNoWorkAndShareFairly) {
  const double days = 4;
  const auto trace = Workload({{"small", 1, 1.0, 48}, {"gangs", 8, 4.0, 24}, {"steady", 2, 2.0, 12}}, days, 7);
  const SimResult r = RunThreeTenants(trace, "three tenants, gangs at random");
  Print("the gang tenant alone on 24 GPUs", Dedicated(trace, "gangs", 3));
  Print("the gang tenant alone on 32 GPUs", Dedicated(trace, "gangs", 4));
  const nlohmann::json j = ReportJson(r);
  const nlohmann::json& gangs = j["per_tenant"]["gangs"];
  EXPECT_LT(gangs["lost_gpu_hours"].get<double>(), 0.05 * gangs["gpu_hours"].get<double>());
  EXPECT_GT(j["fairness"]["jain"].get<double>(), 0.95);
  EXPECT_LT(j["per_tenant"]["steady"]["p99_wait_s"].get<double>(), 2 * 3600.0);
}

// Where guarantees and fair share pull apart: two tenants both flooding
// 1-GPU jobs, A guaranteed 48 of the 64 GPUs and B 8, with equal fair-share
// weights. Fair share by usage alone would split the cluster 32/32;
// guarantees say A first. A guarantee is a promise a site made (a team paid
// for it), so it wins; fair share divides only what nobody was promised:
// each queue's share is what it holds past its guarantee over its weight,
// reclaims and the order of starts even those out, and the fair-share
// priority term aims at the same split (fairshare.h): A 52, B 12. Each
// tenant's GPU-hours while both wait come out there, and the split is kept
// without churn: a start that the other queue would reclaim at once yields
// to it (queue_quotas.h). Before that rule B lost 14% of its GPU-hours to
// 2,900 reclaims; now under 1%.
TEST(TenantScenarios, GuaranteesOutweighFairShareAndTheRestIsShared) {
  const double days = 2;
  const auto trace = Workload({{"A", 1, 1.0, 60}, {"B", 1, 1.0, 60}}, days, 11);
  auto cluster = ParseClusterYaml(
      "nodeGroups: [{count: 8, gpus: 8}]\n"
      "queues: [{name: A, guarantee: 48}, {name: B, guarantee: 8}]\n",
      "two tenants");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  auto r = Simulate(trace, *cluster, Defaults());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Print("guarantees 48 and 8, both flooding", *r);
  // GPU-hours in the second half of the arrivals, when both have long backlogs.
  double a = 0, b = 0;
  const int64_t from = static_cast<int64_t>(days * 86400 / 2), to = static_cast<int64_t>(days * 86400);
  for (const JobResult& j : r->jobs) {
    std::vector<std::pair<int64_t, int64_t>> runs = j.stopped_runs;
    runs.emplace_back(j.LastStart(), j.end_s);
    for (const auto& [x, y] : runs) {
      const double held = static_cast<double>(std::max<int64_t>(0, std::min(to, y) - std::max(from, x))) * j.gpus;
      (j.tenant == "A" ? a : b) += held;
    }
  }
  EXPECT_NEAR(a / (a + b), 52.0 / 64.0, 0.03) << "A " << a / 3600 << " GPU-h, B " << b / 3600;
  EXPECT_LT(r->lost_gpu_seconds, 0.01 * static_cast<double>(r->busy_gpu_seconds));
  // Jain's index judges by equal shares, which the guarantees overrule.
  EXPECT_LT(ReportJson(*r)["fairness"]["jain"].get<double>(), 0.95);
}

}  // namespace
}  // namespace muster::sim
