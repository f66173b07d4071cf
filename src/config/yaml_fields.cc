#include "config/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "common/message_text.h"
#include "common/quantity.h"

namespace muster::config {

Status CheckKeys(const YAML::Node& map, const std::vector<std::string>& known, const std::string& path) {
  std::vector<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) return InvalidArgument("keys must be plain names, under " + path);
    const std::string key = kv.first.Scalar();
    // A YAML reader keeps one of the two; which one is not for us to guess.
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return InvalidArgument("given more than once", ChildPath(path, key));
    }
    seen.push_back(key);
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string msg = "unknown field";
    const std::string close = ClosestMatch(key, known);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    return InvalidArgument(msg, ChildPath(path, key));
  }
  return Status::Ok();
}

StatusOr<int64_t> Int(const YAML::Node& v, const std::string& path, int64_t min, int64_t max) {
  int64_t out = 0;
  const std::string s = v.IsScalar() ? v.Scalar() : std::string("<") + (v.IsMap() ? "map" : "list") + ">";
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  const std::string range =
      max == INT64_MAX ? ">= " + std::to_string(min) : "from " + std::to_string(min) + " to " + std::to_string(max);
  if (!v.IsScalar() || ec != std::errc() || p != s.data() + s.size() || out < min || out > max) {
    return InvalidArgument("must be an integer " + range + ", got " + QuoteForMessage(s), path);
  }
  return out;
}

StatusOr<double> Fraction(const YAML::Node& v, const std::string& path) {
  double out = -1;
  const std::string s = v.IsScalar() ? v.Scalar() : std::string("<") + (v.IsMap() ? "map" : "list") + ">";
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, std::chars_format::fixed);
  if (!v.IsScalar() || ec != std::errc() || p != s.data() + s.size() || !(out >= 0 && out <= 1)) {
    return InvalidArgument("must be a number from 0 to 1, got " + QuoteForMessage(s), path);
  }
  return out;
}

StatusOr<double> Number(const YAML::Node& v, const std::string& path, double min, double max) {
  double out = 0;
  const std::string s = v.IsScalar() ? v.Scalar() : std::string("<") + (v.IsMap() ? "map" : "list") + ">";
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, std::chars_format::fixed);
  if (!v.IsScalar() || ec != std::errc() || p != s.data() + s.size() || !(out >= min && out <= max)) {
    std::ostringstream range;
    range << "must be a number from " << min << " to " << max << ", got ";
    return InvalidArgument(range.str() + QuoteForMessage(s), path);
  }
  return out;
}

StatusOr<std::string> Str(const YAML::Node& v, const std::string& path) {
  if (!v.IsScalar()) return InvalidArgument("must be a string", path);
  return v.Scalar();
}

StatusOr<bool> Bool(const YAML::Node& v, const std::string& path) {
  if (v.IsScalar() && v.Scalar() == "true") return true;
  if (v.IsScalar() && v.Scalar() == "false") return false;
  return InvalidArgument("must be true or false", path);
}

StatusOr<Duration> Dur(const YAML::Node& v, const std::string& path) {
  if (!v.IsScalar()) return InvalidArgument("must be a duration such as 90s or 2h30m", path);
  auto d = ParseDuration(v.Scalar());
  if (!d.ok()) return d.status().WithFieldPrefix(path);
  return d;
}

StatusOr<int64_t> CpuMilli(const YAML::Node& v, const std::string& path) {
  if (!v.IsScalar()) return InvalidArgument("must be CPUs such as 4, 2.5 or 500m", path);
  auto c = ParseCpuMilli(v.Scalar());
  if (!c.ok()) return c.status().WithFieldPrefix(path);
  return c;
}

StatusOr<int64_t> MemoryBytes(const YAML::Node& v, const std::string& path) {
  if (!v.IsScalar()) return InvalidArgument("must be a memory size such as 512Gi", path);
  auto m = ParseMemoryBytes(v.Scalar());
  if (!m.ok()) return m.status().WithFieldPrefix(path);
  return m;
}

StatusOr<YAML::Node> LoadYaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ": " + SanitizeForMessage(e.what()));
  }
}

}  // namespace muster::config
