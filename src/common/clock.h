// Clock: the only source of "now" for Muster's logic.
//
// Components take a Clock& in their constructor. Production code uses
// SystemClock; tests and the simulator use SimClock, which moves only when
// told to. Nothing in src/core or src/scheduler may call a clock at all: they
// receive the current time inside their input snapshot.
//
// Thread-safety: SystemClock is safe from any thread. SimClock is owned by one
// thread (the simulator's or the test's).
#pragma once

#include "common/time.h"

namespace muster {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
};

// Wall clock, milliseconds since the Unix epoch.
class SystemClock final : public Clock {
 public:
  Time Now() const override;
};

// A clock that stands still until Advance() or Set() moves it.
class SimClock final : public Clock {
 public:
  explicit SimClock(Time start = Time::Zero()) : now_(start) {}
  Time Now() const override { return now_; }
  void Advance(Duration d) { now_ = now_ + d; }
  // Moves to `t`; time never goes backwards, so an earlier `t` is ignored.
  void Set(Time t) {
    if (t > now_) now_ = t;
  }

 private:
  Time now_;
};

}  // namespace muster
