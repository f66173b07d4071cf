#include "agent/agent_metrics.h"

#include "common/prometheus_text.h"

namespace muster::agent {
namespace {

using prom::Family;
using prom::Gauge;
using prometheus::MetricFamily;

}  // namespace

std::string AgentMetricsText(const AgentSnapshot& s) {
  MetricFamily utilization = Family("muster_agent_gpu_utilization_ratio",
                                    "A GPU's utilization over the driver's last sample period (0 to 1).");
  MetricFamily used = Family("muster_agent_gpu_memory_used_bytes", "A GPU's memory in use.");
  MetricFamily total = Family("muster_agent_gpu_memory_bytes", "A GPU's memory.");
  MetricFamily healthy =
      Family("muster_agent_gpu_healthy", "1 when the GPU is healthy, 0 after a fatal XID or ECC event.");
  for (const gpu::GpuDevice& g : s.gpus) {
    prom::Labels labels = {{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}};
    // The job using the GPU, so that a job's utilization is a query away.
    if (auto user = s.gpu_users.find(g.index); user != s.gpu_users.end()) {
      labels.push_back({"job", std::to_string(user->second.first)});
      labels.push_back({"replica", std::to_string(user->second.second)});
    }
    total.metric.push_back(Gauge(static_cast<double>(g.memory_bytes), labels));
    healthy.metric.push_back(Gauge(g.healthy ? 1 : 0, labels));
    for (const gpu::GpuSample& sample : s.samples) {
      if (sample.index != g.index) continue;
      if (sample.utilization >= 0) utilization.metric.push_back(Gauge(sample.utilization, labels));
      if (sample.memory_used_bytes >= 0)
        used.metric.push_back(Gauge(static_cast<double>(sample.memory_used_bytes), labels));
    }
  }
  MetricFamily tasks = Family("muster_agent_tasks_running", "Tasks (job replicas) running on this node.");
  tasks.metric.push_back(Gauge(static_cast<double>(s.tasks_running)));
  MetricFamily last_sync = Family("muster_agent_last_sync_timestamp_seconds",
                                  "When this agent last synced with the server (Unix time; 0: not yet).");
  last_sync.metric.push_back(Gauge(s.last_sync_unix_seconds));
  MetricFamily failed =
      Family("muster_agent_sync_failures_total", "Syncs with the server that failed (no answer, or a refusal).",
             prometheus::MetricType::Counter);
  failed.metric.push_back(prom::Counter(static_cast<double>(s.syncs_failed)));

  std::vector<MetricFamily> families = {std::move(utilization), std::move(used),  std::move(total),
                                        std::move(healthy),     std::move(tasks), std::move(last_sync),
                                        std::move(failed)};
  return prom::Text(families);
}

}  // namespace muster::agent
