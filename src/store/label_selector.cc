#include "store/label_selector.h"

namespace muster::store {
namespace {

constexpr size_t kMaxRequirements = 16;
constexpr size_t kMaxLength = 256;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool ValidPart(std::string_view s, bool key) {
  if ((key && s.empty()) || s.size() > kMaxLength) return false;
  for (char c : s) {
    if (c == ',' || c == '=' || c == '!' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f || (key && c == ' ')) {
      return false;
    }
  }
  return true;
}

}  // namespace

StatusOr<std::vector<LabelRequirement>> ParseLabelSelector(std::string_view text, const std::string& field) {
  std::vector<LabelRequirement> out;
  if (Trim(text).empty()) return out;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = Trim(text.substr(0, comma));
    const std::string shown = "\"" + std::string(item.substr(0, 64)) + "\"";
    LabelRequirement r;
    std::string_view key, value;
    if (const size_t ne = item.find("!="); ne != std::string_view::npos) {
      r.op = LabelRequirement::Op::kNotEqual;
      key = item.substr(0, ne);
      value = item.substr(ne + 2);
    } else if (const size_t eq = item.find('='); eq != std::string_view::npos) {
      key = item.substr(0, eq);
      value = item.substr(item.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1);
    } else if (!item.empty() && item.front() == '!') {
      r.op = LabelRequirement::Op::kNotExists;
      key = item.substr(1);
    } else {
      r.op = LabelRequirement::Op::kExists;
      key = item;
    }
    key = Trim(key);
    value = Trim(value);
    if (!ValidPart(key, true) || !ValidPart(value, false)) {
      return InvalidArgument(
          "must be requirements such as team=vision, tier!=batch, gpu or !spot, joined by commas; "
          "got " +
              shown,
          field);
    }
    r.key = std::string(key);
    r.value = std::string(value);
    out.push_back(std::move(r));
    if (out.size() > kMaxRequirements) return InvalidArgument("at most 16 requirements", field);
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace muster::store
