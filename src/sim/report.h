// Report: the metrics of a simulation, as text for people and JSON for tools.
//
// Definitions (all times in seconds):
//   JCT = end - submit; wait = first start - submit (completed and timed-out
//   jobs only); queued = JCT less the time it ran, every stretch pending
//   (also after a preemption, a lost node or a reclaim); percentiles are
//   nearest-rank; makespan = last end - first submit; utilization = busy GPU-seconds / (total GPUs x makespan), the
//   time-weighted busy-GPU fraction from first submit to last end;
//   utilization_while_waiting = the same fraction over only the time when at
//   least one job waits (waiting_hours of it).
// JSON keys: jobs, completed, timeout, unschedulable, skipped, mean_jct_s,
// p50_jct_s, p95_jct_s, p99_jct_s, mean_wait_s, p50_wait_s, p95_wait_s,
// p99_wait_s, max_wait_s, mean_queued_s, p99_queued_s, max_queued_s,
// makespan_s, utilization, per_class and per_tenant
// (objects of the same wait and JCT keys plus jobs; per_tenant adds
// gpu_hours and usage_share), fairness ({jain, contended_hours, ratio}:
// Jain's index of share-normalized usage among tenants with jobs waiting,
// sim/fairness.h), preemptions and lost_gpu_hours (work victims lost,
// restart costs included), and the run's settings.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/simulator.h"

namespace muster::sim {

nlohmann::json ReportJson(const SimResult& result);
void WriteTextReport(const SimResult& result, std::ostream& out);
// One row per runnable job: id,submit,start,end,gpus,nodes,wait,outcome,tenant,class.
void WriteJobsCsv(const SimResult& result, std::ostream& out);

}  // namespace muster::sim
