// Leadership: whether this server leads, over the store's LeaderLease.
//
// A server starts as a standby: Acquire() polls the lease until it is free
// and takes it (a new epoch). From then on a thread renews it; the server
// restores its state (kTakingOver) and then leads (kLeader). Leads() is
// true only while the lease is held by this server's own reckoning: the
// time of the last renewal's request plus the lease, less a margin, on the
// monotonic clock. The database's expiry comes later than that, so this
// server stops acting as leader before any other may start.
//
// When a renewal finds another epoch (fenced), or none succeeds before the
// lease runs out (the database unreachable, the process paused), leadership
// is lost: Leads() turns false at once and `lost` is called, once. The
// server then exits (server.cc): its memory is a former leader's, and a
// supervisor restarts it as a standby, the way Kubernetes components do.
//
// Without a lease (a SQLite store: its file lock admits one server) the
// server leads at once and for ever.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/time.h"
#include "store/leader_lease.h"

namespace muster::server {

// Exit code of a server that lost its leadership (EX_TEMPFAIL): restarted,
// it comes back as a standby.
inline constexpr int kExitLostLeadership = 75;

class Leadership {
 public:
  enum class Role { kStandby, kTakingOver, kLeader, kSteppedDown };
  static const char* RoleName(Role r);

  struct Options {
    std::string id;       // this server, in the lease (SetIdentity may set it later)
    std::string address;  // where clients reach it (idem)
    Duration lease = Duration::Seconds(6);
    Duration renew_every = Duration::Seconds(1);
    Duration poll_every = Duration::Millis(500);
  };

  // `lease` may be null (no election); it must outlive this object.
  Leadership(store::LeaderLease* lease, Options options);
  ~Leadership();
  Leadership(const Leadership&) = delete;
  Leadership& operator=(const Leadership&) = delete;

  // Blocks until this server holds the lease, then renews it on a thread
  // and returns its epoch (kTakingOver); nullopt if Stop() came first.
  // `lost(why)` is called once, from the renewing thread, if it is lost.
  // `standby` runs after each look that found another leading (a standby's
  // work: following the store). Without a lease: returns 0 at once.
  std::optional<int64_t> Acquire(std::function<void(const std::string& why)> lost,
                                 const std::function<void()>& standby = nullptr);
  // The state is restored: leads from now (kLeader).
  void Lead();
  // Who this server is and where clients reach it, once known (before Acquire).
  void SetIdentity(std::string id, std::string address);
  // Makes a waiting Acquire() return nullopt, now and later.
  void CancelAcquire();

  // kSteppedDown, too, for a leader past its own deadline.
  Role role() const;
  // role() is kLeader: leading now, by this server's reckoning (always,
  // without a lease, once Lead() was called).
  bool Leads() const;
  int64_t epoch() const { return epoch_.load(); }
  // The leader's address as last seen in the lease (empty if none is known).
  std::string leader_address() const;
  bool elected() const { return lease_ != nullptr; }

  // Stops waiting and renewing; gives the lease up when held, so that a
  // standby takes over at once (call after the last write).
  void Stop();

 private:
  using Steady = std::chrono::steady_clock;
  void Renew();
  void Lose(const std::string& why);

  store::LeaderLease* const lease_;
  const Options options_;
  std::atomic<Role> role_;
  std::atomic<int64_t> epoch_{0};
  std::atomic<Steady::rep> deadline_{0};  // Steady ticks: leads until then
  mutable Mutex mu_;
  CondVar cv_;  // Stop() was called
  bool stop_ GUARDED_BY(mu_) = false;
  bool cancelled_ GUARDED_BY(mu_) = false;
  std::string id_, address_ GUARDED_BY(mu_);
  std::string leader_address_ GUARDED_BY(mu_);
  std::function<void(const std::string&)> lost_;
  std::thread renewer_;
};

}  // namespace muster::server
