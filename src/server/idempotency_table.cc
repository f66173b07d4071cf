#include "server/idempotency_table.h"

namespace muster::server {

namespace {

constexpr int64_t kWindowMs = 24LL * 3600 * 1000;

}  // namespace

IdempotencyTable::Found IdempotencyTable::Find(const std::string& user, const std::string& key,
                                               const std::string& fingerprint, const store::StoreWriter& writer) const {
  auto it = keys_.find({user, key});
  if (it == keys_.end()) return {};
  if (it->second.fingerprint != fingerprint) return {Outcome::kConflict, it->second.job};
  if (!Durable(it->second, writer)) return {Outcome::kInFlight, it->second.job};
  return {Outcome::kReplay, it->second.job};
}

void IdempotencyTable::Add(const std::string& user, const std::string& key, const std::string& fingerprint, int64_t job,
                           uint64_t ticket, Time now) {
  keys_[{user, key}] = {fingerprint, job, ticket, now.millis()};
}

void IdempotencyTable::Restore(const std::vector<store::IdempotencyRow>& rows) {
  for (const store::IdempotencyRow& k : rows) keys_[{k.principal, k.key}] = {k.fingerprint, k.job_id, 0, k.created_ms};
}

void IdempotencyTable::Prune(Time now, const store::StoreWriter& writer) {
  const int64_t cutoff = now.millis() - kWindowMs;
  for (auto it = keys_.begin(); it != keys_.end();) {
    if (Durable(it->second, writer) && it->second.created_ms < cutoff) {
      it = keys_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace muster::server
