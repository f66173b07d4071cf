// A job array's indices in Slurm's syntax: "0-15:4,20%2".
//
// A list of parts separated by ',': N, N-M (N <= M) or N-M:S (every S-th
// from N up to M), each index from 0 to 4,000,000 (Slurm's MaxArraySize
// bound), optionally followed by %K: at most K tasks of the array run at
// once. Indices are sorted and each kept once, as Slurm does.
//
//   "1-10%2"        -> 1..10, 2 at a time
//   "500-17000:1000" -> 500, 1500, ..., 16500
//   "1,3,5"          -> 1, 3, 5
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace muster::api {

struct ArrayIndices {
  std::vector<int32_t> indices;  // sorted, distinct
  int32_t max_running = 0;       // 0: no limit
  bool operator==(const ArrayIndices&) const = default;
};

// InvalidArgument naming what does not parse, or more than `max_tasks`
// indices.
StatusOr<ArrayIndices> ParseArrayIndices(const std::string& text, int64_t max_tasks);

// The indices as Slurm writes them: runs of 3 or more with one step as
// N-M or N-M:S, others listed; "%K" appended with a limit.
std::string ArrayIndicesText(const ArrayIndices& a);

}  // namespace muster::api
