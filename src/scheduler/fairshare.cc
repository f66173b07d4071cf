#include "scheduler/fairshare.h"

#include <algorithm>
#include <cmath>

namespace muster::scheduler {

Status FairShareOptions::Validate() const {
  if (half_life <= Duration::Zero()) return InvalidArgument("must be positive", "fairShare.halfLife");
  if (weight < 0) return InvalidArgument("must be >= 0", "fairShare.weight");
  for (const auto& [name, share] : shares) {
    if (!(share > 0) || share > 1e6)
      return InvalidArgument("must be a number above 0 and at most 1e6", "fairShare.shares." + name);
  }
  return Status::Ok();
}

void FairShare::Grow(int32_t queue) {
  if (queue >= static_cast<int32_t>(usage_.size())) {
    usage_.resize(queue + 1, 0.0);
    share_.resize(queue + 1, 1.0);
  }
}

void FairShare::SetShare(int32_t queue, double share) {
  Grow(queue);
  share_[queue] = share;
}

void FairShare::NameQueue(int32_t queue, const std::string& name) {
  auto it = options_.shares.find(name);
  SetShare(queue, it == options_.shares.end() ? 1.0 : it->second);
  named_ = std::max(named_, queue + 1);
}

void FairShare::Advance(Time now, const std::vector<std::pair<int32_t, int64_t>>& running) {
  if (!started_) {
    started_ = true;
    last_ = now;
    return;
  }
  if (now <= last_) return;
  const double dt = static_cast<double>((now - last_).millis()) / 1000.0;
  const double h = static_cast<double>(options_.half_life.millis()) / 1000.0;
  const double decay = std::exp2(-dt / h);
  for (double& u : usage_) u *= decay;
  // Charge running work as the exact integral of a decaying constant rate.
  const double charge_per_gpu = h / std::log(2.0) * (1.0 - decay);
  for (const auto& [queue, gpus] : running) {
    if (queue < 0) continue;
    Grow(queue);
    usage_[queue] += static_cast<double>(gpus) * charge_per_gpu;
  }
  last_ = now;
}

void FairShare::Restore(Time at, const std::vector<std::pair<int32_t, double>>& usage) {
  started_ = true;
  last_ = at;
  for (const auto& [queue, u] : usage) {
    if (queue < 0 || !(u >= 0)) continue;
    Grow(queue);
    usage_[queue] = u;
  }
}

std::vector<double> FairShare::Shares(int32_t num_queues) const {
  std::vector<double> out(num_queues, 1.0);
  for (int32_t q = 0; q < num_queues && q < static_cast<int32_t>(share_.size()); ++q) out[q] = share_[q];
  return out;
}

std::vector<int64_t> FairShare::Points(int32_t num_queues, std::span<const core::QueueQuota> quotas,
                                       int64_t capacity) const {
  std::vector<int64_t> out(num_queues, options_.weight);
  if (!enabled()) return std::vector<int64_t>(num_queues, 0);
  std::vector<double> target(num_queues, 1.0);
  double total_usage = 0, total_share = 0;
  for (int32_t q = 0; q < num_queues; ++q) {
    total_usage += Usage(q);
    target[q] = q < static_cast<int32_t>(share_.size()) ? share_[q] : 1.0;
    total_share += target[q];
  }
  if (total_usage <= 0 || total_share <= 0) return out;
  int64_t guaranteed = 0;
  bool nested = false;
  for (const core::QueueQuota& quota : quotas) {
    guaranteed += quota.guarantee_total;
    nested = nested || quota.parent >= 0;
  }
  if (guaranteed > 0 && !nested && capacity > 0) {
    const double rest = static_cast<double>(std::max<int64_t>(0, capacity - guaranteed)) / total_share;
    for (int32_t q = 0; q < num_queues; ++q) {
      target[q] = target[q] * rest +
                  (q < static_cast<int32_t>(quotas.size()) ? static_cast<double>(quotas[q].guarantee_total) : 0.0);
    }
    total_share = 0;
    for (double t : target) total_share += t;
    if (total_share <= 0) return out;
  }
  for (int32_t q = 0; q < num_queues; ++q) {
    const double share = target[q] / total_share;
    if (share <= 0) {
      out[q] = 0;
      continue;
    }
    const double used = Usage(q) / total_usage;
    out[q] = static_cast<int64_t>(std::llround(static_cast<double>(options_.weight) * std::exp2(-used / share)));
  }
  return out;
}

double FairShare::Usage(int32_t queue) const {
  return queue < static_cast<int32_t>(usage_.size()) ? usage_[queue] : 0.0;
}

}  // namespace muster::scheduler
