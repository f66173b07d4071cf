#include "server/pending_reasons.h"

namespace muster::server {

std::vector<const core::PendingReason*> PendingReasons::Update(const std::vector<core::PendingReason>& reasons) {
  std::vector<const core::PendingReason*> changed;
  const uint64_t round = ++round_;
  for (const core::PendingReason& r : reasons) {
    auto [it, fresh] = by_job_.try_emplace(r.job, Waiting{r, round});
    const bool differs = fresh || it->second.reason.code != r.code;
    it->second = {r, round};
    if (differs) changed.push_back(&r);
  }
  if (by_job_.size() != reasons.size()) {
    std::erase_if(by_job_, [round](const auto& e) { return e.second.round != round; });
  }
  return changed;
}

const core::PendingReason* PendingReasons::Find(int64_t job) const {
  auto it = by_job_.find(job);
  return it == by_job_.end() ? nullptr : &it->second.reason;
}

}  // namespace muster::server
