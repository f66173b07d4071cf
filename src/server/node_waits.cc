#include "server/node_waits.h"

#include <algorithm>

namespace muster::server {

void NodeWaits::Publish(const std::string& node, int64_t version) {
  std::vector<Waiter> ready;
  {
    MutexLock lock(mu_);
    std::unique_ptr<Slot>& s = slots_[node];
    if (!s) s = std::make_unique<Slot>();
    s->version = version;
    ready.swap(s->waiters);
    for (const Waiter& w : ready) deadlines_.erase({w.deadline_ms, w.id, w.node});
  }
  for (Waiter& w : ready) w.then();
}

bool NodeWaits::HasWaiter(const std::string& node) const {
  MutexLock lock(mu_);
  auto it = slots_.find(node);
  return it != slots_.end() && !it->second->waiters.empty();
}

int64_t NodeWaits::Waiting() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(deadlines_.size());
}

bool NodeWaits::WhenChanges(const std::string& node, int64_t version, Duration max_wait, std::function<void()> then) {
  {
    MutexLock lock(mu_);
    std::unique_ptr<Slot>& s = slots_[node];
    if (!s) s = std::make_unique<Slot>();
    if (!(s->version != 0 && s->version != version) && !closed_) {
      const int64_t deadline = (clock_.Now() + Spread(node, s->waits++, max_wait)).millis();
      const uint64_t id = ++next_id_;
      s->waiters.push_back({id, deadline, node, std::move(then)});
      deadlines_.emplace(deadline, id, node);
      return true;
    }
  }
  then();
  return false;
}

Duration NodeWaits::Spread(const std::string& node, uint64_t n, Duration max_wait) {
  // FNV-1a over the name and the wait's number.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : node) h = (h ^ c) * 1099511628211ull;
  for (int i = 0; i < 8; ++i) h = (h ^ ((n >> (8 * i)) & 0xff)) * 1099511628211ull;
  const int64_t permille = n == 0 ? static_cast<int64_t>(h % 900) : static_cast<int64_t>(h % 250);
  return Duration::Millis(max_wait.millis() - max_wait.millis() * permille / 1000);
}

void NodeWaits::EndExpired(Time now) { EndWhere(now, false); }

void NodeWaits::Close() {
  {
    MutexLock lock(mu_);
    closed_ = true;
  }
  EndWhere(clock_.Now(), true);
}

void NodeWaits::EndWhere(Time now, bool all) {
  std::vector<Waiter> ready;
  {
    MutexLock lock(mu_);
    while (!deadlines_.empty() && (all || std::get<0>(*deadlines_.begin()) <= now.millis())) {
      const auto [deadline, id, node] = *deadlines_.begin();
      deadlines_.erase(deadlines_.begin());
      std::vector<Waiter>& waiters = slots_.at(node)->waiters;
      auto it = std::find_if(waiters.begin(), waiters.end(), [id = id](const Waiter& w) { return w.id == id; });
      if (it == waiters.end()) continue;
      ready.push_back(std::move(*it));
      waiters.erase(it);
    }
  }
  for (Waiter& w : ready) w.then();
}

Duration NodeWaits::UntilNextDeadline(Time now) const {
  MutexLock lock(mu_);
  if (deadlines_.empty()) return Duration::Infinite();
  return std::max(Duration::Zero(), Time::FromMillis(std::get<0>(*deadlines_.begin())) - now);
}

}  // namespace muster::server
