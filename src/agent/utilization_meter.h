// UtilizationMeter: each task's mean GPU utilization over its run, from the
// node's GPU samples (NVML's, or fake GPUs' plausible ones), as Slurm's
// `seff` reports a job's efficiency. The agent samples every few seconds
// and sends each task's mean in its reports; the server keeps it with the
// attempt.
//
// Not thread-safe: the agent's main loop owns it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpu/gpu.h"

namespace muster::agent {

class UtilizationMeter {
 public:
  // One round of samples: task `key` uses the GPUs `gpus` (indices). A task
  // with no GPU, or none sampled with a known utilization, is not counted
  // this round.
  void Add(const std::string& key, const std::vector<int32_t>& gpus, const std::vector<gpu::GpuSample>& samples);
  // The task's mean over its rounds, 0..1; -1 when it has none.
  double Mean(const std::string& key) const;
  // Drops tasks not in `keep` (ended and acknowledged).
  void Retain(const std::vector<std::string>& keep);

 private:
  struct Sum {
    double total = 0;
    int64_t rounds = 0;
  };
  std::map<std::string, Sum> sums_;
};

}  // namespace muster::agent
