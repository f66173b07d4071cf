// Tenant scenarios on the simulator with the defaults a site gets (only
// preemption turned on, as `muster sim --preemption`): how fair share and
// guarantees treat gangs beside small jobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/random.h"
#include <nlohmann/json.hpp>

#include "sim/report.h"
#include "sim/simulator.h"

namespace muster::sim {
namespace {

struct TenantLoad {
  std::string tenant;
  int64_t gpus = 1;           // per job
  double mean_hours = 1;      // exponential durations, at least 5 min
  double demand_gpus = 8;     // offered load: arrivals x gpus x mean duration
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
      j.duration_s = std::max<int64_t>(300, static_cast<int64_t>(-std::log(1.0 - rng.UniformDouble()) * l.mean_hours * 3600));
      j.tenant = l.tenant;
      j.user = l.tenant;
      trace.push_back(j);
    }
  }
  std::stable_sort(trace.begin(), trace.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  return trace;
}

// One line per tenant from the simulator's report.
void Print(const char* name, const SimResult& r) {
  const nlohmann::json j = ReportJson(r);
  std::printf("%s: Jain %.3f, preemptions %lld, lost %.1f GPU-h\n", name, j["fairness"]["jain"].get<double>(),
              static_cast<long long>(r.preemptions), r.lost_gpu_seconds / 3600.0);
  for (const auto& [tenant, t] : j["per_tenant"].items()) {
    const double held = t["gpu_hours"].get<double>(), lost = t["lost_gpu_hours"].get<double>();
    std::printf("  %-6s jobs %5lld  wait mean %6.2f h  p99 %6.2f h  max %6.2f h  held %7.1f GPU-h  lost %6.1f (%.1f%%)  "
                "preempted %lld\n",
                tenant.c_str(), t["jobs"].get<long long>(), t["mean_wait_s"].get<double>() / 3600,
                t["p99_wait_s"].get<double>() / 3600, t["max_wait_s"].get<double>() / 3600, held, lost,
                held > 0 ? 100 * lost / held : 0.0, t["preemptions"].get<long long>());
  }
}

ClusterDescription ThreeTenants() {
  auto c = ParseClusterYaml("nodeGroups: [{count: 8, gpus: 8}]\n"
                            "queues: [{name: small, guarantee: 21}, {name: gangs, guarantee: 21}, "
                            "{name: steady, guarantee: 21}]\n",
                            "three tenants");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

// Issue 24's first case: three equal tenants on 64 GPUs, each guaranteed
// 21; one floods 1-GPU jobs (48 GPUs of demand), one asks 8-GPU gangs for
// 24 GPUs on average, one 2-GPU jobs for 12. Max-min fairness would give
// the gang tenant its 24. Today's defaults do not (printed below: its
// waits run to tens of hours, and reclaims stop its gangs); the fix and its
// targets (p99 wait under 45 min, under 5% of its GPU-hours lost) are the
// issue's. What this test holds now: the run ends every job, and what each
// job lost to preemption adds up to the run's total.
TEST(TenantScenarios, ThreeTenantsWithGuaranteesGangsBesideAFlood) {
  const double days = 4;
  const auto trace = Workload({{"small", 1, 1.0, 48}, {"gangs", 8, 4.0, 24}, {"steady", 2, 2.0, 12}}, days, 7);
  SimOptions o;
  o.preemption = true;
  o.scheduler.preemption.enabled = true;
  o.scheduler.explain = false;
  auto r = Simulate(trace, ThreeTenants(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  int64_t lost = 0;
  for (const JobResult& j : r->jobs) {
    EXPECT_EQ(j.outcome, Outcome::kCompleted) << j.trace_id;
    EXPECT_LE(j.lost_gpu_seconds, j.HeldGpuSeconds()) << j.trace_id;
    lost += j.lost_gpu_seconds;
  }
  EXPECT_EQ(lost, r->lost_gpu_seconds);
  EXPECT_GT(r->preemptions, 0) << "the scenario exercises reclaims";
  Print("three tenants, defaults with preemption", *r);
}

}  // namespace
}  // namespace muster::sim
