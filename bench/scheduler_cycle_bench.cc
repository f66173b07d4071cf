// Benchmark: one scheduling cycle at scale.
//
// Builds a cluster of --nodes nodes x --gpus GPUs (32 nodes per leaf, 8
// leaves per spine), fills it to --fill (default 90%) with running jobs, and
// queues --pending jobs; job sizes follow the Philly trace's GPU-count mix
// (Jeon et al., ATC'19, as flattened by the Pollux artifact: 82,247 jobs, of
// which 1 GPU 76,627; 2: 1,818; 4: 1,870; 8: 1,643; 12: 7; 16: 199; 24: 7;
// 32: 67; 64: 6; 128: 3). Then it times Scheduler::Cycle() on the same
// snapshot --iterations times (a cycle reads the snapshot and changes
// nothing, so every iteration does the same work) and prints p50/p99 cycle
// time and placements per second. Wall time on one core, steady clock.
//
// Usage: muster_bench_cycle [--nodes 12500] [--gpus 8] [--pending 10000]
//        [--fill 0.9] [--iterations 30] [--policy muster] [--explain 1] [--seed 1]
//        [--head-gangs 0]   (adds high-priority 256-GPU gangs at the head of the queue)
//        [--low-running 0]  (this fraction of running jobs is of class low: preemptible
//                            by the pending high jobs; preemption is on by default)
//        [--queues 1]       (jobs spread over this many queues with random fair-share points)
//        [--guarantee 0]    (each of the --queues is guaranteed this many GPUs: they share
//                            fairly, scheduler/queue_quotas.h)
//        [--container-nodes 0] (this fraction of the leaves, whole, runs GPU containers)
//        [--container-jobs 0]  (this fraction of pending jobs are GPU container jobs,
//                               which only those nodes may run)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/random.h"
#include "core/cluster_state.h"
#include "scheduler/scheduler.h"
#include "sim/simulator.h"

namespace {

using namespace muster;

struct Flags {
  int nodes = 12'500;
  int gpus = 8;
  int pending = 10'000;
  double fill = 0.9;
  int iterations = 30;
  std::string policy = "muster";
  int explain = 1;
  uint64_t seed = 1;
  int head_gangs = 0;  // high-priority 256-GPU gangs at the head of the queue
  double low_running = 0;
  int queues = 1;
  int64_t guarantee = 0;
  double container_nodes = 0;
  double container_jobs = 0;
};

int64_t PhillyGpus(Random& rng) {
  static const std::pair<int64_t, int64_t> kMix[] = {{1, 76'627}, {2, 1'818}, {4, 1'870}, {8, 1'643}, {12, 7},
                                                     {16, 199},   {24, 7},    {32, 67},   {64, 6},    {128, 3}};
  int64_t total = 0;
  for (auto [g, n] : kMix) total += n;
  int64_t pick = rng.Uniform(0, total - 1);
  for (auto [g, n] : kMix) {
    if (pick < n) return g;
    pick -= n;
  }
  return 1;
}

core::JobSpec Spec(int64_t gpus, int node_gpus, Duration limit) {
  core::JobSpec s;
  const auto [replicas, per] = sim::GangShape(gpus, node_gpus);
  s.replicas = replicas;
  s.per_replica.gpus = per;
  s.time_limit = limit;
  return s;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(p / 100.0 * v.size() + 0.999999);
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--nodes")
      f.nodes = std::stoi(v);
    else if (k == "--gpus")
      f.gpus = std::stoi(v);
    else if (k == "--pending")
      f.pending = std::stoi(v);
    else if (k == "--fill")
      f.fill = std::stod(v);
    else if (k == "--iterations")
      f.iterations = std::stoi(v);
    else if (k == "--policy")
      f.policy = v;
    else if (k == "--explain")
      f.explain = std::stoi(v);
    else if (k == "--seed")
      f.seed = std::stoull(v);
    else if (k == "--head-gangs")
      f.head_gangs = std::stoi(v);
    else if (k == "--low-running")
      f.low_running = std::stod(v);
    else if (k == "--queues")
      f.queues = std::max(1, std::stoi(v));
    else if (k == "--guarantee")
      f.guarantee = std::stoll(v);
    else if (k == "--container-nodes")
      f.container_nodes = std::stod(v);
    else if (k == "--container-jobs")
      f.container_jobs = std::stod(v);
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  Random rng(f.seed);
  core::ClusterConfig config;
  for (int q = 0; f.guarantee > 0 && q < f.queues; ++q)
    config.queues.push_back({"q" + std::to_string(q), {{"*", f.guarantee}}, {}, ""});
  core::ClusterState state(config);
  for (int i = 0; i < f.nodes; ++i) {
    core::NodeSpec n;
    n.name = "n" + std::to_string(i);
    n.gpu_type = "H100";
    n.capacity.gpus = f.gpus;
    n.topology.leaf = "leaf" + std::to_string(i / 32);
    n.topology.spine = "spine" + std::to_string(i / 32 / 8);
    if ((i / 32) % 10 < static_cast<int>(f.container_nodes * 10 + 0.5)) n.features = {"containers", "gpu-containers"};
    if (!state.AddNode(n).ok()) return 1;
  }
  // Fill: place random Philly-mix jobs, started up to 24 h ago, until the
  // target share of GPUs is allocated. Placement by the scheduler itself
  // (fifo-skip), in batches.
  const int64_t total = int64_t{f.nodes} * f.gpus;
  const int64_t target = static_cast<int64_t>(total * f.fill);
  int64_t used = 0;
  Time now = Time::Zero() + Duration::Hours(48);
  scheduler::SchedulerOptions fill_opts;
  fill_opts.policy = "fifo-skip";
  fill_opts.explain = false;
  auto filler = std::move(scheduler::Scheduler::Create(fill_opts)).value();
  while (used < target) {
    int64_t batch = 0;
    while (used + batch < target && batch < 20'000) {
      int64_t g = PhillyGpus(rng);
      if (used + batch + g > target) g = 1;
      const Time start = now - Duration::Minutes(rng.Uniform(0, 24 * 60));
      core::JobSpec s = Spec(g, f.gpus, Duration::Hours(rng.Uniform(1, 72)));
      // (No draws unless asked: the default workload stays the same.)
      if (f.low_running > 0 && rng.Bernoulli(f.low_running)) s.priority_class = "low";
      if (f.queues > 1) s.queue = "q" + std::to_string(rng.Uniform(0, f.queues - 1));
      if (!state.Submit(s, start).ok()) return 1;
      batch += g;
    }
    const core::Decisions d = filler->Cycle(state.Snapshot(now));
    if (d.bindings.empty()) break;
    for (const auto& b : d.bindings) {
      const core::JobRecord* rec = state.Find(b.job);
      if (!state.Bind(b, rec->submit_time).ok()) return 1;
      used += rec->spec.per_replica.gpus * rec->spec.replicas;
    }
    // Drop what did not fit so the queue below is only the benchmark's.
    std::vector<core::JobId> left;
    for (const auto& p : state.Snapshot(now).pending) left.push_back(p.id);
    for (core::JobId id : left) (void)state.EndPending(id, core::JobState::kCancelled, now, "fill");
  }
  for (int i = 0; i < f.pending; ++i) {
    const int64_t g = PhillyGpus(rng);
    core::JobSpec s = Spec(g, f.gpus, Duration::Minutes(rng.Uniform(10, 72 * 60)));
    s.priority_class = rng.Bernoulli(0.1) ? "high" : "normal";
    if (f.queues > 1) s.queue = "q" + std::to_string(rng.Uniform(0, f.queues - 1));
    if (f.container_jobs > 0 && rng.Bernoulli(f.container_jobs)) s.required_features = {"containers", "gpu-containers"};
    if (!state.Submit(s, now - Duration::Minutes(rng.Uniform(0, 12 * 60))).ok()) return 1;
  }

  // Big gangs at the head: blocked, so each reservation walks far into the
  // release timeline (the expensive case for backfill planning).
  for (int i = 0; i < f.head_gangs; ++i) {
    core::JobSpec s = Spec(256, f.gpus, Duration::Hours(24));
    s.priority_class = "high";
    if (!state.Submit(s, now - Duration::Hours(13)).ok()) return 1;
  }

  scheduler::SchedulerOptions opts;
  opts.policy = f.policy;
  opts.explain = f.explain != 0;
  auto sched = std::move(scheduler::Scheduler::Create(opts)).value();
  core::ClusterSnapshot snap = state.Snapshot(now);
  std::vector<int64_t> fairshare;
  if (f.queues > 1) {
    for (int32_t q = 0; q < state.num_queues(); ++q) fairshare.push_back(rng.Uniform(0, 5000));
    snap.queue_fairshare = fairshare;
  }
  std::vector<double> ms;
  core::CycleStats stats;
  for (int it = 0; it < f.iterations + 1; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    const core::Decisions d = sched->Cycle(snap);
    const auto t1 = std::chrono::steady_clock::now();
    if (it == 0) continue;  // warm-up: first cycle also builds the capacity index
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    stats = d.stats;
  }
  const double p50 = Percentile(ms, 50), p99 = Percentile(ms, 99);
  std::printf("cluster %d nodes x %d GPU = %lld GPU, %.1f%% allocated (%zu running jobs), %zu pending\n", f.nodes,
              f.gpus, static_cast<long long>(total), 100.0 * used / total, state.running_count(), snap.pending.size());
  std::printf("policy %s, explain %d: %d iterations\n", f.policy.c_str(), f.explain, f.iterations);
  std::printf("cycle p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", p50, p99, *std::max_element(ms.begin(), ms.end()));
  std::printf(
      "per cycle: considered %d, placed %d, reservations %d, backfilled %d, release events walked %lld, "
      "preemptions %d\n",
      stats.jobs_considered, stats.placements, stats.reservations, stats.backfilled,
      static_cast<long long>(stats.release_events_walked), stats.preemptions);
  std::printf("placements per second at p50: %.0f\n", stats.placements / (p50 / 1000.0));
  return 0;
}
