#include "server/leadership.h"

#include <pthread.h>

#include <cstdio>

#include "common/log.h"
#include "store/store.h"

namespace muster::server {

const char* Leadership::RoleName(Role r) {
  switch (r) {
    case Role::kStandby:
      return "standby";
    case Role::kTakingOver:
      return "taking-over";
    case Role::kLeader:
      return "leader";
    case Role::kSteppedDown:
      return "stepped-down";
  }
  return "?";
}

Leadership::Leadership(store::LeaderLease* lease, Options options)
    : lease_(lease),
      options_(std::move(options)),
      role_(lease != nullptr ? Role::kStandby : Role::kTakingOver),
      id_(options_.id),
      address_(options_.address) {}

Leadership::~Leadership() { Stop(); }

std::optional<int64_t> Leadership::Acquire(std::function<void(const std::string&)> lost,
                                           const std::function<void()>& standby) {
  if (lease_ == nullptr) return 0;
  std::string last_error, last_holder;
  MutexLock lock(mu_);
  while (!stop_ && !cancelled_) {
    const std::string id = id_, address = address_;
    lock.Unlock();
    const Steady::time_point asked = Steady::now();
    auto taken = lease_->TryAcquire(id, address, options_.lease);
    std::optional<store::LeaseHolder> holder;
    if (taken.ok() && !taken->has_value()) {
      if (auto current = lease_->Current(); current.ok()) holder = *current;
    }
    lock.Lock();
    if (!taken.ok()) {
      if (taken.status().message() != last_error) {
        log::Warn("standby: cannot reach the lease: {}", taken.status().ToString());
        last_error = taken.status().message();
      }
    } else if (taken->has_value()) {
      epoch_ = **taken;
      leader_address_ = address;
      deadline_ = (asked + std::chrono::milliseconds(options_.lease.millis() * 9 / 10)).time_since_epoch().count();
      role_ = Role::kTakingOver;
      lost_ = std::move(lost);
      lock.Unlock();
      log::Info("leading as epoch {}", epoch_.load());
      renewer_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "lease-renewer");
        Renew();
      });
      return epoch_.load();
    } else if (holder) {
      last_error.clear();
      leader_address_ = holder->address;
      epoch_ = holder->epoch;
      const std::string who = holder->id + " (" + holder->address + ")";
      if (who != last_holder) {
        log::Info("standby; the leader is {}, epoch {}", who, holder->epoch);
        last_holder = who;
      }
      if (standby) {
        lock.Unlock();
        standby();
        lock.Lock();
      }
    }
    const Steady::time_point until = Steady::now() + std::chrono::milliseconds(options_.poll_every.millis());
    while (!stop_ && !cancelled_ && cv_.WaitFor(lock, until - Steady::now())) {
    }
  }
  return std::nullopt;
}

void Leadership::SetIdentity(std::string id, std::string address) {
  MutexLock lock(mu_);
  id_ = std::move(id);
  address_ = std::move(address);
}

void Leadership::CancelAcquire() {
  {
    MutexLock lock(mu_);
    cancelled_ = true;
  }
  cv_.NotifyAll();
}

void Leadership::Lead() {
  Role expected = Role::kTakingOver;
  role_.compare_exchange_strong(expected, Role::kLeader);
}

Leadership::Role Leadership::role() const {
  const Role r = role_.load();
  // A leader whose lease ran out by its own reckoning is no longer one,
  // even before its renewing thread has noticed.
  if (r == Role::kLeader && lease_ != nullptr && Steady::now().time_since_epoch().count() >= deadline_.load()) {
    return Role::kSteppedDown;
  }
  return r;
}

bool Leadership::Leads() const { return role() == Role::kLeader; }

std::string Leadership::leader_address() const {
  MutexLock lock(mu_);
  return leader_address_;
}

void Leadership::Lose(const std::string& why) {
  role_ = Role::kSteppedDown;
  std::function<void(const std::string&)> lost;
  {
    MutexLock lock(mu_);
    lost.swap(lost_);
  }
  if (lost) lost(why);
}

void Leadership::Renew() {
  const int64_t epoch = epoch_.load();
  // The deadline keeps a tenth of the lease in hand: the database's expiry
  // counts from when it ran the renewal, later than when it was asked.
  const auto usable = std::chrono::milliseconds(options_.lease.millis() * 9 / 10);
  std::string last_error;
  MutexLock lock(mu_);
  while (!stop_) {
    const Steady::time_point until = Steady::now() + std::chrono::milliseconds(options_.renew_every.millis());
    while (!stop_ && cv_.WaitFor(lock, until - Steady::now())) {
    }
    if (stop_) return;
    lock.Unlock();
    const Steady::time_point asked = Steady::now();
    if (asked.time_since_epoch().count() >= deadline_.load()) {
      // Paused, or the last renewals failed, past the lease: another may lead now.
      Lose("the lease of epoch " + std::to_string(epoch) + " ran out before it was renewed" +
           (last_error.empty() ? std::string(" (was this process paused?)") : ": " + last_error));
      return;
    }
    const Status s = lease_->Renew(epoch, options_.lease);
    if (s.ok()) {
      deadline_ = (asked + usable).time_since_epoch().count();
      last_error.clear();
    } else if (store::IsFenced(s)) {
      Lose(s.message());
      return;
    } else {
      if (s.message() != last_error) {
        log::Warn("cannot renew the leader lease: {}", s.ToString());
      }
      last_error = s.message();
    }
    lock.Lock();
  }
}

void Leadership::Stop() {
  {
    MutexLock lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.NotifyAll();
  if (renewer_.joinable()) renewer_.join();
  const Role r = role_.load();
  if (lease_ != nullptr && (r == Role::kLeader || r == Role::kTakingOver)) {
    role_ = Role::kSteppedDown;
    (void)lease_->Release(epoch_.load());
  }
}

}  // namespace muster::server
