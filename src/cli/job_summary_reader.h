// ReadJobSummaryPage: a page of GET /v1/jobs?view=summary read as a stream
// (nlohmann's SAX interface), without building a JSON tree: the CLI's
// tables list 100,000 jobs, and building each job's map was most of the
// client's time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::cli {

// One item of the page: the fields a table shows (docs/api.md, view=summary).
struct JobSummaryItem {
  std::string id, name, user, queue, priority, state, reason, submit_time;
  int64_t gpus = 0;      // per replica
  int64_t replicas = 1;
  std::vector<std::string> nodes;
};

// Hands each of the page's items, in order, to `each`, at most `max_items`
// of them; returns how many it handed. An error when `text` is not JSON.
StatusOr<int64_t> ReadJobSummaryPage(std::string_view text, int64_t max_items,
                                     const std::function<void(const JobSummaryItem&)>& each);

}  // namespace muster::cli
