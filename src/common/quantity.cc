#include "common/quantity.h"

#include "common/message_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace muster {
namespace {

// The input as echoed in an error: at most 64 bytes, control characters escaped.

bool ParseUint(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

// "2.5" -> 2500 with scale 1000; integers and at most 3 decimals.
bool ParseFixed(std::string_view s, int64_t scale, int64_t& out) {
  const size_t dot = s.find('.');
  int64_t whole = 0, frac = 0;
  if (dot == std::string_view::npos) {
    if (!ParseUint(s, whole)) return false;
  } else {
    std::string_view w = s.substr(0, dot), f = s.substr(dot + 1);
    if (w.empty()) w = "0";
    if (f.empty() || f.size() > 3 || !ParseUint(w, whole) || !ParseUint(f, frac)) return false;
    for (size_t i = f.size(); i < 3; ++i) frac *= 10;
    frac = frac * scale / 1000;
  }
  if (whole > (INT64_MAX - frac) / scale) return false;
  out = whole * scale + frac;
  return true;
}

}  // namespace

StatusOr<int64_t> ParseMemoryBytes(std::string_view text) {
  struct Suffix {
    const char* s;
    int64_t mult;
  };
  static constexpr Suffix kSuffixes[] = {{"Ki", int64_t{1} << 10},
                                         {"Mi", int64_t{1} << 20},
                                         {"Gi", int64_t{1} << 30},
                                         {"Ti", int64_t{1} << 40},
                                         {"K", 1'000},
                                         {"M", 1'000'000},
                                         {"G", 1'000'000'000},
                                         {"T", 1'000'000'000'000},
                                         {"", 1}};
  for (const Suffix& suf : kSuffixes) {
    const std::string_view sv(suf.s);
    if (text.size() <= sv.size() || text.substr(text.size() - sv.size()) != sv) continue;
    int64_t n = 0;
    if (!ParseFixed(text.substr(0, text.size() - sv.size()), 1000, n)) break;
    // n is thousandths of a unit.
    if (n > INT64_MAX / suf.mult) break;
    return n * suf.mult / 1000;
  }
  return InvalidArgument("expected a memory size such as 512Gi, 16G or 1500Mi, got " + QuoteForMessage(text));
}

StatusOr<int64_t> ParseCpuMilli(std::string_view text) {
  int64_t out = 0;
  if (text.size() > 1 && text.back() == 'm' && ParseUint(text.substr(0, text.size() - 1), out)) {
    return out;
  }
  if (ParseFixed(text, 1000, out)) return out;
  return InvalidArgument("expected CPUs such as 4, 2.5 or 500m, got " + QuoteForMessage(text));
}

StatusOr<Duration> ParseDuration(std::string_view text) {
  const Status bad =
      InvalidArgument("expected a duration such as 90s, 2h30m or D-HH:MM:SS, got " + QuoteForMessage(text));
  if (text == "inf" || text == "infinite" || text == "unlimited" || text == "UNLIMITED") {
    return Duration::Infinite();
  }
  if (text.empty()) return bad;
  // Unit form: 1d2h3m4s500ms.
  if (std::isalpha(static_cast<unsigned char>(text.back()))) {
    int64_t ms = 0;
    size_t i = 0;
    while (i < text.size()) {
      size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      size_t k = j;
      while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k]))) ++k;
      int64_t n = 0;
      if (j == i || k == j || !ParseUint(text.substr(i, j - i), n)) return bad;
      const std::string_view unit = text.substr(j, k - j);
      int64_t mult;
      if (unit == "ms")
        mult = 1;
      else if (unit == "s")
        mult = 1000;
      else if (unit == "m")
        mult = 60'000;
      else if (unit == "h")
        mult = 3'600'000;
      else if (unit == "d")
        mult = 86'400'000;
      else
        return bad;
      if (n > (INT64_MAX / 2 - ms) / mult) return bad;
      ms += n * mult;
      i = k;
    }
    return Duration::Millis(ms);
  }
  // Slurm form.
  int64_t days = 0;
  std::string_view rest = text;
  const size_t dash = rest.find('-');
  std::vector<int64_t> parts;
  if (dash != std::string_view::npos) {
    if (!ParseUint(rest.substr(0, dash), days)) return bad;
    rest = rest.substr(dash + 1);
  }
  size_t start = 0;
  while (true) {
    const size_t colon = rest.find(':', start);
    int64_t v = 0;
    if (!ParseUint(rest.substr(start, colon == std::string_view::npos ? rest.npos : colon - start), v)) {
      return bad;
    }
    parts.push_back(v);
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return bad;
  int64_t h = 0, m = 0, s = 0;
  if (dash != std::string_view::npos) {  // D-HH, D-HH:MM, D-HH:MM:SS
    h = parts[0];
    if (parts.size() > 1) m = parts[1];
    if (parts.size() > 2) s = parts[2];
  } else if (parts.size() == 1) {  // MM
    m = parts[0];
  } else if (parts.size() == 2) {  // MM:SS
    m = parts[0];
    s = parts[1];
  } else {  // HH:MM:SS
    h = parts[0];
    m = parts[1];
    s = parts[2];
  }
  if (days > 100'000 || h > 10'000'000 || m > 1'000'000'000 || s > 1'000'000'000) return bad;
  return Duration::Seconds(((days * 24 + h) * 60 + m) * 60 + s);
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > 64) return {};  // no name is that long; and the cost is quadratic
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : candidates) {
    // Levenshtein distance, two rows.
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        const size_t sub = prev[j - 1] + (std::tolower(static_cast<unsigned char>(word[i - 1])) ==
                                                  std::tolower(static_cast<unsigned char>(c[j - 1]))
                                              ? 0
                                              : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      }
      std::swap(prev, cur);
    }
    if (prev[c.size()] < best_d) {
      best_d = prev[c.size()];
      best = c;
    }
  }
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_d <= limit ? best : std::string();
}

std::string FormatCpus(int64_t milli) {
  std::string whole = std::to_string(milli / 1000);
  if (milli % 1000 == 0) return whole;
  std::string frac = std::to_string(milli % 1000);
  frac.insert(0, 3 - frac.size(), '0');
  while (frac.back() == '0') frac.pop_back();
  return whole + "." + frac;
}

std::string FormatMemory(int64_t bytes) {
  static constexpr const char* kUnits[] = {"Ti", "Gi", "Mi", "Ki"};
  for (int i = 0; i < 4; ++i) {
    const int shift = 10 * (4 - i);
    if (bytes > 0 && bytes % (int64_t{1} << shift) == 0) return std::to_string(bytes >> shift) + kUnits[i];
  }
  return std::to_string(bytes);
}

}  // namespace muster
