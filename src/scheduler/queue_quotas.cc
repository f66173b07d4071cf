#include "scheduler/queue_quotas.h"

#include <algorithm>

namespace muster::scheduler {

QueueQuotas::QueueQuotas(const core::ClusterSnapshot& snap) : snap_(snap) {
  if (snap.queue_usage == nullptr) return;
  const auto& own = *snap.queue_usage;
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

}  // namespace muster::scheduler
