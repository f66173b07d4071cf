// UsageReport: GPU-hours, cost, job count and efficiency over a time window,
// by queue, user, both, node pool, or job (as Slurm's sreport and sacct),
// from the stored jobs' attempts.
//
// What is charged: each attempt holds its replicas' GPUs from its bind to
// the end of its last replica (the span the scheduler keeps them from
// others), so an attempt's GPU-seconds are its span, cut to the window,
// times the GPUs of its replicas; its cost, those GPU-hours times the
// price of their GPU type in the pool of their node (PoolPrices::
// PerGpuHour; the pool the attempt record names, "" in records written
// before they named one). A running
// attempt counts up to `now`. Efficiency is the mean GPU utilization its
// agents measured (agent/utilization_meter.h), weighted by GPU-seconds,
// over the attempts that have one: Slurm's seff. The same GPU-seconds feed
// the metric muster_queue_gpu_seconds_total as they accrue.
//
// A job counts in a line when an attempt of it overlaps the window; by job,
// every job given is listed, those that never ran with no usage. By pool, a
// job counts in the line of each pool it held GPUs in (its GPU-hours split
// between them; the total counts it once); records written before they
// named a pool go to the pool "".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace muster::server {

enum class UsageGrouping { kQueue, kUser, kQueueUser, kJob, kPool };
// "queue", "user", "queue,user" (or "user,queue"), "job", "pool".
StatusOr<UsageGrouping> ParseUsageGrouping(const std::string& text);
const char* UsageGroupingName(UsageGrouping by);
// Whether lines name their queue, their user.
inline bool ByQueue(UsageGrouping by) {
  return by == UsageGrouping::kQueue || by == UsageGrouping::kQueueUser || by == UsageGrouping::kJob;
}
inline bool ByUser(UsageGrouping by) {
  return by == UsageGrouping::kUser || by == UsageGrouping::kQueueUser || by == UsageGrouping::kJob;
}

struct UsageTotals {
  int64_t jobs = 0;
  double gpu_seconds = 0;
  double cost = 0;
  double measured_gpu_seconds = 0;  // of attempts with a utilization
  double busy_gpu_seconds = 0;      // sum of utilization x GPU-seconds
  // busy / measured, or nullopt when nothing was measured.
  std::optional<double> Efficiency() const;
};

struct UsageLine {
  std::string queue, user, pool;  // as grouped (empty where not)
  UsageTotals totals;
  // By job only: the job's own fields.
  int64_t job = 0;
  std::string name, state, reason;
  int64_t submit_ms = 0;
  std::optional<int64_t> start_ms, end_ms;
  int32_t attempts = 0;
  std::optional<int32_t> exit_code;  // the last attempt's (AttemptRecord::exit_code)
  int32_t exit_signal = 0;
};

class UsageReport {
 public:
  using PriceOf = std::function<double(const std::string& pool, const std::string& gpu_type)>;
  // The window [from_ms, to_ms); `now_ms` ends the attempts still running.
  UsageReport(int64_t from_ms, int64_t to_ms, int64_t now_ms, UsageGrouping by, PriceOf price);

  // One stored job (any state): its attempts' share of the window.
  void Add(const store::JobRow& row);

  // The lines, in order of queue, user or job id; and their sum.
  std::vector<UsageLine> Lines() const;
  const UsageTotals& Total() const { return total_; }

 private:
  // GPUs of one type in one pool.
  struct Held {
    std::string gpu_type, pool;
    int64_t count = 0;
  };
  // One attempt's share: adds to `t` and says whether it overlapped.
  // By pool, `by_pool` gets each pool's share as well.
  bool Charge(int64_t start_ms, int64_t end_ms, const std::vector<Held>& gpus, std::optional<double> utilization,
              UsageTotals& t, std::map<std::string, UsageTotals>& by_pool) const;

  const int64_t from_ms_, to_ms_, now_ms_;
  const UsageGrouping by_;
  const PriceOf price_;
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, UsageLine> lines_;  // queue, user, pool, job
  UsageTotals total_;
};

}  // namespace muster::server
