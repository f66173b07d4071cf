#include "common/time.h"

namespace muster {

std::string Duration::ToString() const {
  if (is_infinite()) return "inf";
  int64_t ms = ms_;
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  if (ms == 0) return "0s";
  const int64_t h = ms / 3'600'000, m = (ms / 60'000) % 60, s = (ms / 1000) % 60, r = ms % 1000;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s) out += std::to_string(s) + "s";
  if (r) out += std::to_string(r) + "ms";
  return out;
}

}  // namespace muster
