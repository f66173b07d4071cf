// CyclePacer: when the control loop's next scheduling cycle is due, and
// whether anything changed since the last one began.
//
// A change (a submit, a freed GPU: Changed()) asks for a cycle `delay`
// after it; with
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

  // Something a cycle would decide differently on changed (a submit, a
  // freed GPU, a node back): the next cycle comes soon. So is the first.
  void Changed() { changed_ = true; }
  // The cycle running now has seen every change so far (its snapshot is
  // taken); a change after this asks for another.
  void Seen() { changed_ = false; }
  bool changed() const { return changed_; }

  // The longest the loop may sleep before a cycle is due.
  Duration Wait() const { return changed_ ? gap_ : interval_; }
  bool Due(Time now) const {
    const Duration since = now - last_;
    return (changed_ && since >= gap_) || since >= interval_;
  }
  // A cycle began at `at`, took `took_us` microseconds and ended at `ended`.
  void Ran(Time at, int64_t took_us, Time ended) {
    last_ = at;
    last_end_ = ended;
    gap_ = std::min(std::max(delay_, Duration::Millis((took_us * 9 + 999) / 1000)), interval_);
  }
  void Reset(Time now) { last_ = now; }
  // When the last cycle ended; Zero before the first.
  Time last_end() const { return last_end_; }

 private:
  const Duration delay_, interval_;
  Duration gap_;
  Time last_;
  Time last_end_ = Time::Zero();
  bool changed_ = true;
};

}  // namespace muster::server
