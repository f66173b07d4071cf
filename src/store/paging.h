// What the backends share for listing jobs: pages of rows, and the nodes of
// a summary read as one string.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace muster::store {

// A page of `rows`, which were read one more than `limit` (the one more
// tells that a next page exists, starting after the last id kept).
template <typename Page, typename Rows>
Page ToPage(Rows rows, int32_t limit) {
  Page page;
  if (rows.size() > static_cast<size_t>(limit)) {
    rows.resize(limit);
    page.next_after_id = rows.empty() ? 0 : rows.back().id;
  }
  page.items = std::move(rows);
  return page;
}

// The nodes of a job's allocations, joined by the unit separator (0x1f,
// which no node name holds) in the summary query.
inline std::vector<std::string> SplitNodes(const std::string& joined) {
  std::vector<std::string> nodes;
  for (size_t start = 0; start < joined.size();) {
    const size_t end = std::min(joined.find('\x1f', start), joined.size());
    nodes.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return nodes;
}

}  // namespace muster::store
