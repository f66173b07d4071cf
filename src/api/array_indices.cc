#include "api/array_indices.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <sstream>

namespace muster::api {
namespace {

constexpr int64_t kMaxIndex = 4'000'000;

std::optional<int64_t> Number(const std::string& s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

StatusOr<ArrayIndices> ParseArrayIndices(const std::string& text, int64_t max_tasks) {
  ArrayIndices out;
  std::string list = text;
  if (const size_t pct = text.find('%'); pct != std::string::npos) {
    list = text.substr(0, pct);
    const std::optional<int64_t> k = Number(text.substr(pct + 1));
    if (!k || *k < 1 || *k > kMaxIndex) {
      return InvalidArgument("the limit after % must be a count of at least 1, got \"" + text.substr(pct + 1) + "\"");
    }
    out.max_running = static_cast<int32_t>(*k);
  }
  std::vector<int64_t> all;
  std::stringstream in(list);
  for (std::string part; std::getline(in, part, ',');) {
    const size_t dash = part.find('-'), colon = part.find(':');
    const std::optional<int64_t> first = Number(part.substr(0, std::min(dash, colon)));
    std::optional<int64_t> last = first, step = 1;
    if (dash != std::string::npos)
      last = Number(part.substr(dash + 1, colon == std::string::npos ? std::string::npos : colon - dash - 1));
    if (colon != std::string::npos)
      step = dash == std::string::npos || colon < dash ? std::nullopt : Number(part.substr(colon + 1));
    if (!first || !last || !step || *step < 1 || *last < *first || *last > kMaxIndex) {
      return InvalidArgument("\"" + part + "\" is not an index N, a range N-M (N <= M) or N-M:STEP of indices 0 to " +
                             std::to_string(kMaxIndex));
    }
    for (int64_t i = *first; i <= *last; i += *step) {
      all.push_back(i);
      if (static_cast<int64_t>(all.size()) > max_tasks) {
        return InvalidArgument("\"" + text + "\" has more than " + std::to_string(max_tasks) + " indices");
      }
    }
  }
  if (all.empty()) return InvalidArgument("no indices in \"" + text + "\"");
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  out.indices.assign(all.begin(), all.end());
  return out;
}

std::string ArrayIndicesText(const ArrayIndices& a) {
  std::string out;
  const auto& v = a.indices;
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    const int64_t step = j < v.size() ? v[j] - v[i] : 0;
    while (j < v.size() && v[j] - v[j - 1] == step) ++j;
    if (!out.empty()) out += ",";
    if (j - i >= 3) {
      out += std::to_string(v[i]) + "-" + std::to_string(v[j - 1]) + (step > 1 ? ":" + std::to_string(step) : "");
      i = j;
    } else {
      out += std::to_string(v[i]);
      ++i;
    }
  }
  if (a.max_running > 0) out += "%" + std::to_string(a.max_running);
  return out;
}

}  // namespace muster::api
