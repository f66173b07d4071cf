// The times of `muster usage --since/--until` and `muster history`: an
// RFC 3339 time (2026-11-01T08:00:00Z), a UTC date (2026-11-01, its
// midnight), "now", or an age before `now`: 90m, 36h, 7d, 2w.
#pragma once

#include <string>

#include "common/status.h"
#include "common/time.h"

namespace muster::cli {

// InvalidArgument naming `flag` when `text` is none of those.
StatusOr<Time> ParseWindowTime(const std::string& text, Time now, const std::string& flag);

}  // namespace muster::cli
