#include "server/preemption_record.h"

#include <algorithm>

namespace muster::server {

int64_t PreemptionRecord::HeldGpus() const {
  int64_t gpus = 0;
  for (const auto& [job, hold] : holds_) gpus += hold.gpus;
  return gpus;
}

std::vector<PreemptionRecord::Lapsed> PreemptionRecord::Sweep(Time now,
                                                              const std::function<Preemptor(int64_t)>& preemptor) {
  std::vector<Lapsed> lapsed;
  for (auto it = holds_.begin(); it != holds_.end();) {
    const Preemptor was = preemptor(it->first);
    if (was == Preemptor::kStarted || (was == Preemptor::kWaiting && now < it->second.deadline)) {
      it = was == Preemptor::kStarted ? holds_.erase(it) : std::next(it);
      continue;
    }
    lapsed.push_back({it->first, was, std::move(it->second.victims)});
    it = holds_.erase(it);
  }
  // The map's order is not the loop's: events come out by preemptor id.
  std::sort(lapsed.begin(), lapsed.end(), [](const Lapsed& a, const Lapsed& b) { return a.preemptor < b.preemptor; });
  return lapsed;
}

bool PreemptionRecord::EndsImmunity(int64_t job, Time started) {
  auto it = immune_since_.find(job);
  if (it == immune_since_.end() || started <= it->second) return false;
  immune_since_.erase(it);
  return true;
}

std::vector<proto::GraceCut> PreemptionRecord::CutsOn(
    const std::function<std::optional<bool>(int64_t, int32_t)>& on_node) {
  std::vector<proto::GraceCut> out;
  for (auto it = cuts_.begin(); it != cuts_.end();) {
    const std::optional<bool> here = on_node(it->first, it->second.attempt);
    if (!here) {
      it = cuts_.erase(it);
      continue;
    }
    if (*here) out.push_back({it->first, it->second.attempt, it->second.grace.millis()});
    ++it;
  }
  std::sort(out.begin(), out.end(), [](const proto::GraceCut& a, const proto::GraceCut& b) { return a.job < b.job; });
  return out;
}

}  // namespace muster::server
