#include "common/rfc3339.h"

#include <cstdint>

namespace muster {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// days_from_civil), and its inverse.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t& y, int64_t& m, int64_t& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp + (mp < 10 ? 3 : -9);
  y = yoe + era * 400 + (m <= 2);
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Reads `n` digits at s[pos] into `out`.
bool Digits(std::string_view s, size_t pos, size_t n, int64_t& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

std::optional<Time> ParseRfc3339Utc(std::string_view s) {
  // 0123456789012345678
  // YYYY-MM-DDTHH:MM:SS
  int64_t y, mo, d, h, mi, sec;
  if (s.size() < 20 || !Digits(s, 0, 4, y) || s[4] != '-' || !Digits(s, 5, 2, mo) || s[7] != '-' ||
      !Digits(s, 8, 2, d) || s[10] != 'T' || !Digits(s, 11, 2, h) || s[13] != ':' || !Digits(s, 14, 2, mi) ||
      s[16] != ':' || !Digits(s, 17, 2, sec)) {
    return std::nullopt;
  }
  size_t pos = 19;
  int64_t millis = 0;
  if (s[pos] == '.') {
    size_t digits = 0;
    for (++pos; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++digits) {
      if (digits < 3) millis = millis * 10 + (s[pos] - '0');
    }
    if (digits == 0 || digits > 9) return std::nullopt;
    for (size_t k = digits; k < 3; ++k) millis *= 10;
  }
  // "Z", or a numeric offset "+02:00" / "-05:30" (local time = UTC + offset).
  int64_t offset_minutes = 0;
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-') && pos + 6 == s.size()) {
    int64_t oh, om;
    if (!Digits(s, pos + 1, 2, oh) || s[pos + 3] != ':' || !Digits(s, pos + 4, 2, om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_minutes = (s[pos] == '-' ? -1 : 1) * (oh * 60 + om);
  } else if (pos + 1 != s.size() || s[pos] != 'Z') {
    return std::nullopt;
  }
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || sec > 59) {
    return std::nullopt;
  }
  const int64_t seconds = ((DaysFromCivil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec - offset_minutes * 60;
  // In UTC, still within 1970-01-01 .. 9999-12-31 (what FormatRfc3339Utc writes).
  constexpr int64_t kEnd = int64_t{253402300800};  // 10000-01-01T00:00:00Z
  if (seconds < 0 || seconds >= kEnd) return std::nullopt;
  return Time::FromMillis(seconds * 1000 + millis);
}

std::string FormatRfc3339Utc(Time t) {
  const int64_t ms = t.millis();
  const int64_t days = ms / 86'400'000, rem = ms % 86'400'000;
  int64_t y, m, d;
  CivilFromDays(days, y, m, d);
  std::string out;
  // Appends v zero-padded to `width` digits.
  const auto put = [&out](int64_t v, size_t width, const char* after) {
    const std::string digits = std::to_string(v);
    if (digits.size() < width) out.append(width - digits.size(), '0');
    out += digits;
    out += after;
  };
  put(y, 4, "-");
  put(m, 2, "-");
  put(d, 2, "T");
  put(rem / 3'600'000, 2, ":");
  put(rem / 60'000 % 60, 2, ":");
  put(rem / 1000 % 60, 2, "");
  if (rem % 1000 != 0) {
    out += '.';
    put(rem % 1000, 3, "");
  }
  return out + "Z";
}

}  // namespace muster
