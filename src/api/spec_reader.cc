#include "api/spec_reader.h"

#include <algorithm>
#include <set>

#include "common/quantity.h"

namespace muster::api {
namespace {

using Kind = TreeNode::Kind;

// Quantity strings longer than this are refused before they reach
// ParseCpuMilli/ParseMemoryBytes: no valid value needs more, and it keeps
// their fixed-point arithmetic far from int64 overflow (a 20-digit
// "9223372036854775.999" would overflow it).
constexpr size_t kMaxQuantityChars = 16;
// Duration strings longer than this are refused before ParseDuration.
constexpr size_t kMaxDurationChars = 64;

bool IsAsciiControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

bool MatchesCharset(std::string_view s, Charset charset) {
  switch (charset) {
    case Charset::kText:
      return s.find('\0') == std::string_view::npos;
    case Charset::kLine:
      return s.find_first_of(std::string_view("\0\r\n", 3)) == std::string_view::npos;
    case Charset::kPrintable:
      return std::none_of(s.begin(), s.end(), IsAsciiControl);
    case Charset::kName:
      // The first character is alphanumeric: no ".", "..", or "-flag" names.
      if (s.empty() || !(IsAlpha(s[0]) || IsDigit(s[0]))) return false;
      return std::all_of(s.begin(), s.end(),
                         [](char c) { return IsAlpha(c) || IsDigit(c) || c == '.' || c == '_' || c == '-'; });
    case Charset::kEnvName:
      if (!s.empty() && IsDigit(s[0])) return false;
      return std::all_of(s.begin(), s.end(), [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; });
    case Charset::kAbsPath:
      return !s.empty() && s[0] == '/' && std::none_of(s.begin(), s.end(), IsAsciiControl);
  }
  return false;
}

// The text of a scalar that a quantity or duration reader may parse: a
// string, or a YAML plain scalar. (JSON numbers are handled by the callers.)
bool IsStringLike(const TreeNode& node) {
  return node.kind == Kind::kString || (node.plain && node.is_scalar() && node.kind != Kind::kNull);
}

}  // namespace

Status Expected(const TreeNode& node, const std::string& path, std::string_view expected) {
  return InvalidArgument("must be " + std::string(expected) + ", got " + Describe(node), path);
}

StatusOr<ObjectReader> ObjectReader::Open(const TreeNode& node, std::string path, const std::vector<std::string>& known,
                                          std::string_view expected) {
  if (node.kind != Kind::kMap) return Expected(node, path, expected);
  std::set<std::string_view> seen;
  for (const auto& [key, value] : node.fields) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string message = "unknown field";
      // Only short ASCII keys get a hint: ClosestMatch is quadratic in the
      // key's length and passes each char to std::tolower (UB when negative).
      const bool ascii =
          std::all_of(key.begin(), key.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
      const std::string close = key.size() <= 64 && ascii ? ClosestMatch(key, known) : std::string();
      if (!close.empty()) message += "; did you mean \"" + close + "\"?";
      return InvalidArgument(message, ChildPath(path, key));
    }
    if (!seen.insert(key).second) return InvalidArgument("duplicate field", ChildPath(path, key));
  }
  return ObjectReader(node, std::move(path));
}

const TreeNode* ObjectReader::Find(std::string_view key) const {
  for (const auto& [k, value] : node_->fields) {
    if (k == key) return value->kind == Kind::kNull ? nullptr : value.get();
  }
  return nullptr;
}

StatusOr<std::string> ReadString(const TreeNode& node, const std::string& path, const StringRule& rule) {
  if (!IsStringLike(node)) return Expected(node, path, rule.expected);
  const std::string& s = node.text;
  if (!IsValidUtf8(s)) return Expected(node, path, "valid UTF-8 text");
  if (s.size() < rule.min_bytes || s.size() > rule.max_bytes || !MatchesCharset(s, rule.charset)) {
    return Expected(node, path, rule.expected);
  }
  return s;
}

StatusOr<int64_t> ReadInt(const TreeNode& node, const std::string& path, int64_t min, int64_t max,
                          std::string_view expected) {
  if (node.kind == Kind::kInt && node.integer >= min && node.integer <= max) return node.integer;
  if (!expected.empty()) return Expected(node, path, expected);
  return Expected(node, path, "an integer from " + std::to_string(min) + " to " + std::to_string(max));
}

StatusOr<bool> ReadBool(const TreeNode& node, const std::string& path) {
  if (node.kind == Kind::kBool) return node.boolean;
  return Expected(node, path, "true or false");
}

StatusOr<int64_t> ReadCpuMilli(const TreeNode& node, const std::string& path, int64_t max_milli) {
  const std::string expected =
      "CPUs such as 4, 2.5 or \"500m\", at most " + std::to_string(max_milli / 1000) + " cores";
  if (node.kind == Kind::kInt) {
    if (node.integer < 0 || node.integer > max_milli / 1000) return Expected(node, path, expected);
    return node.integer * 1000;
  }
  // Decimal numbers (2.5) keep their text, so they parse exactly like "2.5".
  if (!IsStringLike(node) && node.kind != Kind::kDouble) return Expected(node, path, expected);
  if (node.text.size() > kMaxQuantityChars) return Expected(node, path, expected);
  StatusOr<int64_t> milli = ParseCpuMilli(node.text);
  if (!milli.ok() || *milli > max_milli) return Expected(node, path, expected);
  return *milli;
}

StatusOr<int64_t> ReadMemoryBytes(const TreeNode& node, const std::string& path, int64_t max_bytes) {
  const std::string expected = "a memory size such as \"512Gi\" or \"16G\", or an integer number of bytes, at most " +
                               std::to_string(max_bytes >> 40) + "Ti";
  // A request under 1 MiB is a unit left out (Slurm's --mem=512 means
  // megabytes; here a number alone is bytes), never a job's real need.
  auto sane = [&](int64_t bytes) -> StatusOr<int64_t> {
    if (bytes > 0 && bytes < (int64_t{1} << 20)) {
      return Expected(node, path,
                      "0 or at least 1Mi (a number without a unit is bytes: \"512Mi\" or \"512M\" for megabytes)");
    }
    return bytes;
  };
  if (node.kind == Kind::kInt) {
    if (node.integer < 0 || node.integer > max_bytes) return Expected(node, path, expected);
    return sane(node.integer);
  }
  // Strings only: a number with a fraction (1.5, "1.5") would be a fraction
  // of a byte, which ParseMemoryBytes silently truncates.
  const std::string& s = node.text;
  if (node.kind != Kind::kString || s.size() > kMaxQuantityChars ||
      (!s.empty() && IsDigit(s.back()) && s.find('.') != std::string::npos)) {
    return Expected(node, path, expected);
  }
  StatusOr<int64_t> bytes = ParseMemoryBytes(s);
  if (!bytes.ok() || *bytes > max_bytes) return Expected(node, path, expected);
  return sane(*bytes);
}

StatusOr<Duration> ReadDuration(const TreeNode& node, const std::string& path, const DurationRule& rule) {
  std::string form = "a duration such as \"90s\", \"2h30m\" or \"1-02:00:00\"";
  form += rule.allow_unlimited ? ", \"unlimited\"" : "";
  form += " or an integer number of seconds";
  const std::string range = std::string(rule.min_text != nullptr ? std::string("at least ") + rule.min_text
                                        : rule.allow_zero        ? "from 0s"
                                                                 : "greater than 0") +
                            " and at most " + rule.max_text;
  Duration d;
  if (node.kind == Kind::kInt) {
    if (node.integer < 0 || node.integer > rule.max.seconds()) return Expected(node, path, range);
    d = Duration::Seconds(node.integer);
  } else if (IsStringLike(node) && node.text.size() <= kMaxDurationChars) {
    const std::string& s = node.text;
    // A bare "90" is minutes to ParseDuration (Slurm) but seconds as an
    // integer here: refuse the ambiguous form.
    if (!s.empty() && std::all_of(s.begin(), s.end(), IsDigit)) {
      if (std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; })) {
        // Slurm's --time=0: no limit.
        return Expected(node, path, form + (rule.allow_unlimited ? " (for no limit: \"unlimited\")" : ""));
      }
      return Expected(node, path,
                      form + " (a string needs a unit: \"" + s + "s\", or \"" + s + "m\" for Slurm's minutes)");
    }
    StatusOr<Duration> parsed = ParseDuration(s);
    if (!parsed.ok()) return Expected(node, path, form);
    d = *parsed;
  } else {
    return Expected(node, path, form);
  }
  if (d.is_infinite()) {
    if (!rule.allow_unlimited) return Expected(node, path, "a finite duration " + range);
    return d;
  }
  if ((d == Duration::Zero() && !rule.allow_zero) || d < rule.min || d > rule.max) {
    return Expected(node, path, range + (rule.allow_unlimited ? " (or \"unlimited\")" : std::string()));
  }
  return d;
}

StatusOr<std::vector<TreePtr>> ReadList(const TreeNode& node, const std::string& path, size_t min_items,
                                        size_t max_items, std::string_view expected) {
  if (node.kind != Kind::kList || node.items.size() < min_items || node.items.size() > max_items) {
    return Expected(node, path, expected);
  }
  return node.items;
}

}  // namespace muster::api
