// Job ids as the commands take them: "12", or a range "5-104" (what
// `muster submit --parsable` prints for an array).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace muster::cli {

// The ids of `args`, in order; at most 10,000 in all (an array's
// largest). InvalidArgument naming the word that is not an id or range.
StatusOr<std::vector<int64_t>> JobIds(const std::vector<std::string>& args);

}  // namespace muster::cli
