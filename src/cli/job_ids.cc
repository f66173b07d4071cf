#include "cli/job_ids.h"

#include <charconv>
#include <string_view>

namespace muster::cli {

StatusOr<std::vector<int64_t>> JobIds(const std::vector<std::string>& args) {
  std::vector<int64_t> out;
  for (const std::string& a : args) {
    const size_t dash = a.find('-', 1);
    int64_t first = 0, last = 0;
    auto number = [](std::string_view t, int64_t& v) {
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      return ec == std::errc() && p == t.data() + t.size() && v > 0;
    };
    const std::string_view text(a);
    if (!number(text.substr(0, dash), first) ||
        !number(dash == std::string::npos ? text : text.substr(dash + 1), last) || last < first) {
      return InvalidArgument("expected job ids such as 12 or ranges such as 5-104, got \"" + a + "\"");
    }
    if (last - first >= 10'000 - static_cast<int64_t>(out.size())) {
      return InvalidArgument("at most 10000 jobs at once, got more with \"" + a + "\"");
    }
    for (int64_t id = first; id <= last; ++id) out.push_back(id);
  }
  return out;
}

}  // namespace muster::cli
