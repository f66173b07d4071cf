// ReadJobSummaryPage: a page of GET /v1/jobs?view=summary read in one pass
// by a strict JSON reader written for this shape, without building a JSON
// tree: the CLI's tables list 100,000 jobs, and reading the pages was most
// of the client's time (a general parser's character-at-a-time input, then
// each job's map).
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
  int64_t gpus = 0;  // per replica
  int64_t replicas = 1;
  std::vector<std::string> nodes;
};

// Hands each of the page's items, in order, to `each`, at most `max_items`
// of them; returns how many it handed. An error when `text` is not a JSON
// object (up to the last item read, when the limit stops the reading).
// Fields of an unexpected type are left empty; strings are taken as the
// server sends them (UTF-8, not checked again).
StatusOr<int64_t> ReadJobSummaryPage(std::string_view text, int64_t max_items,
                                     const std::function<void(const JobSummaryItem&)>& each);

}  // namespace muster::cli
