#include "sim/trace_reader.h"

#include <charconv>
#include <fstream>
#include <unordered_map>

#include "common/message_text.h"

namespace muster::sim {
namespace {

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

bool ParseInt(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  // Accept integral floats such as "3600.0", as some traces write them.
  const size_t dot = s.find('.');
  std::string_view whole = s;
  if (dot != std::string_view::npos) {
    for (char c : s.substr(dot + 1)) {
      if (c != '0') return false;
    }
    whole = s.substr(0, dot);
  }
  auto [ptr, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), out);
  return ec == std::errc() && ptr == whole.data() + whole.size();
}

}  // namespace

StatusOr<std::vector<TraceJob>> ReadTrace(std::istream& in, const std::string& source) {
  std::string line;
  if (!std::getline(in, line)) return InvalidArgument(source + ": empty file, expected a header");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  // Every row must have as many fields as the header: a column's index is
  // then always within the row.
  size_t columns = 0;
  std::unordered_map<std::string, size_t> col;
  {
    const std::vector<std::string_view> header = SplitCsv(line);  // views into `line`, which rows reuse
    columns = header.size();
    for (size_t i = 0; i < header.size(); ++i) {
      if (!col.emplace(std::string(header[i]), i).second) {
        return InvalidArgument(source + ":1: column " + QuoteForMessage(header[i]) + " appears twice");
      }
    }
  }
  for (const char* required : {"job_id", "submit_time", "num_gpus", "duration"}) {
    if (!col.count(required)) {
      return InvalidArgument(source + ":1: missing column \"" + required + "\"");
    }
  }
  auto index = [&](const char* name) -> int64_t {
    auto it = col.find(name);
    return it == col.end() ? -1 : static_cast<int64_t>(it->second);
  };
  const int64_t c_id = index("job_id"), c_submit = index("submit_time"), c_gpus = index("num_gpus"),
                c_dur = index("duration"), c_user = index("user"), c_tenant = index("tenant"),
                c_prio = index("priority"), c_status = index("status"), c_milli = index("gpu_milli"),
                c_cens = index("censored");

  std::vector<TraceJob> jobs;
  int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto f = SplitCsv(line);
    const std::string where = source + ":" + std::to_string(line_no) + ": ";
    if (f.size() < columns) {
      return InvalidArgument(where + "expected " + std::to_string(columns) + " columns, got " +
                             std::to_string(f.size()));
    }
    auto text = [&](int64_t c) { return c < 0 ? std::string() : std::string(f[c]); };
    auto integer = [&](int64_t c, const char* name, int64_t fallback, int64_t& out) -> Status {
      if (c < 0 || f[c].empty()) {
        out = fallback;
        return Status::Ok();
      }
      if (!ParseInt(f[c], out)) {
        return InvalidArgument(where + name + ": not an integer: " + QuoteForMessage(f[c]));
      }
      return Status::Ok();
    };
    TraceJob j;
    j.id = text(c_id);
    if (j.id.empty()) return InvalidArgument(where + "job_id: empty");
    // Bounds far beyond any real trace, so that the simulator's arithmetic
    // (milliseconds, GPU-seconds) cannot overflow.
    auto bounded = [&](const char* name, int64_t v, int64_t min, int64_t max) -> Status {
      if (v >= min && v <= max) return Status::Ok();
      return InvalidArgument(where + name + ": must be from " + std::to_string(min) + " to " + std::to_string(max) +
                             ", got " + std::to_string(v));
    };
    RETURN_IF_ERROR(integer(c_submit, "submit_time", -1, j.submit_s));
    RETURN_IF_ERROR(bounded("submit_time", j.submit_s, 0, kMaxTraceSeconds));
    RETURN_IF_ERROR(integer(c_gpus, "num_gpus", -1, j.num_gpus));
    RETURN_IF_ERROR(bounded("num_gpus", j.num_gpus, 0, kMaxTraceGpus));
    RETURN_IF_ERROR(integer(c_dur, "duration", -1, j.duration_s));
    if (j.duration_s < -1) return InvalidArgument(where + "duration: must be >= 0 or -1 (unknown)");
    RETURN_IF_ERROR(bounded("duration", j.duration_s, -1, kMaxTraceSeconds));
    j.user = text(c_user);
    j.tenant = text(c_tenant);
    RETURN_IF_ERROR(integer(c_prio, "priority", 0, j.priority));
    RETURN_IF_ERROR(bounded("priority", j.priority, -1'000'000'000, 1'000'000'000));
    j.status = text(c_status);
    RETURN_IF_ERROR(integer(c_milli, "gpu_milli", j.num_gpus * 1000, j.gpu_milli));
    RETURN_IF_ERROR(bounded("gpu_milli", j.gpu_milli, 0, kMaxTraceGpus * 1000));
    int64_t censored = 0;
    RETURN_IF_ERROR(integer(c_cens, "censored", 0, censored));
    j.censored = censored != 0;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

StatusOr<std::vector<TraceJob>> ReadTraceFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open trace file " + path);
  return ReadTrace(in, path);
}

}  // namespace muster::sim
