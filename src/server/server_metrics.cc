#include "server/server_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <vector>

#include "common/prometheus_text.h"

namespace muster::server {
namespace {

using prometheus::MetricFamily;

// Seconds, from a millisecond to a minute: loop work (cycles, submits,
// syncs, commits) is in the low milliseconds when all is well.
const prometheus::Histogram::BucketBoundaries& FastBuckets() {
  static const prometheus::Histogram::BucketBoundaries b = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                            0.25,   0.5,   1,      2.5,   5,    10,    60};
  return b;
}

// Seconds a job waits to start: from a second to a week.
const prometheus::Histogram::BucketBoundaries& WaitBuckets() {
  static const prometheus::Histogram::BucketBoundaries b = {1,    5,    15,    60,    300,   900,    1800,
                                                            3600, 7200, 14400, 28800, 86400, 172800, 604800};
  return b;
}

prometheus::Histogram* Timer(prometheus::Registry& r, const std::string& name, const std::string& help) {
  return &prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add({}, FastBuckets());
}

prometheus::Family<prometheus::Counter>* Counters(prometheus::Registry& r, const std::string& name,
                                                  const std::string& help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::Registry& r = *registry_;
  cycle_ = Timer(r, "muster_scheduler_cycle_duration_seconds", "Duration of a scheduling cycle.");
  submit_ = Timer(r, "muster_submit_duration_seconds", "From a submit's arrival to its durable answer.");
  sync_ = Timer(r, "muster_agent_sync_duration_seconds",
                "Processing of an agent's sync, to its answer (a sync that waits for work is timed without the wait).");
  commit_ = Timer(r, "muster_store_commit_duration_seconds", "One group commit to the store, durable.");
  start_ = &prometheus::BuildHistogram()
                .Name("muster_job_wait_seconds")
                .Help("How long a job waited from its submit to its first start, by queue.")
                .Register(r);
  ends_ = Counters(r, "muster_jobs_ended_total", "Jobs that ended, by queue and final state.");
  preemptions_ =
      Counters(r, "muster_preemptions_total", "Running jobs stopped to make room for others, by the victim's queue.");
  lost_gpu_seconds_ = Counters(r, "muster_preemption_lost_gpu_seconds_total",
                               "GPU time lost by preemption: GPUs times the time since each victim's newest "
                               "checkpoint, by the victim's queue.");
  stragglers_ = Counters(r, "muster_stragglers_total",
                         "Replicas found training well behind their siblings (stragglers:), by queue.");
  gpu_seconds_ = Counters(r, "muster_queue_gpu_seconds_total",
                          "GPU time held by a queue's running jobs, by GPU type and node pool.");
  cost_ = Counters(r, "muster_queue_cost_total",
                   "What a queue's GPU time cost, by node pool, at the configured prices per GPU-hour (prices:, "
                   "pools:).");
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::Charge(const std::string& queue, const std::string& gpu_type, const std::string& pool,
                           double gpu_seconds, double price_per_hour) {
  gpu_seconds_->Add({{"queue", queue}, {"gpu_type", gpu_type}, {"pool", pool}}).Increment(gpu_seconds);
  cost_->Add({{"queue", queue}, {"pool", pool}}).Increment(gpu_seconds / 3600 * price_per_hour);
}

void ServerMetrics::ObserveCycle(double seconds) { cycle_->Observe(seconds); }
void ServerMetrics::ObserveSubmit(double seconds) { submit_->Observe(seconds); }
void ServerMetrics::ObserveSync(double seconds) { sync_->Observe(seconds); }
void ServerMetrics::ObserveCommit(double seconds) { commit_->Observe(seconds); }

void ServerMetrics::ObserveStart(const std::string& queue, double waited_seconds) {
  start_->Add({{"queue", queue}}, WaitBuckets()).Observe(waited_seconds);
}

void ServerMetrics::CountEnd(const std::string& queue, const std::string& state) {
  ends_->Add({{"queue", queue}, {"state", state}}).Increment();
}

void ServerMetrics::CountPreemption(const std::string& queue, double lost_gpu_seconds) {
  preemptions_->Add({{"queue", queue}}).Increment();
  lost_gpu_seconds_->Add({{"queue", queue}}).Increment(lost_gpu_seconds);
}

void ServerMetrics::CountStraggler(const std::string& queue) { stragglers_->Add({{"queue", queue}}).Increment(); }

std::string ServerMetrics::Scrape(const Gauges& g) const {
  std::vector<MetricFamily> families = registry_->Collect();

  MetricFamily jobs = prom::Family("muster_jobs", "Jobs not ended, by queue and state.");
  for (const auto& [key, n] : g.jobs)
    jobs.metric.push_back(prom::Gauge(n, {{"queue", key.first}, {"state", key.second}}));
  families.push_back(std::move(jobs));

  MetricFamily total = prom::Family("muster_cluster_gpus", "GPUs of every node the server knows.");
  total.metric.push_back(prom::Gauge(g.gpus));
  families.push_back(std::move(total));

  // Each GPU in exactly one state; they add up to muster_cluster_gpus.
  const int64_t idle = g.gpus - g.gpus_allocated - g.gpus_held - g.gpus_reserved - g.gpus_cordoned - g.gpus_unhealthy;
  MetricFamily gpus = prom::Family("muster_gpus",
                                   "GPUs by state: allocated (to running jobs), held (for a job "
                                   "whose preemption victims are stopping), reserved (by the "
                                   "backfill plan for a blocked gang), cordoned (free on a "
                                   "node that takes no work), unhealthy, idle.");
  for (const auto& [state, n] : std::vector<std::pair<std::string, int64_t>>{{"allocated", g.gpus_allocated},
                                                                             {"held", g.gpus_held},
                                                                             {"reserved", g.gpus_reserved},
                                                                             {"cordoned", g.gpus_cordoned},
                                                                             {"unhealthy", g.gpus_unhealthy},
                                                                             {"idle", idle < 0 ? 0 : idle}}) {
    gpus.metric.push_back(prom::Gauge(n, {{"state", state}}));
  }
  families.push_back(std::move(gpus));

  MetricFamily used = prom::Family("muster_queue_gpus", "GPUs a queue's running jobs hold.");
  MetricFamily guarantee = prom::Family("muster_queue_guarantee_gpus", "A queue's guaranteed GPUs (all types).");
  MetricFamily limit = prom::Family("muster_queue_limit_gpus", "The most GPUs a queue may hold (all types).");
  for (const auto& [name, q] : g.queues) {
    used.metric.push_back(prom::Gauge(q.used, {{"queue", name}}));
    if (q.guarantee >= 0) guarantee.metric.push_back(prom::Gauge(q.guarantee, {{"queue", name}}));
    if (q.limit >= 0) limit.metric.push_back(prom::Gauge(q.limit, {{"queue", name}}));
  }
  families.push_back(std::move(used));
  families.push_back(std::move(guarantee));
  families.push_back(std::move(limit));

  MetricFamily oldest = prom::Family("muster_queue_oldest_pending_seconds",
                                     "How long the oldest pending (not held) job of a queue has waited.");
  for (const auto& [name, age] : g.oldest_pending_seconds) oldest.metric.push_back(prom::Gauge(age, {{"queue", name}}));
  families.push_back(std::move(oldest));

  MetricFamily last_cycle = prom::Family("muster_scheduler_last_cycle_timestamp_seconds",
                                         "When the last scheduling cycle ended (Unix time; 0: none yet).");
  last_cycle.metric.push_back(prom::Gauge(g.last_cycle_unix_seconds));
  families.push_back(std::move(last_cycle));

  MetricFamily nodes = prom::Family("muster_nodes", "Nodes by condition (Ready, Unreachable, Lost).");
  for (const auto& [condition, n] : g.nodes) nodes.metric.push_back(prom::Gauge(n, {{"condition", condition}}));
  families.push_back(std::move(nodes));

  MetricFamily straggling =
      prom::Family("muster_straggling_replicas", "Replicas of running jobs that train well behind their siblings now.");
  straggling.metric.push_back(prom::Gauge(static_cast<double>(g.straggling_replicas)));
  families.push_back(std::move(straggling));

  MetricFamily waiting = prom::Family("muster_agent_syncs_waiting",
                                      "Agents' syncs waiting now for news of their node (long polls held open).");
  waiting.metric.push_back(prom::Gauge(static_cast<double>(g.syncs_waiting)));
  families.push_back(std::move(waiting));

  MetricFamily leader = prom::Family("muster_leader", "1 when this server leads (serves the API), else 0.");
  leader.metric.push_back(prom::Gauge(g.leader ? 1 : 0));
  families.push_back(std::move(leader));
  MetricFamily epoch = prom::Family("muster_leader_epoch", "The epoch of this server's leadership (0: none).");
  epoch.metric.push_back(prom::Gauge(static_cast<double>(g.epoch)));
  families.push_back(std::move(epoch));

  return prom::Text(families);
}

}  // namespace muster::server
