#include "cli/window_time.h"

#include <charconv>

#include "common/rfc3339.h"

namespace muster::cli {

StatusOr<Time> ParseWindowTime(const std::string& text, Time now, const std::string& flag) {
  if (text == "now") return now;
  if (auto t = ParseRfc3339Utc(text)) return *t;
  if (text.size() == 10) {
    if (auto t = ParseRfc3339Utc(text + "T00:00:00Z")) return *t;
  }
  if (text.size() >= 2) {
    int64_t n = 0;
    const char* end = text.data() + text.size() - 1;
    auto [p, ec] = std::from_chars(text.data(), end, n);
    static constexpr std::pair<char, int64_t> kUnits[] = {
        {'m', 60'000}, {'h', 3'600'000}, {'d', 86'400'000}, {'w', 7 * 86'400'000LL}};
    for (const auto& [unit, ms] : kUnits) {
      if (ec == std::errc() && p == end && *end == unit && n >= 0 && n <= 100'000) {
        return now - Duration::Millis(n * ms);
      }
    }
  }
  return InvalidArgument(
      "must be a time (2026-11-01T08:00:00Z), a date (2026-11-01), now, or an age such as 90m, "
      "36h, 7d or 2w; got \"" +
          text.substr(0, 64) + "\"",
      flag);
}

}  // namespace muster::cli
