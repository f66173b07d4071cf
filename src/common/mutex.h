// Mutex and MutexLock: std::mutex and std::unique_lock as clang's
// thread-safety analysis sees them (common/thread_annotations.h), so that
// a field's GUARDED_BY is checked at compile time.
//
// Waiting on a condition: CondVar (a std::condition_variable_any) waits
// with a MutexLock held. Write the predicate as a loop in the function
// that holds the lock, where the analysis sees it:
//
//   MutexLock lock(mu_);
//   while (!stop_ && tasks_.empty()) cv_.Wait(lock);
//
// Thread-safety: as std::mutex.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace muster {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // BasicLockable, for CondVar.
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope; Unlock and Lock let a scope give it up a while
// (a callback run outside the lock).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }
  Mutex& mutex() const { return mu_; }

 private:
  Mutex& mu_;
  bool held_ = true;
};

class CondVar {
 public:
  // Releases the lock while waiting, holds it again on return.
  void Wait(MutexLock& lock) { cv_.wait(lock.mutex()); }
  // The same, at most `timeout`; false when it ran out.
  template <typename Rep, typename Period>
  bool WaitFor(MutexLock& lock, std::chrono::duration<Rep, Period> timeout) {
    return cv_.wait_for(lock.mutex(), timeout) == std::cv_status::no_timeout;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable_any cv_;
};

}  // namespace muster
