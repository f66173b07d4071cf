// The agent's /metrics (Prometheus text format 0.0.4, written with
// prometheus-cpp's serializer): each GPU of its node, with its utilization
// and memory in use from NVML's samples (or fake GPUs' plausible ones) and
// the job and replica using it; its tasks; its syncs with the server.
//
// Served on `muster agent --metrics-listen HOST:PORT` (plain HTTP, no
// credential, as node exporters are: bind it to loopback or the monitoring
// network).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu.h"

namespace muster::agent {

struct AgentSnapshot {
  std::vector<gpu::GpuDevice> gpus;
  std::vector<gpu::GpuSample> samples;                       // by GPU index
  std::map<int32_t, std::pair<int64_t, int32_t>> gpu_users;  // GPU index -> (job, replica) running on it
  int64_t tasks_running = 0;
  double last_sync_unix_seconds = 0;  // the last successful sync (0: none yet)
  int64_t syncs_failed = 0;           // since the agent started
};

std::string AgentMetricsText(const AgentSnapshot& s);

}  // namespace muster::agent
