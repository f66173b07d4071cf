#include "agent/utilization_meter.h"

#include <set>

namespace muster::agent {

void UtilizationMeter::Add(const std::string& key, const std::vector<int32_t>& gpus,
                           const std::vector<gpu::GpuSample>& samples) {
  double total = 0;
  int known = 0;
  for (int32_t g : gpus) {
    for (const gpu::GpuSample& s : samples) {
      if (s.index != g || s.utilization < 0) continue;
      total += s.utilization;
      ++known;
      break;
    }
  }
  if (known == 0) return;
  Sum& sum = sums_[key];
  sum.total += total / known;
  ++sum.rounds;
}

double UtilizationMeter::Mean(const std::string& key) const {
  auto it = sums_.find(key);
  if (it == sums_.end() || it->second.rounds == 0) return -1;
  return it->second.total / static_cast<double>(it->second.rounds);
}

void UtilizationMeter::Retain(const std::vector<std::string>& keep) {
  const std::set<std::string> kept(keep.begin(), keep.end());
  for (auto it = sums_.begin(); it != sums_.end();) {
    it = kept.count(it->first) ? std::next(it) : sums_.erase(it);
  }
}

}  // namespace muster::agent
