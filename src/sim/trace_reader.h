// TraceReader: reads the normalized trace format of ../shared/traces.
//
//   job_id,submit_time,num_gpus,duration,user,tenant,priority,status,gpu_milli,censored
//
// submit_time and duration are seconds (duration -1 = unknown), num_gpus an
// integer, gpu_milli the GPU share in thousandths (1000 per whole GPU; less
// than 1000 with num_gpus 1 means a fractional GPU), censored 1 when the
// trace ended before the job did. Columns are found by header name, so the
// order may differ and extra columns are ignored.
//
// Errors name the line and the column: "trace.csv:17: num_gpus: not an
// integer: \"x\"". The reader never drops a row silently: rows the simulator
// cannot use are kept and flagged, and the report counts them.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "common/status.h"

namespace muster::sim {

// Bounds on a row's numbers (far beyond any real trace; they keep the
// simulator's arithmetic from overflowing): times up to about 3,000 years.
inline constexpr int64_t kMaxTraceSeconds = 100'000'000'000;
inline constexpr int64_t kMaxTraceGpus = 1'000'000;

struct TraceJob {
  std::string id;
  int64_t submit_s = 0;
  int64_t num_gpus = 0;
  int64_t duration_s = -1;  // -1: unknown
  std::string user;
  std::string tenant;
  int64_t priority = 0;
  std::string status;
  int64_t gpu_milli = 0;
  bool censored = false;
};

// Parses a whole trace. `source` names it in errors.
StatusOr<std::vector<TraceJob>> ReadTrace(std::istream& in, const std::string& source);
StatusOr<std::vector<TraceJob>> ReadTraceFile(const std::string& path);

}  // namespace muster::sim
