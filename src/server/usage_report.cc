#include "server/usage_report.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace muster::server {

using nlohmann::json;

StatusOr<UsageGrouping> ParseUsageGrouping(const std::string& text) {
  if (text == "queue") return UsageGrouping::kQueue;
  if (text == "user") return UsageGrouping::kUser;
  if (text == "queue,user" || text == "user,queue") return UsageGrouping::kQueueUser;
  if (text == "job") return UsageGrouping::kJob;
  if (text == "pool") return UsageGrouping::kPool;
  return InvalidArgument("must be queue, user, queue,user, pool or job, got \"" + text + "\"", "by");
}

const char* UsageGroupingName(UsageGrouping by) {
  switch (by) {
    case UsageGrouping::kQueue:
      return "queue";
    case UsageGrouping::kUser:
      return "user";
    case UsageGrouping::kQueueUser:
      return "queue,user";
    case UsageGrouping::kJob:
      return "job";
    case UsageGrouping::kPool:
      return "pool";
  }
  return "queue";
}

std::optional<double> UsageTotals::Efficiency() const {
  if (measured_gpu_seconds <= 0) return std::nullopt;
  return busy_gpu_seconds / measured_gpu_seconds;
}

UsageReport::UsageReport(int64_t from_ms, int64_t to_ms, int64_t now_ms, UsageGrouping by, PriceOf price)
    : from_ms_(from_ms), to_ms_(to_ms), now_ms_(now_ms), by_(by), price_(std::move(price)) {}

bool UsageReport::Charge(int64_t start_ms, int64_t end_ms, const std::vector<Held>& gpus,
                         std::optional<double> utilization, UsageTotals& t,
                         std::map<std::string, UsageTotals>& by_pool) const {
  const int64_t from = std::max(start_ms, from_ms_);
  const int64_t to = std::min(end_ms, to_ms_);
  // An attempt counts when its span overlaps the window (one of no length,
  // when it lies inside).
  const bool instant_inside = start_ms == end_ms && start_ms >= from_ms_ && start_ms < to_ms_;
  if (to <= from && !instant_inside) return false;
  const double seconds = static_cast<double>(to - from) / 1000;
  for (const Held& held : gpus) {
    const double gpu_seconds = seconds * static_cast<double>(held.count);
    const double cost = gpu_seconds / 3600 * price_(held.pool, held.gpu_type);
    // By pool, only GPUs count: a CPU-only replica holds none of a pool's.
    for (UsageTotals* into : {&t, by_ == UsageGrouping::kPool && held.count > 0 ? &by_pool[held.pool] : nullptr}) {
      if (into == nullptr) continue;
      into->gpu_seconds += gpu_seconds;
      into->cost += cost;
      if (utilization) {
        into->measured_gpu_seconds += gpu_seconds;
        into->busy_gpu_seconds += gpu_seconds * *utilization;
      }
    }
  }
  return true;
}

namespace {

int64_t IntOr(const json& j, const char* key, int64_t fallback) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : fallback;
}

std::string StringOr(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::optional<double> Utilization(const json& j) {
  if (!j.is_object() || !j.contains("gpuUtilization") || !j["gpuUtilization"].is_number()) return std::nullopt;
  return std::clamp(j["gpuUtilization"].get<double>(), 0.0, 1.0);
}

void Accumulate(UsageTotals& into, const UsageTotals& t) {
  into.gpu_seconds += t.gpu_seconds;
  into.cost += t.cost;
  into.measured_gpu_seconds += t.measured_gpu_seconds;
  into.busy_gpu_seconds += t.busy_gpu_seconds;
}

}  // namespace

void UsageReport::Add(const store::JobRow& row) {
  const json status = json::parse(row.status_json, nullptr, false);
  if (!status.is_object()) return;
  // Records written before they named each replica's GPUs: the spec's.
  std::optional<Held> spec_gpus;
  auto from_spec = [&]() -> const Held& {
    if (!spec_gpus) {
      const json spec = json::parse(row.spec_json, nullptr, false);
      const json* resources = spec.is_object() && spec.contains("resources") ? &spec["resources"] : nullptr;
      spec_gpus =
          Held{resources ? StringOr(*resources, "gpuType") : "", "", resources ? IntOr(*resources, "gpus", 0) : 0};
    }
    return *spec_gpus;
  };

  // A replica's GPUs in an attempt record.
  auto held_by = [](const json& replica) {
    return Held{StringOr(replica, "gpuType"), StringOr(replica, "pool"), IntOr(replica, "gpus", 0)};
  };
  UsageTotals mine;
  std::map<std::string, UsageTotals> pools;  // by pool only
  bool overlapped = false;
  int32_t last_attempt = 0;
  std::optional<int32_t> exit_code;
  int32_t exit_signal = 0;
  static const json kNone = json::array();
  const json& history =
      status.contains("attemptHistory") && status["attemptHistory"].is_array() ? status["attemptHistory"] : kNone;
  for (const json& r : history) {
    if (!r.is_object()) continue;
    std::vector<Held> gpus;
    const json& replicas = r.contains("replicas") && r["replicas"].is_array() ? r["replicas"] : kNone;
    for (const json& replica : replicas) {
      if (!replica.is_object()) continue;
      if (replica.contains("startTime") && replica.contains("gpus")) {
        // An elastic job's replica that held its GPUs for part of the attempt.
        overlapped |= Charge(IntOr(replica, "startTime", 0), IntOr(replica, "endTime", 0), {held_by(replica)},
                             Utilization(r), mine, pools);
      } else if (replica.contains("gpus")) {
        gpus.push_back(held_by(replica));
      } else {
        gpus.push_back(from_spec());
      }
    }
    overlapped |= Charge(IntOr(r, "startTime", 0), IntOr(r, "endTime", 0), gpus, Utilization(r), mine, pools);
    last_attempt = static_cast<int32_t>(IntOr(r, "attempt", last_attempt));
    exit_code.reset();
    exit_signal = 0;
    if (r.contains("exitCode") && r["exitCode"].is_number_integer()) {
      exit_code = r["exitCode"].get<int32_t>();
      exit_signal = static_cast<int32_t>(IntOr(r, "signal", 0));
    }
  }
  // The attempt holding GPUs now (unless its record is already written).
  const json& attempt = status.contains("attempt") ? status["attempt"] : kNone;
  const json& allocations = status.contains("allocations") ? status["allocations"] : kNone;
  if (attempt.is_object() && IntOr(attempt, "attempt", 0) > last_attempt && allocations.is_array() &&
      !allocations.empty()) {
    std::vector<Held> gpus;
    for (const json& a : allocations) {
      if (!a.is_object() || !a.contains("gpus") || !a["gpus"].is_array()) continue;
      gpus.push_back({StringOr(a, "gpuType"), StringOr(a, "pool"), static_cast<int64_t>(a["gpus"].size())});
    }
    const int64_t start = IntOr(attempt, "startTime", row.start_ms.value_or(now_ms_));
    overlapped |= Charge(start, std::max(start, now_ms_), gpus, Utilization(attempt), mine, pools);
    last_attempt = static_cast<int32_t>(IntOr(attempt, "attempt", last_attempt));
  }
  // By job, one that held no GPU in the window is still listed (as sacct
  // lists a job cancelled before it ran); the store's filter already
  // keeps to jobs whose life overlaps the window.
  if (!overlapped && by_ != UsageGrouping::kJob) return;
  mine.jobs = 1;

  total_.jobs += 1;
  Accumulate(total_, mine);
  if (by_ == UsageGrouping::kPool) {
    for (const auto& [pool, t] : pools) {
      UsageLine& line = lines_[{"", "", pool, 0}];
      line.pool = pool;
      line.totals.jobs += 1;
      Accumulate(line.totals, t);
    }
    return;
  }
  const bool by_queue = ByQueue(by_);
  const bool by_user = ByUser(by_);
  const int64_t job = by_ == UsageGrouping::kJob ? row.id : 0;
  UsageLine& line = lines_[{by_queue ? row.queue : "", by_user ? row.user : "", "", job}];
  line.queue = by_queue ? row.queue : "";
  line.user = by_user ? row.user : "";
  line.totals.jobs += 1;
  Accumulate(line.totals, mine);
  if (by_ == UsageGrouping::kJob) {
    line.job = row.id;
    line.name = row.name;
    line.state = row.state;
    line.reason = row.reason;
    line.submit_ms = row.submit_ms;
    line.start_ms = row.start_ms;
    line.end_ms = row.end_ms;
    line.attempts = std::max(row.attempts, last_attempt);
    line.exit_code = exit_code;
    line.exit_signal = exit_signal;
  }
}

std::vector<UsageLine> UsageReport::Lines() const {
  std::vector<UsageLine> out;
  out.reserve(lines_.size());
  for (const auto& [key, line] : lines_) out.push_back(line);
  if (by_ == UsageGrouping::kJob) {
    std::sort(out.begin(), out.end(), [](const UsageLine& a, const UsageLine& b) { return a.job < b.job; });
  }
  return out;
}

}  // namespace muster::server
