// Parsers for the quantities users type: memory, CPUs and durations.
//
//   memory    "512Gi", "16G", "1500Mi", "1048576" (bytes). Binary suffixes
//             Ki Mi Gi Ti are powers of 1024, decimal K M G T powers of 1000.
//   cpus      "4", "2.5", "500m" -> milli-cores.
//   duration  "90s", "2h30m", "1h", "250ms", "1d"; Slurm's "MM", "MM:SS",
//             "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS" (a bare number is
//             minutes, as in Slurm); "inf"/"unlimited" -> Duration::Infinite().
// Errors say what was expected and what was given; callers add the field path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace muster {

StatusOr<int64_t> ParseMemoryBytes(std::string_view text);
StatusOr<int64_t> ParseCpuMilli(std::string_view text);
StatusOr<Duration> ParseDuration(std::string_view text);

// For messages and tables, the other way: 2500 -> "2.5", 64000 -> "64";
// the largest binary unit that divides the bytes exactly: "1Ti", "512Gi",
// "1536Mi", "1Ki", else the bytes ("1000"). Each parses back to its value.
std::string FormatCpus(int64_t milli);
std::string FormatMemory(int64_t bytes);

// The candidate closest to `word` by edit distance if it is close enough to be
// a likely typo, else empty. For "unknown field" errors.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace muster
