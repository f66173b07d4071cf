// `muster sim`: replay a trace through the scheduler (see sim/simulator.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace muster::cli {

struct SimFlags {
  std::string trace;
  std::string cluster_file;
  std::string nodes;
  int64_t nodes_per_leaf = 0;
  int64_t leaves_per_spine = 0;
  std::string gpu_type = "gpu";
  bool single_pool = false;
  std::string policy = "muster";
  double time_limit_factor = 2.0;
  std::string time_limit;             // --time-limit: one limit for every job
  std::string backfill_by = "limit";  // --backfill-by: limit or prediction
  std::string output = "text";
  std::string jobs_csv;
  int32_t max_reservations = 8;
  std::string starvation_threshold = "8h";
  uint64_t seed = 1;
  double runtime_noise = 0;
  int64_t audit_every = 4096;
  int64_t limit = 0;
  int64_t age_points_per_hour = -1;  // -1: the scheduler's default
  int64_t age_cap = -1;
  int64_t size_points_per_gpu = -1;
  int64_t fair_share_weight = -1;  // -1: the default
  std::string half_life = "7d";
  bool equal_shares = false;
  bool reclaim_past_guarantee = false;
  bool preemption = false;
  std::string min_run_time = "5m";
  std::string checkpoint_interval = "30m";
  std::string restart_cost = "1m";
  double high_priority_fraction = 0;
  double elastic_min = 0;                  // --elastic-min
  std::vector<std::string> node_failures;  // NODE@SECONDS
  std::string unreachable_after = "20s";
  std::string lost_after = "120s";
  std::string lease = "60s";
  std::string stories;                      // file for each job's story
  std::string reclaims;                     // CSV of reclaim notices: time_s,node
  std::vector<std::string> reclaim_bursts;  // SECONDS:FRACTION
  std::string reclaim_notice = "2m";
  std::string reclaim_downtime = "0s";
  double checkpoint_gb_per_gpu = 10;
  double checkpoint_gbps = 0;
  double spot_fraction = 1.0;
  double checkpointing_fraction = 1.0;
  std::string spot_checkpoint_interval = "1h";
};

// Registers the subcommand; `flags` must outlive the app.
CLI::App* AddSimCommand(CLI::App& app, SimFlags& flags);
// Runs it; returns the process exit code.
int RunSim(const SimFlags& flags);

}  // namespace muster::cli
