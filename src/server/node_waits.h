// NodeWaits: agents' long-polling syncs waiting for their node's desired
// state to change.
//
// An agent whose sync brought nothing new waits here, holding no thread,
// until the control loop publishes a new version of its node's desired
// state (a bind, a stop), its wait times out, or the server stops. Waits
// are per node: a bind wakes only its node's agent, not every agent.
//
// Spread: agents do not jitter their polls, so a fleet that connected
// together (a server restart, a rack powered on) would have every wait end
// in the same millisecond, every syncWait, and each sync then queue behind
// thousands (the fleet benchmark: p99 644 ms at 12,500 agents). Each wait
// is therefore shortened by a spread that depends on the node and on how
// many waits it has had: the first by up to 90% of max_wait, later ones by
// up to 25%, so after one round the fleet's syncs arrive evenly, and stay
// so. Deterministic (a hash, no random source).
//
// Versions are the lifecycle's desired-state generations
// (lifecycle::JobLifecycle::Generation), published by the loop thread; any
// thread may wait.
//
// Locking: mu_ is a leaf: nothing else is locked while it is held, and no
// callback runs under it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"

namespace muster::server {

class NodeWaits {
 public:
  explicit NodeWaits(const Clock& clock) : clock_(clock) {}

  // The desired state of `node` is now `version`: ends its waits.
  void Publish(const std::string& node, int64_t version);
  // Whether an agent's sync for `node` is waiting now (it is alive).
  bool HasWaiter(const std::string& node) const;
  // How many syncs wait now, over every node (a gauge of /metrics).
  int64_t Waiting() const;
  // Calls `then` once when the version of `node` is not `version` (a known
  // version: 0 means none published yet), `max_wait` has passed, or Close()
  // was called; at once, on the caller's thread, when one of these already
  // holds, and then returns false. `then` must not block.
  bool WhenChanges(const std::string& node, int64_t version, Duration max_wait, std::function<void()> then);
  // Ends the waits whose time is up.
  void EndExpired(Time now);
  // Ends every wait, now and later (the server is stopping).
  void Close();
  // Until the soonest wait's deadline (Infinite: none).
  Duration UntilNextDeadline(Time now) const;

 private:
  struct Waiter {
    uint64_t id;
    int64_t deadline_ms;
    std::string node;
    std::function<void()> then;
  };
  struct Slot {
    int64_t version = 0;
    std::vector<Waiter> waiters;
    uint64_t waits = 0;  // waits so far: the spread of the next
  };
  // `max_wait` shortened by the spread of the node's `n`th wait (above).
  static Duration Spread(const std::string& node, uint64_t n, Duration max_wait);
  void EndWhere(Time now, bool all);

  const Clock& clock_;
  mutable Mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Slot>> slots_ GUARDED_BY(mu_);    // never erased
  std::set<std::tuple<int64_t, uint64_t, std::string>> deadlines_ GUARDED_BY(mu_);  // (deadline, id, node)
  uint64_t next_id_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace muster::server
