#include "cli/hostlist.h"

#include <cctype>
#include <map>

namespace muster::cli {
namespace {

// Splits at commas outside brackets.
std::vector<std::string> Items(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      item += c;
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

std::string Padded(long long n, size_t width) {
  std::string s = std::to_string(n);
  return s.size() < width ? std::string(width - s.size(), '0') + s : s;
}

// Appends the names of one item (brackets expanded left to right).
Status ExpandItem(const std::string& item, std::vector<std::string>& out, size_t max_hosts) {
  const size_t open = item.find('[');
  if (open == std::string::npos) {
    if (item.find(']') != std::string::npos) return InvalidArgument("\"" + item + "\" has a ']' without its '['");
    out.push_back(item);
    return Status::Ok();
  }
  const size_t close = item.find(']', open);
  if (close == std::string::npos) return InvalidArgument("\"" + item + "\" has a '[' without its ']'");
  const std::string head = item.substr(0, open), tail = item.substr(close + 1);
  std::string ranges = item.substr(open + 1, close - open - 1);
  size_t from = 0;
  while (from <= ranges.size()) {
    const size_t comma = std::min(ranges.find(',', from), ranges.size());
    const std::string r = ranges.substr(from, comma - from);
    const size_t dash = r.find('-');
    const std::string lo = r.substr(0, dash), hi = dash == std::string::npos ? lo : r.substr(dash + 1);
    const auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(lo) || !digits(hi) || std::stoll(hi) < std::stoll(lo)) {
      return InvalidArgument("\"" + r + "\" in \"" + item + "\" is not a number or a range LOW-HIGH");
    }
    for (long long n = std::stoll(lo); n <= std::stoll(hi); ++n) {
      if (out.size() >= max_hosts)
        return InvalidArgument("\"" + item + "\" names more than " + std::to_string(max_hosts) + " hosts");
      RETURN_IF_ERROR(ExpandItem(head + Padded(n, lo.size()) + tail, out, max_hosts));
    }
    from = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& list, size_t max_hosts) {
  std::vector<std::string> out;
  for (const std::string& item : Items(list)) RETURN_IF_ERROR(ExpandItem(item, out, max_hosts));
  return out;
}

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  // Groups in order of first appearance: a prefix and a number width.
  struct Group {
    std::string prefix;
    size_t width = 0;
    std::vector<long long> numbers;
  };
  std::vector<Group> groups;
  std::map<std::pair<std::string, size_t>, size_t> index;
  for (const std::string& h : hosts) {
    size_t cut = h.size();
    while (cut > 0 && std::isdigit(static_cast<unsigned char>(h[cut - 1]))) --cut;
    const size_t width = h.size() - cut;
    if (width == 0 || width > 18) {
      groups.push_back({h, 0, {}});
      continue;
    }
    const auto key = std::make_pair(h.substr(0, cut), width);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      groups.push_back({key.first, width, {}});
    }
    groups[it->second].numbers.push_back(std::stoll(h.substr(cut)));
  }
  std::string out;
  for (const Group& g : groups) {
    if (!out.empty()) out += ",";
    if (g.numbers.empty()) {
      out += g.prefix;
      continue;
    }
    if (g.numbers.size() == 1) {
      out += g.prefix + Padded(g.numbers[0], g.width);
      continue;
    }
    std::string ranges;
    for (size_t i = 0; i < g.numbers.size();) {
      size_t j = i;
      while (j + 1 < g.numbers.size() && g.numbers[j + 1] == g.numbers[j] + 1) ++j;
      ranges += (ranges.empty() ? "" : ",") + Padded(g.numbers[i], g.width) +
                (j > i ? "-" + Padded(g.numbers[j], g.width) : "");
      i = j + 1;
    }
    out += g.prefix + "[" + ranges + "]";
  }
  return out;
}

}  // namespace muster::cli
