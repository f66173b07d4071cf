#include "scheduler/queue_quotas.h"

#include <algorithm>

namespace muster::scheduler {
namespace {

// (queue, GPUs) pairs summed per queue.
std::vector<std::pair<int32_t, int64_t>> SumByQueue(const std::vector<std::pair<int32_t, int64_t>>& taken) {
  std::vector<std::pair<int32_t, int64_t>> sums;
  for (const auto& [q, gpus] : taken) {
    auto it = std::find_if(sums.begin(), sums.end(), [q = q](const auto& s) { return s.first == q; });
    if (it == sums.end()) {
      sums.emplace_back(q, gpus);
    } else {
      it->second += gpus;
    }
  }
  return sums;
}

}  // namespace

QueueQuotas::QueueQuotas(const core::ClusterSnapshot& snap) : snap_(snap) {
  has_children_.assign(snap.quotas.size(), false);
  for (const core::QueueQuota& quota : snap.quotas) {
    if (quota.parent >= 0 && static_cast<size_t>(quota.parent) < has_children_.size())
      has_children_[quota.parent] = true;
  }
  if (snap.queue_usage == nullptr) return;
  const auto& own = *snap.queue_usage;
  // For shares: jobs being stopped count no more, and jobs holding what
  // their victims free count already (else one reclaim is repeated each
  // cycle until its victims are gone).
  committed_.assign(own.size(), 0);
  for (size_t q = 0; q < own.size(); ++q) {
    for (int64_t u : own[q]) committed_[q] += u;
  }
  if (snap.running != nullptr) {
    for (const auto& [id, r] : *snap.running) {
      if (!r.stopping || r.queue < 0 || static_cast<size_t>(r.queue) >= committed_.size()) continue;
      for (const core::Allocation& a : r.allocations) committed_[r.queue] -= a.resources.gpus;
    }
  }
  for (const core::PendingJob& j : snap.pending) {
    if (j.queue < 0 || static_cast<size_t>(j.queue) >= committed_.size()) continue;
    for (const core::Allocation& a : j.nominated) committed_[j.queue] += a.resources.gpus;
    if (!j.nominated.empty() || j.held || j.begin_time > snap.now || j.total_gpus() <= 0 || !SharesFairly(j.queue))
      continue;
    auto it = std::find_if(waiting_.begin(), waiting_.end(),
                           [&](const Waiting& w) { return w.queue == j.queue && w.type == j.gpu_type; });
    if (it == waiting_.end()) {
      waiting_.push_back({j.queue, j.gpu_type, j.total_gpus()});
    } else {
      it->gpus = std::min(it->gpus, j.total_gpus());
    }
  }
  usage_ = own;
  for (size_t q = 0; q < own.size(); ++q) {
    for (int32_t a = Parent(static_cast<int32_t>(q)), d = 0; a >= 0 && d < kMaxDepth; a = Parent(a), ++d) {
      if (static_cast<size_t>(a) >= usage_.size()) break;
      if (usage_[a].size() < own[q].size()) usage_[a].resize(own[q].size(), 0);
      for (size_t t = 0; t < own[q].size(); ++t) usage_[a][t] += own[q][t];
    }
  }
}

int32_t QueueQuotas::Parent(int32_t q) const {
  const core::QueueQuota* quota = snap_.QuotaOf(q);
  return quota ? quota->parent : -1;
}

int64_t QueueQuotas::Used(int32_t q, int32_t t) const {
  if (q < 0 || static_cast<size_t>(q) >= usage_.size()) return 0;
  if (t >= 0) return static_cast<size_t>(t) < usage_[q].size() ? usage_[q][t] : 0;
  int64_t sum = 0;
  for (int64_t u : usage_[q]) sum += u;
  return sum;
}

void QueueQuotas::Add(int32_t queue, int32_t type, int64_t gpus) {
  if (gpus == 0 || type < 0) return;
  for (int32_t x = queue, d = 0; x >= 0 && static_cast<size_t>(x) < usage_.size() && d <= kMaxDepth;
       x = Parent(x), ++d) {
    if (static_cast<size_t>(type) >= usage_[x].size()) usage_[x].resize(type + 1, 0);
    usage_[x][type] += gpus;
  }
  if (queue >= 0 && static_cast<size_t>(queue) < committed_.size()) committed_[queue] += gpus;
}

bool QueueQuotas::Blocks(const core::PendingJob& j, int32_t type, core::PendingReason& r) const {
  const int64_t gpus = j.total_gpus();
  if (gpus == 0) return false;
  for (int32_t x = j.queue, level = 0; x >= 0 && level <= kMaxDepth; x = Parent(x), ++level) {
    const core::QueueQuota* quota = snap_.QuotaOf(x);
    if (quota == nullptr) return false;
    auto over = [&](int64_t used, int64_t limit) {
      if (limit == core::kNoLimit || used + gpus <= limit) return false;
      r.queue_used = used;
      r.queue_limit = limit;
      r.quota_level = level;
      return true;
    };
    if ((type >= 0 && over(Used(x, type), quota->Limit(type))) || over(Used(x, -1), quota->limit_total)) return true;
  }
  return false;
}

bool QueueQuotas::WithinGuarantee(int32_t q, int32_t t, int64_t gpus) const {
  const core::QueueQuota* quota = snap_.QuotaOf(q);
  if (quota == nullptr) return false;
  return (t >= 0 && quota->Guarantee(t) > 0 && Used(q, t) + gpus <= quota->Guarantee(t)) ||
         (quota->guarantee_total > 0 && Used(q, -1) + gpus <= quota->guarantee_total);
}

bool QueueQuotas::HasGuarantee(int32_t q, int32_t t) const {
  const core::QueueQuota* quota = snap_.QuotaOf(q);
  return quota != nullptr && ((t >= 0 && quota->Guarantee(t) > 0) || quota->guarantee_total > 0);
}

int64_t QueueQuotas::Deficit(int32_t q, int32_t t) const {
  const core::QueueQuota* quota = snap_.QuotaOf(q);
  if (quota == nullptr) return 0;
  int64_t short_by = quota->guarantee_total - Used(q, -1);
  if (t >= 0) short_by = std::max(short_by, quota->Guarantee(t) - Used(q, t));
  return std::max<int64_t>(0, short_by);
}

bool QueueQuotas::MayReclaim(const core::PendingJob& j) const {
  const int64_t gpus = j.total_gpus();
  return gpus > 0 && WithinGuarantee(j.queue, j.gpu_type, gpus);
}

bool QueueQuotas::OverGuarantee(int32_t q, int32_t t) const {
  const core::QueueQuota* quota = snap_.QuotaOf(q);
  if (t >= 0 && Used(q, t) > (quota ? quota->Guarantee(t) : 0)) return true;
  return Used(q, -1) > (quota ? quota->guarantee_total : 0);
}

std::vector<int32_t> QueueQuotas::Branch(int32_t q, int32_t other) const {
  std::vector<int32_t> above_other;
  for (int32_t a = other, d = 0; a >= 0 && d <= kMaxDepth; a = Parent(a), ++d) above_other.push_back(a);
  std::vector<int32_t> branch;
  for (int32_t x = q, d = 0; x >= 0 && d <= kMaxDepth; x = Parent(x), ++d) {
    if (std::find(above_other.begin(), above_other.end(), x) != above_other.end()) break;
    branch.push_back(x);
  }
  return branch;
}

bool QueueQuotas::Borrowing(int32_t q, int32_t t, int32_t from) const {
  if (Parent(q) < 0 && Parent(from) < 0) return q == from || OverGuarantee(q, t);  // no nesting: q alone
  for (int32_t x : Branch(q, from)) {
    if (!OverGuarantee(x, t)) return false;
  }
  return true;
}

bool QueueQuotas::ReclaimableFrom(const core::PendingJob& j, int32_t q) const {
  if (!Borrowing(q, j.gpu_type, j.queue)) return false;
  if (Parent(j.queue) < 0) return true;  // nothing above it to keep within a guarantee
  for (int32_t x : Branch(j.queue, q)) {
    if (x != j.queue && HasGuarantee(x, j.gpu_type) && !WithinGuarantee(x, j.gpu_type, j.total_gpus())) return false;
  }
  return true;
}

bool QueueQuotas::Flat(int32_t q) const {
  return q >= 0 && Parent(q) < 0 && !(static_cast<size_t>(q) < has_children_.size() && has_children_[q]);
}

bool QueueQuotas::SharesFairly(int32_t q) const {
  const core::QueueQuota* quota = snap_.QuotaOf(q);
  return quota != nullptr && quota->guarantee_total > 0 && Flat(q);
}

bool QueueQuotas::YieldsToFairShare(const core::PendingJob& j, int32_t t, core::PendingReason& r) const {
  const int64_t gpus = j.total_gpus();
  if (gpus <= 0 || !Flat(j.queue) || waiting_.empty()) return false;
  const double mine = ShareAfter(j.queue, gpus);
  if (mine <= 0) return false;  // within its guarantee
  for (const Waiting& w : waiting_) {
    if (w.queue == j.queue || w.gpus > gpus || (w.type != core::kAnyGpuType && t != core::kAnyGpuType && w.type != t))
      continue;
    if (ShareAfter(w.queue, w.gpus) < mine) {
      const core::QueueQuota* quota = snap_.QuotaOf(j.queue);
      r.queue_used = Used(j.queue, -1);
      r.queue_limit = quota ? quota->guarantee_total : 0;
      r.quota_level = 0;
      return true;
    }
  }
  return false;
}

void QueueQuotas::Commit(int32_t q, int64_t gpus) {
  if (q >= 0 && static_cast<size_t>(q) < committed_.size()) committed_[q] += gpus;
}

double QueueQuotas::ShareAfter(int32_t q, int64_t delta) const {
  const core::QueueQuota* quota = snap_.QuotaOf(q);
  const int64_t held = q >= 0 && static_cast<size_t>(q) < committed_.size() ? committed_[q] : 0;
  const auto beyond = static_cast<double>(held + delta - (quota ? quota->guarantee_total : 0));
  const double weight = q >= 0 && static_cast<size_t>(q) < snap_.queue_shares.size() ? snap_.queue_shares[q] : 1.0;
  return weight > 0 ? beyond / weight : beyond * 1e9;
}

bool QueueQuotas::MayReclaimForShare(const core::PendingJob& j, bool past_guarantee) const {
  const int64_t gpus = j.total_gpus();
  if (gpus <= 0 || !SharesFairly(j.queue)) return false;
  const double mine = ShareAfter(j.queue, 0);
  if (mine >= 0 && !past_guarantee) return false;
  const auto n = static_cast<int32_t>(committed_.size());
  for (int32_t q = 0; q < n; ++q) {
    if (q != j.queue && Flat(q) && ShareAfter(q, 0) > mine) return true;
  }
  return false;
}

bool QueueQuotas::ShareReclaimableFrom(const core::PendingJob& j, int32_t q) const {
  return q != j.queue && SharesFairly(j.queue) && Flat(q) && ShareAfter(q, 0) > ShareAfter(j.queue, 0);
}

bool QueueQuotas::KeepsOrder(const core::PendingJob& j, int32_t q, int64_t gpus, bool past_guarantee) const {
  const double mine = ShareAfter(j.queue, 0), after = ShareAfter(j.queue, j.total_gpus());
  const double theirs = ShareAfter(q, -gpus);
  return mine < 0 ? theirs > mine : past_guarantee && theirs >= after + (after - mine);
}

bool QueueQuotas::KeepsGuarantee(int32_t q, int64_t gpus) const {
  return !SharesFairly(q) || ShareAfter(q, -gpus) >= 0;
}

bool QueueQuotas::KeepGuarantees(const std::vector<std::pair<int32_t, int64_t>>& taken) const {
  for (const auto& [q, gpus] : SumByQueue(taken)) {
    if (!KeepsGuarantee(q, gpus)) return false;
  }
  return true;
}

bool QueueQuotas::ShareKeepsOrder(const core::PendingJob& j, const std::vector<std::pair<int32_t, int64_t>>& taken,
                                  bool past_guarantee) const {
  for (const auto& [q, gpus] : SumByQueue(taken)) {
    if (SharesWith(j.queue, q) && !KeepsOrder(j, q, gpus, past_guarantee)) return false;
  }
  return true;
}

}  // namespace muster::scheduler
