#include "cli/sim_command.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/quantity.h"
#include "scheduler/policy_registry.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace muster::cli {

CLI::App* AddSimCommand(CLI::App& app, SimFlags& f) {
  CLI::App* sim = app.add_subcommand("sim", "Replay a job trace through the scheduler under a simulated clock");
  sim->add_option("trace", f.trace, "Normalized trace CSV (job_id,submit_time,num_gpus,duration,...)")->required();
  sim->add_option("--cluster", f.cluster_file, "Cluster YAML file (see docs/simulation.md)");
  sim->add_option("--nodes", f.nodes, "Cluster as COUNTxGPUS, e.g. 80x8");
  sim->add_option("--nodes-per-leaf", f.nodes_per_leaf, "Nodes under one leaf switch (with --nodes)");
  sim->add_option("--leaves-per-spine", f.leaves_per_spine, "Leaves under one spine (with --nodes)");
  sim->add_option("--gpu-type", f.gpu_type, "GPU type of the nodes (with --nodes)");
  sim->add_flag("--single-pool", f.single_pool, "Treat all GPUs of a type as one pool");
  sim->add_option("--policy", f.policy, "muster (default), fifo, fifo-skip, sjf or las (with --preemption)");
  sim->add_option("--time-limit-factor", f.time_limit_factor,
                  "Each job's time limit is this factor x its duration (default 2)");
  sim->add_option(
      "--time-limit", f.time_limit,
      "Every job's time limit, as a site's (e.g. 7d); longer jobs end at it (instead of --time-limit-factor)");
  sim->add_option("--backfill-by", f.backfill_by,
                  "limit (default) or prediction (each user's last two run times, at most the limit)");
  sim->add_option("--output,-o", f.output, "text (default) or json");
  sim->add_option("--jobs-csv", f.jobs_csv, "Write one row per job to this file");
  sim->add_option("--max-reservations", f.max_reservations, "Blocked jobs that get a reservation per cycle");
  sim->add_option("--starvation-threshold", f.starvation_threshold,
                  "Wait after which a job always gets a reservation (e.g. 8h)");
  sim->add_option("--seed", f.seed, "Seed for every random choice (runtime noise)");
  sim->add_option("--runtime-noise", f.runtime_noise, "Actual run time = duration x U(1-x, 1+x), in [0, 1)");
  sim->add_option("--audit-every", f.audit_every, "Full invariant audit every N events (1 = every event)");
  sim->add_option("--limit", f.limit, "Replay only the first N jobs by submit time");
  sim->add_option("--age-points-per-hour", f.age_points_per_hour, "Priority points per hour waited");
  sim->add_option("--age-cap", f.age_cap, "Most priority points age can add");
  sim->add_option("--size-points-per-gpu", f.size_points_per_gpu, "Priority points per GPU of the job");
  sim->add_option("--fair-share-weight", f.fair_share_weight,
                  "Fair-share priority points between tenants (default 5000; 0 = off)");
  sim->add_option("--half-life", f.half_life, "Half-life of fair-share usage (default 7d)");
  sim->add_flag("--equal-shares", f.equal_shares,
                "Give every tenant the same share (ignore the cluster file's queues)");
  sim->add_flag("--preemption", f.preemption,
                "Higher classes preempt lower ones, queues reclaim their guarantees (every class is preemptible)");
  sim->add_flag("--reclaim-past-guarantee", f.reclaim_past_guarantee,
                "With --preemption, queues at or past their guarantee reclaim toward their fair share too");
  sim->add_option("--min-run-time", f.min_run_time, "A job runs this long before it may be preempted (default 5m)");
  sim->add_option("--checkpoint-interval", f.checkpoint_interval,
                  "Jobs checkpoint after each interval of progress; a victim loses the rest (default 30m)");
  sim->add_option("--restart-cost", f.restart_cost, "Time a preempted job spends restarting (default 1m)");
  sim->add_option(
      "--elastic-min", f.elastic_min,
      "Gangs of 2+ replicas are elastic, from this fraction of their replicas (rounded up) to all (0 = fixed)");
  sim->add_option("--high-priority-fraction", f.high_priority_fraction,
                  "Put this fraction of jobs (seeded) in class p1, for traces without priorities");
  sim->add_option("--node-failure", f.node_failures,
                  "NODE@SECONDS: the node's agent goes silent for good at that time (repeatable)");
  sim->add_option("--unreachable-after", f.unreachable_after,
                  "A silent node gets no new work after this (default 20s, as the server's)");
  sim->add_option("--lost-after", f.lost_after,
                  "A silent node is lost after this and its jobs are requeued (default 120s, as the server's)");
  sim->add_option("--lease", f.lease,
                  "A silent node's tasks stop themselves this long after its last sync, and it is lost no sooner "
                  "(default 60s, as the server's agents.lease)");
  sim->add_option("--stories", f.stories, "Write each job's story (events, attempts, final state) to this file");
  sim->add_option("--reclaims", f.reclaims,
                  "CSV of spot reclaim notices, time_s,node: the node is drained, its jobs checkpoint and move");
  sim->add_option(
      "--reclaim-burst", f.reclaim_bursts,
      "SECONDS:FRACTION: notices for that fraction of the spot nodes (seeded) within a minute (repeatable)");
  sim->add_option("--reclaim-notice", f.reclaim_notice, "Time from a reclaim notice to the node's loss (default 2m)");
  sim->add_option("--reclaim-downtime", f.reclaim_downtime,
                  "A reclaimed node comes back this long after its loss (default 0s: never)");
  sim->add_option("--checkpoint-gb-per-gpu", f.checkpoint_gb_per_gpu,
                  "Size of a job's checkpoint per GPU, written at a reclaim notice (default 10)");
  sim->add_option("--checkpoint-gbps", f.checkpoint_gbps,
                  "Checkpoint storage bandwidth the writes at reclaim notices share, GB/s (default 0: unlimited)");
  sim->add_option("--spot-fraction", f.spot_fraction,
                  "Fraction of jobs (seeded) that may run on spot nodes (default 1); the others need on-demand nodes");
  sim->add_option(
      "--checkpointing-fraction", f.checkpointing_fraction,
      "Fraction of jobs (seeded) that checkpoint (default 1); the others lose their whole run when stopped");
  sim->add_option("--spot-checkpoint-interval", f.spot_checkpoint_interval,
                  "Jobs that checkpoint at least this often go to spot nodes first, the others to on-demand first "
                  "(default 1h; 0s: no preference)");
  return sim;
}

namespace {

// Reads a reclaim trace: lines "time_s,node" (a header line and blank lines
// are skipped).
StatusOr<std::vector<sim::SimOptions::Reclaim>> ReadReclaims(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot open " + path, "--reclaims");
  std::vector<sim::SimOptions::Reclaim> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (n == 1 && line.rfind("time", 0) == 0)) continue;
    const size_t comma = line.find(',');
    if (comma == std::string::npos || comma == 0 || comma > 12 || line.find_first_not_of("0123456789") != comma ||
        comma + 1 == line.size()) {
      return InvalidArgument(path + " line " + std::to_string(n) + ": must be time_s,node, got \"" + line + "\"",
                             "--reclaims");
    }
    out.push_back({line.substr(comma + 1), std::stoll(line.substr(0, comma))});
  }
  return out;
}

}  // namespace

int RunSim(const SimFlags& f) {
  auto fail = [](const Status& s) {
    std::cerr << "muster sim: " << (s.field().empty() ? s.message() : s.ToString()) << "\n";
    return 1;
  };
  if (f.output != "text" && f.output != "json") {
    return fail(InvalidArgument("must be text or json, got \"" + f.output + "\"", "--output"));
  }
  if (f.cluster_file.empty() == f.nodes.empty()) {
    return fail(InvalidArgument("give exactly one of --cluster FILE or --nodes COUNTxGPUS", "--nodes"));
  }
  auto cluster = f.cluster_file.empty()
                     ? sim::ClusterFromFlags({f.nodes, f.nodes_per_leaf, f.leaves_per_spine, f.gpu_type})
                     : sim::LoadClusterFile(f.cluster_file);
  if (!cluster.ok()) return fail(cluster.status());
  sim::ClusterDescription desc = f.single_pool ? sim::SinglePool(*cluster) : std::move(*cluster);

  auto trace = sim::ReadTraceFile(f.trace);
  if (!trace.ok()) return fail(trace.status());
  if (f.limit > 0 && static_cast<size_t>(f.limit) < trace->size()) {
    std::stable_sort(trace->begin(), trace->end(),
                     [](const sim::TraceJob& a, const sim::TraceJob& b) { return a.submit_s < b.submit_s; });
    trace->resize(f.limit);
  }

  sim::SimOptions opts;
  opts.scheduler.policy = f.policy;
  opts.scheduler.max_reservations = f.max_reservations;
  opts.scheduler.explain = false;
  auto threshold = ParseDuration(f.starvation_threshold);
  if (!threshold.ok()) return fail(threshold.status().WithFieldPrefix("--starvation-threshold"));
  opts.scheduler.starvation_threshold = *threshold;
  if (f.backfill_by != "prediction" && f.backfill_by != "limit") {
    return fail(InvalidArgument("must be prediction or limit, got \"" + f.backfill_by + "\"", "--backfill-by"));
  }
  opts.scheduler.predict_run_times = f.backfill_by == "prediction";
  if (!f.time_limit.empty()) {
    auto limit = ParseDuration(f.time_limit);
    if (!limit.ok()) return fail(limit.status().WithFieldPrefix("--time-limit"));
    opts.time_limit = *limit;
  }
  if (f.age_points_per_hour >= 0) opts.scheduler.weights.age_points_per_hour = f.age_points_per_hour;
  if (f.age_cap >= 0) opts.scheduler.weights.age_cap = f.age_cap;
  if (f.size_points_per_gpu >= 0) opts.scheduler.weights.size_points_per_gpu = f.size_points_per_gpu;
  if (f.fair_share_weight >= 0) opts.fairshare.weight = f.fair_share_weight;
  opts.equal_shares = f.equal_shares;
  auto half_life = ParseDuration(f.half_life);
  if (!half_life.ok()) return fail(half_life.status().WithFieldPrefix("--half-life"));
  opts.fairshare.half_life = *half_life;
  opts.preemption = f.preemption;
  opts.scheduler.preemption.enabled = f.preemption;
  opts.scheduler.preemption.reclaim_past_guarantee = f.reclaim_past_guarantee;
  for (const auto& [flag, text, out] :
       {std::tuple{"--min-run-time", &f.min_run_time, &opts.scheduler.preemption.min_run_time},
        std::tuple{"--checkpoint-interval", &f.checkpoint_interval, &opts.checkpoint_interval},
        std::tuple{"--restart-cost", &f.restart_cost, &opts.restart_cost},
        std::tuple{"--spot-checkpoint-interval", &f.spot_checkpoint_interval,
                   &opts.scheduler.spot_checkpoint_interval}}) {
    auto d = ParseDuration(*text);
    if (!d.ok()) return fail(d.status().WithFieldPrefix(flag));
    *out = *d;
  }
  opts.high_priority_fraction = f.high_priority_fraction;
  opts.elastic_min = f.elastic_min;
  for (const std::string& failure : f.node_failures) {
    const size_t at = failure.rfind('@');
    int64_t seconds = -1;
    if (at == std::string::npos || at == 0 || at + 1 == failure.size() ||
        failure.find_first_not_of("0123456789", at + 1) != std::string::npos || failure.size() - at - 1 > 12 ||
        (seconds = std::stoll(failure.substr(at + 1))) < 0) {
      return fail(InvalidArgument("must be NODE@SECONDS (e.g. gpu-3@3600), got \"" + failure + "\"", "--node-failure"));
    }
    opts.node_failures.push_back({failure.substr(0, at), seconds});
  }
  for (const auto& [flag, text, out] :
       {std::tuple{"--unreachable-after", &f.unreachable_after, &opts.liveness.unreachable_after},
        std::tuple{"--lost-after", &f.lost_after, &opts.liveness.lost_after},
        std::tuple{"--lease", &f.lease, &opts.liveness.lease}}) {
    auto d = ParseDuration(*text);
    if (!d.ok()) return fail(d.status().WithFieldPrefix(flag));
    *out = *d;
  }
  opts.stories = !f.stories.empty();
  if (!f.reclaims.empty()) {
    auto reclaims = ReadReclaims(f.reclaims);
    if (!reclaims.ok()) return fail(reclaims.status());
    opts.reclaims = std::move(*reclaims);
  }
  for (const std::string& burst : f.reclaim_bursts) {
    const size_t colon = burst.find(':');
    char* end = nullptr;
    const double fraction = colon == std::string::npos ? -1 : std::strtod(burst.c_str() + colon + 1, &end);
    if (colon == std::string::npos || colon == 0 || colon > 12 || burst.find_first_not_of("0123456789") != colon ||
        end == nullptr || *end != '\0' || !(fraction > 0 && fraction <= 1)) {
      return fail(
          InvalidArgument("must be SECONDS:FRACTION (e.g. 7200:0.2), got \"" + burst + "\"", "--reclaim-burst"));
    }
    opts.reclaim_bursts.push_back({std::stoll(burst.substr(0, colon)), fraction});
  }
  for (const auto& [flag, text, out] :
       {std::tuple{"--reclaim-notice", &f.reclaim_notice, &opts.reclaim_notice},
        std::tuple{"--reclaim-downtime", &f.reclaim_downtime, &opts.reclaim_downtime}}) {
    auto d = ParseDuration(*text);
    if (!d.ok()) return fail(d.status().WithFieldPrefix(flag));
    *out = *d;
  }
  opts.checkpoint_gb_per_gpu = f.checkpoint_gb_per_gpu;
  opts.checkpoint_gbps = f.checkpoint_gbps;
  opts.spot_fraction = f.spot_fraction;
  opts.checkpointing_fraction = f.checkpointing_fraction;
  opts.time_limit_factor = f.time_limit_factor;
  opts.seed = f.seed;
  opts.runtime_noise = f.runtime_noise;
  opts.audit_every = f.audit_every;

  auto result = sim::Simulate(*trace, desc, opts);
  if (!result.ok()) return fail(result.status());

  if (!f.stories.empty()) {
    std::ofstream out(f.stories);
    if (!out) return fail(NotFound("cannot write " + f.stories));
    out << sim::FormatStories(result->stories);
  }
  if (!f.jobs_csv.empty()) {
    std::ofstream out(f.jobs_csv);
    if (!out) return fail(NotFound("cannot write " + f.jobs_csv));
    sim::WriteJobsCsv(*result, out);
  }
  if (f.output == "json") {
    std::cout << sim::ReportJson(*result).dump(2) << "\n";
  } else {
    std::cout << "trace " << f.trace << "\n";
    sim::WriteTextReport(*result, std::cout);
  }
  return 0;
}

}  // namespace muster::cli
