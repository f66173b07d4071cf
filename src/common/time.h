// Time and Duration: strong integer types at millisecond resolution.
//
// Scheduling logic never reads the wall clock; it receives Time values from a
// Clock (clock.h). Both types are plain integers underneath so arithmetic is
// exact and deterministic. Time::Max() stands for "never" (for example the
// end of a job without a time limit); arithmetic saturates at it.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace muster {

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration Millis(int64_t ms) { return Duration(ms); }
  static constexpr Duration Seconds(int64_t s) { return Duration(s * 1000); }
  static constexpr Duration Minutes(int64_t m) { return Duration(m * 60'000); }
  static constexpr Duration Hours(int64_t h) { return Duration(h * 3'600'000); }
  static constexpr Duration Zero() { return Duration(0); }
  static constexpr Duration Infinite() { return Duration(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t millis() const { return ms_; }
  constexpr int64_t seconds() const { return ms_ / 1000; }
  constexpr bool is_infinite() const { return ms_ == std::numeric_limits<int64_t>::max(); }

  constexpr auto operator<=>(const Duration&) const =
      default;  // NOLINT(modernize-use-nullptr): tidy 14's false positive
  constexpr Duration operator+(Duration o) const {
    if (is_infinite() || o.is_infinite()) return Infinite();
    int64_t sum = 0;
    if (__builtin_add_overflow(ms_, o.ms_, &sum)) return o.ms_ > 0 ? Infinite() : Duration(INT64_MIN);
    return Duration(sum);
  }
  constexpr Duration operator-(Duration o) const { return Duration(ms_ - o.ms_); }
  constexpr Duration operator*(int64_t k) const { return is_infinite() ? *this : Duration(ms_ * k); }

  // "1h30m5s", "250ms", "0s" or "inf".
  std::string ToString() const;

 private:
  constexpr explicit Duration(int64_t ms) : ms_(ms) {}
  int64_t ms_ = 0;
};

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time FromMillis(int64_t ms) { return Time(ms); }
  static constexpr Time FromSeconds(int64_t s) { return Time(s * 1000); }
  static constexpr Time Zero() { return Time(0); }
  static constexpr Time Max() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t millis() const { return ms_; }
  constexpr int64_t seconds() const { return ms_ / 1000; }
  constexpr bool is_max() const { return ms_ == std::numeric_limits<int64_t>::max(); }

  constexpr auto operator<=>(const Time&) const = default;  // NOLINT(modernize-use-nullptr): tidy 14's false positive
  constexpr Time operator+(Duration d) const {
    if (is_max() || d.is_infinite()) return Max();
    int64_t sum = 0;
    if (__builtin_add_overflow(ms_, d.millis(), &sum)) return d.millis() > 0 ? Max() : Time(INT64_MIN);
    return Time(sum);
  }
  constexpr Time operator-(Duration d) const { return Time(ms_ - d.millis()); }
  constexpr Duration operator-(Time o) const {
    if (is_max()) return Duration::Infinite();
    return Duration::Millis(ms_ - o.ms_);
  }

 private:
  constexpr explicit Time(int64_t ms) : ms_(ms) {}
  int64_t ms_ = 0;
};

}  // namespace muster
