// CyclePacer: when the control loop's next scheduling cycle is due.
//
// A change (a submit, a freed GPU) asks for a cycle `delay` after it; with
// no change, one runs every `interval` all the same (time passes: ages,
// begin times, reservations). A cycle that took T makes the next
// change-triggered one wait 9 x T (at least `delay`, at most `interval`):
// scheduling keeps to about a tenth of the loop's time, so a long queue
// does not hold up the API, whose every submit waits for the cycle in
// progress. T is the cycle's own cost, measured in real time by the caller.
//
// Thread-safety: none; the loop's thread owns it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/time.h"

namespace muster::server {

class CyclePacer {
 public:
  CyclePacer(Duration delay, Duration interval) : delay_(delay), interval_(interval), gap_(delay) {}

  // The longest the loop may sleep before a cycle is due.
  Duration Wait(bool changed) const { return changed ? gap_ : interval_; }
  bool Due(Time now, bool changed) const {
    const Duration since = now - last_;
    return (changed && since >= gap_) || since >= interval_;
  }
  // A cycle began at `at` and took `took_us` microseconds.
  void Ran(Time at, int64_t took_us) {
    last_ = at;
    gap_ = std::min(std::max(delay_, Duration::Millis((took_us * 9 + 999) / 1000)), interval_);
  }
  void Reset(Time now) { last_ = now; }

 private:
  const Duration delay_, interval_;
  Duration gap_;
  Time last_;
};

}  // namespace muster::server
