// The las policy in the simulator: on a workload of mostly short jobs and
// a few long ones, at moderate load, least attained service with
// checkpointed preemption waits less than SJF, which knows every duration,
// and every job completes with the state audited (docs/simulation.md,
// "Less waiting without knowing durations", has the real traces).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/random.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace muster::sim {
namespace {

// Poisson arrivals; 1, 2, 4 or 8 GPUs; 75% of jobs under an hour, 20% of
// one to eight hours, 5% of ten to fifty. About 70% of 64 GPUs is used.
std::vector<TraceJob> Workload(uint64_t seed, int jobs) {
  Random rng(seed);
  std::vector<TraceJob> out;
  double t = 0;
  for (int i = 0; i < jobs; ++i) {
    t += -std::log(1.0 - rng.UniformDouble()) * 700;
    TraceJob j;
    j.id = "j" + std::to_string(i);
    j.submit_s = static_cast<int64_t>(t);
    const int64_t sizes[] = {1, 1, 2, 4, 8};
    j.num_gpus = sizes[rng.Uniform(0, 4)];
    const double u = rng.UniformDouble();
    j.duration_s = u < 0.75   ? rng.Uniform(300, 3600)
                   : u < 0.95 ? rng.Uniform(3600, 8 * 3600)
                              : rng.Uniform(10 * 3600, 50 * 3600);
    j.tenant = "t";
    j.user = "u";
    out.push_back(j);
  }
  return out;
}

nlohmann::json Replay(const std::vector<TraceJob>& trace, const std::string& policy, bool preemption) {
  auto cluster = ClusterFromFlags({"8x8", 0, 0, "gpu"});
  EXPECT_TRUE(cluster.ok());
  SimOptions o;
  o.scheduler.policy = policy;
  o.scheduler.explain = false;
  o.preemption = preemption;
  o.audit_every = 64;
  auto r = Simulate(trace, *cluster, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? ReportJson(*r) : nlohmann::json::object();
}

TEST(AttainedServiceSim, WaitsLessThanShortestFirstWithoutKnowingDurations) {
  for (uint64_t seed : {1, 2}) {
    const std::vector<TraceJob> trace = Workload(seed, 2000);
    const nlohmann::json sjf = Replay(trace, "sjf", false);
    const nlohmann::json las = Replay(trace, "las", true);
    const nlohmann::json muster = Replay(trace, "muster", true);
    ASSERT_EQ(las["completed"], 2000) << "seed " << seed;
    const double q_las = las["mean_queued_s"].get<double>(), q_sjf = sjf["mean_queued_s"].get<double>();
    RecordProperty("seed" + std::to_string(seed),
                   "las " + std::to_string(q_las) + " s, sjf " + std::to_string(q_sjf) + " s");
    // Every stretch pending counts, also after a preemption, and the work
    // the victims lost is paid for in their run time.
    EXPECT_LT(q_las, q_sjf) << "seed " << seed;
    EXPECT_LT(q_las, muster["mean_queued_s"].get<double>()) << "seed " << seed;
    EXPECT_GT(las["preemptions"].get<int64_t>(), 0);
    EXPECT_GT(las["lost_gpu_hours"].get<double>(), 0);
    // Aging and the starvation guard keep the longest wait below SJF's,
    // which lets short jobs pass a long one for as long as they come.
    EXPECT_LT(las["max_queued_s"].get<int64_t>(), sjf["max_queued_s"].get<int64_t>()) << "seed " << seed;
  }
}

}  // namespace
}  // namespace muster::sim
