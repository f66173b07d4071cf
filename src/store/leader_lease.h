// LeaderLease: who leads the servers that share one store, decided by the
// store itself. Each holder of the lease is a new epoch (1, 2, ...); the
// store refuses the writes of any other epoch (Store::FenceWrites), so a
// leader that lost the lease cannot change anything, whatever it believes.
//
// A lease is valid until it expires, measured on the store's own clock (the
// servers' clocks need not agree), or until the session that took it is
// gone (a leader that died: no wait for the expiry). It is renewed by its
// holder, taken by another only once invalid, and given up at a clean stop.
//
// Thread-safety: one thread uses a lease object at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "common/time.h"

namespace muster::store {

struct LeaseHolder {
  int64_t epoch = 0;    // 0: nobody ever held it
  std::string id;       // the holder's identity (a server's name)
  std::string address;  // where the holder serves its API, for clients sent there
  bool valid = false;   // unexpired and its session alive
  Duration remaining;   // until it expires, if valid
};

class LeaderLease {
 public:
  virtual ~LeaderLease() = default;

  // Takes the lease for `length` if nobody holds a valid one: the new epoch,
  // or nullopt when another holds it.
  virtual StatusOr<std::optional<int64_t>> TryAcquire(const std::string& id, const std::string& address,
                                                      Duration length) = 0;
  // Extends the lease of `epoch` to `length` from now; IsFenced() when
  // another epoch holds it.
  virtual Status Renew(int64_t epoch, Duration length) = 0;
  virtual StatusOr<LeaseHolder> Current() = 0;
  // Gives the lease of `epoch` up at once, so that a standby takes over
  // without waiting for it to expire. Nothing when another epoch holds it.
  virtual Status Release(int64_t epoch) = 0;
};

}  // namespace muster::store
