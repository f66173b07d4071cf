#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/fairness.h"

namespace muster::sim {
namespace {

struct Stats {
  int64_t jobs = 0;
  double gpu_seconds = 0;
  double lost_gpu_seconds = 0;
  int64_t preemptions = 0;
  // wait: to the first start; queued: every stretch pending, also after
  // a preemption or a lost node (JCT less the time it ran).
  std::vector<int64_t> jct, wait, queued;

  void Add(const JobResult& j) {
    ++jobs;
    if (j.start_s < 0) return;
    gpu_seconds += static_cast<double>(j.HeldGpuSeconds());
    lost_gpu_seconds += static_cast<double>(j.lost_gpu_seconds);
    preemptions += j.preemptions;
    jct.push_back(j.end_s - j.submit_s);
    wait.push_back(j.start_s - j.submit_s);
    queued.push_back(j.end_s - j.submit_s - j.RanSeconds());
  }
};

int64_t Percentile(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

double Mean(const std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  long double sum = 0;
  for (int64_t x : v) sum += x;
  return static_cast<double>(sum / v.size());
}

nlohmann::json StatsJson(Stats s) {
  nlohmann::json j;
  j["jobs"] = s.jobs;
  j["mean_jct_s"] = Mean(s.jct);
  j["p50_jct_s"] = Percentile(s.jct, 50);
  j["p95_jct_s"] = Percentile(s.jct, 95);
  j["p99_jct_s"] = Percentile(s.jct, 99);
  j["mean_wait_s"] = Mean(s.wait);
  j["p50_wait_s"] = Percentile(s.wait, 50);
  j["p95_wait_s"] = Percentile(s.wait, 95);
  j["p99_wait_s"] = Percentile(s.wait, 99);
  j["max_wait_s"] = s.wait.empty() ? 0 : *std::max_element(s.wait.begin(), s.wait.end());
  j["mean_queued_s"] = Mean(s.queued);
  j["p99_queued_s"] = Percentile(s.queued, 99);
  j["max_queued_s"] = s.queued.empty() ? 0 : *std::max_element(s.queued.begin(), s.queued.end());
  return j;
}

std::string Hours(double s) { return fmt::format("{:.2f} h", s / 3600.0); }

// The busy fraction of all GPUs while at least one job waits, and how long
// jobs waited in all: utilization where it matters, leaving out the idle
// time when nothing asks for GPUs (the start, quiet stretches, the drain).
std::pair<double, double> UtilizationWhileWaiting(const std::vector<JobResult>& jobs, int64_t total_gpus) {
  const std::vector<JobEdge> ev = JobEdges(jobs);
  int64_t waiting = 0, busy = 0;
  double busy_s = 0, waited_s = 0;
  for (size_t k = 0; k < ev.size();) {
    const int64_t now = ev[k].t;
    for (; k < ev.size() && ev[k].t == now; ++k) {
      waiting += ev[k].waiting;
      busy += ev[k].held;
    }
    if (k == ev.size() || waiting <= 0) continue;
    const double dt = static_cast<double>(ev[k].t - now);
    waited_s += dt;
    busy_s += dt * static_cast<double>(busy);
  }
  const double u = waited_s > 0 && total_gpus > 0 ? busy_s / (waited_s * static_cast<double>(total_gpus)) : 0.0;
  return {u, waited_s / 3600.0};
}

}  // namespace

nlohmann::json ReportJson(const SimResult& r) {
  Stats all;
  std::map<std::string, Stats> per_class, per_tenant;
  int64_t completed = 0, timeout = 0, unschedulable = 0, skipped = 0, censored = 0;
  for (const JobResult& j : r.jobs) {
    switch (j.outcome) {
      case Outcome::kCompleted:
        ++completed;
        break;
      case Outcome::kTimeout:
        ++timeout;
        break;
      case Outcome::kUnschedulable:
        ++unschedulable;
        break;
      default:
        ++skipped;
        continue;
    }
    if (j.censored) ++censored;
    if (j.outcome == Outcome::kUnschedulable) continue;
    all.Add(j);
    per_class[j.priority_class].Add(j);
    per_tenant[j.tenant.empty() ? "default" : j.tenant].Add(j);
  }
  nlohmann::json out = StatsJson(all);
  out["jobs"] = static_cast<int64_t>(r.jobs.size());
  out["completed"] = completed;
  out["timeout"] = timeout;
  out["unschedulable"] = unschedulable;
  out["skipped"] = skipped;
  out["censored"] = censored;
  const int64_t makespan = std::max<int64_t>(0, r.last_end_s - r.first_submit_s);
  out["makespan_s"] = makespan;
  out["utilization"] = makespan > 0 && r.total_gpus > 0
                           ? static_cast<double>(r.busy_gpu_seconds) /
                                 (static_cast<double>(r.total_gpus) * static_cast<double>(makespan))
                           : 0.0;
  out["busy_gpu_hours"] = static_cast<double>(r.busy_gpu_seconds) / 3600.0;
  const auto [while_waiting, waiting_hours] = UtilizationWhileWaiting(r.jobs, r.total_gpus);
  out["utilization_while_waiting"] = while_waiting;
  out["waiting_hours"] = waiting_hours;
  out["per_class"] = nlohmann::json::object();
  for (auto& [k, s] : per_class) out["per_class"][k] = StatsJson(s);
  // Per tenant: GPU-hours and their share of all.
  out["per_tenant"] = nlohmann::json::object();
  double total_gpu_s = 0;
  for (auto& [k, st] : per_tenant) total_gpu_s += st.gpu_seconds;
  for (auto& [k, st] : per_tenant) {
    nlohmann::json t = StatsJson(st);
    t["gpu_hours"] = st.gpu_seconds / 3600.0;
    t["usage_share"] = total_gpu_s > 0 ? st.gpu_seconds / total_gpu_s : 0.0;
    // Work its jobs lost to preemption and lost nodes (part of gpu_hours).
    t["lost_gpu_hours"] = st.lost_gpu_seconds / 3600.0;
    t["preemptions"] = st.preemptions;
    out["per_tenant"][k] = t;
  }
  // Fairness between tenants that compete (sim/fairness.h).
  const Fairness fair = TenantFairness(r.jobs, r.shares);
  out["fairness"] = {{"jain", fair.jain},
                     {"contended_hours", fair.contended_hours},
                     {"ratio", fair.ratio},
                     {"excluded", fair.excluded}};
  out["preemption"] = r.preemption;
  out["preemptions"] = r.preemptions;
  out["elastic"] = {{"growths", r.growths}, {"shrinks", r.shrinks}};
  out["lost_gpu_hours"] = static_cast<double>(r.lost_gpu_seconds) / 3600.0;
  out["checkpoint_interval_s"] = r.checkpoint_interval_s;
  // Jobs that lost, over all their runs, more than one checkpoint interval
  // of work (what periodic checkpoints alone would bound each stop to).
  int64_t over_interval = 0;
  for (const JobResult& j : r.jobs) {
    if (j.lost_gpu_seconds > r.checkpoint_interval_s * j.gpus) ++over_interval;
  }
  out["jobs_lost_over_checkpoint_interval"] = over_interval;
  out["reclaims"] = {{"notices", r.reclaims},
                     {"jobs_stopped", r.reclaim_stops},
                     {"checkpointed", r.reclaim_checkpointed},
                     {"lost_gpu_hours", static_cast<double>(r.reclaim_lost_gpu_seconds) / 3600.0}};
  out["fairshare_weight"] = r.fairshare_weight;
  out["policy"] = r.policy;
  out["cluster"] = r.cluster_summary;
  out["total_gpus"] = r.total_gpus;
  out["time_limit_factor"] = r.time_limit_factor;
  if (!r.time_limit.is_infinite()) out["time_limit_s"] = r.time_limit.millis() / 1000;
  out["seed"] = r.seed;
  out["cycles"] = r.cycles;
  out["events"] = r.events;
  out["invariant_audits"] = r.audits;
  out["reservations_made"] = r.reservations_made;
  // Jobs promised a start by a reservation, and how many started later.
  int64_t promised = 0, slipped = 0, slip_s = 0;
  for (const JobResult& j : r.jobs) {
    if (j.promised_start_s < 0 || j.start_s < 0) continue;
    ++promised;
    if (j.start_s > j.promised_start_s) {
      ++slipped;
      slip_s += j.start_s - j.promised_start_s;
    }
  }
  out["reservations"] = {
      {"jobs_promised", promised},
      {"started_late", slipped},
      {"mean_slip_s", slipped > 0 ? static_cast<double>(slip_s) / static_cast<double>(slipped) : 0.0}};
  out["backfill_by"] = r.backfill_by;
  out["backfilled"] = r.backfilled;
  out["max_pending"] = r.max_pending;
  return out;
}

void WriteTextReport(const SimResult& r, std::ostream& os) {
  const nlohmann::json j = ReportJson(r);
  os << fmt::format(
      "policy {}  |  cluster: {} ({} GPU)  |  time limit = {}  |  backfill by {}\n", r.policy, r.cluster_summary,
      r.total_gpus,
      r.time_limit.is_infinite() ? fmt::format("{} x duration", r.time_limit_factor) : r.time_limit.ToString(),
      r.backfill_by);
  os << fmt::format("jobs {}: completed {}, timeout {}, unschedulable {}, skipped {} ({} censored)\n",
                    j["jobs"].get<int64_t>(), j["completed"].get<int64_t>(), j["timeout"].get<int64_t>(),
                    j["unschedulable"].get<int64_t>(), j["skipped"].get<int64_t>(), j["censored"].get<int64_t>());
  os << fmt::format("JCT   mean {}  p50 {}  p95 {}  p99 {}\n", Hours(j["mean_jct_s"]), Hours(j["p50_jct_s"]),
                    Hours(j["p95_jct_s"]), Hours(j["p99_jct_s"]));
  os << fmt::format("wait  mean {}  p50 {}  p95 {}  p99 {}  max {}\n", Hours(j["mean_wait_s"]), Hours(j["p50_wait_s"]),
                    Hours(j["p95_wait_s"]), Hours(j["p99_wait_s"]), Hours(j["max_wait_s"]));
  if (r.preemption || r.nodes_lost > 0 || r.reclaims > 0) {
    os << fmt::format("queued mean {}  p99 {}  max {} (every stretch pending, also after a stop)\n",
                      Hours(j["mean_queued_s"]), Hours(j["p99_queued_s"]), Hours(j["max_queued_s"]));
  }
  os << fmt::format(
      "makespan {}  utilization {:.1f}% ({:.1f}% over the {:.0f} h with jobs waiting)  cycles {}  "
      "max pending {}  backfilled {}\n",
      Hours(j["makespan_s"]), 100.0 * j["utilization"].get<double>(),
      100.0 * j["utilization_while_waiting"].get<double>(), j["waiting_hours"].get<double>(), r.cycles, r.max_pending,
      r.backfilled);
  if (j["reservations"]["jobs_promised"].get<int64_t>() > 0) {
    os << fmt::format("reservations: {} jobs promised a start, {} started after it (by {} on average)\n",
                      j["reservations"]["jobs_promised"].get<int64_t>(),
                      j["reservations"]["started_late"].get<int64_t>(), Hours(j["reservations"]["mean_slip_s"]));
  }
  if (r.preemption) {
    os << fmt::format("preemptions {}  lost {:.1f} GPU-hours (checkpoint every {})\n", r.preemptions,
                      j["lost_gpu_hours"].get<double>(), Duration::Seconds(r.checkpoint_interval_s).ToString());
  }
  if (r.reclaims > 0) {
    os << fmt::format(
        "reclaims {}: {} jobs stopped, {} checkpointed before the deadline, lost {:.1f} GPU-hours; "
        "{} jobs lost more than one checkpoint interval in all\n",
        r.reclaims, r.reclaim_stops, r.reclaim_checkpointed, j["reclaims"]["lost_gpu_hours"].get<double>(),
        j["jobs_lost_over_checkpoint_interval"].get<int64_t>());
  }
  if (j["fairness"]["contended_hours"].get<double>() > 0) {
    os << fmt::format("fairness: Jain {:.3f} over {:.1f} h with two or more tenants waiting\n",
                      j["fairness"]["jain"].get<double>(), j["fairness"]["contended_hours"].get<double>());
  }
  if (j["per_class"].size() > 1) {
    os << "per class:\n";
    for (auto& [name, s] : j["per_class"].items()) {
      os << fmt::format("  {:<12} jobs {:>6}  wait mean {}  p99 {}  max {}\n", name, s["jobs"].get<int64_t>(),
                        Hours(s["mean_wait_s"]), Hours(s["p99_wait_s"]), Hours(s["max_wait_s"]));
    }
  }
  int shown = 0;
  for (const JobResult& job : r.jobs) {
    if (job.outcome != Outcome::kUnschedulable) continue;
    if (shown++ == 0) os << "unschedulable jobs:\n";
    if (shown > 10) {
      os << "  ... (" << j["unschedulable"].get<int64_t>() - 10 << " more; see --jobs-csv)\n";
      break;
    }
    os << "  " << job.trace_id << ": " << job.note << "\n";
  }
}

void WriteJobsCsv(const SimResult& r, std::ostream& os) {
  os << "id,submit,start,end,gpus,nodes,wait,outcome,tenant,class\n";
  for (const JobResult& j : r.jobs) {
    const std::string wait = j.start_s >= 0 ? std::to_string(j.start_s - j.submit_s) : "";
    const std::string start = j.start_s >= 0 ? std::to_string(j.start_s) : "";
    const std::string end = j.end_s >= 0 ? std::to_string(j.end_s) : "";
    os << j.trace_id << ',' << j.submit_s << ',' << start << ',' << end << ',' << j.gpus << ',' << j.nodes << ','
       << wait << ',' << OutcomeName(j.outcome) << ',' << j.tenant << ',' << j.priority_class << '\n';
  }
}

}  // namespace muster::sim
