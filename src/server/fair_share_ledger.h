// FairShareLedger: the queues' fair-share usage as the control loop keeps
// it, one concern of ControlLoop.
//
// Before each scheduling cycle the loop calls Charge: the GPUs each queue's
// running jobs hold are charged to its decayed usage (scheduler/
// fairshare.h) for the time since the last charge, and, with metrics, to
// the GPU-time and cost counters by queue, GPU type and pool (at the
// prices in force). The cycle then reads each queue's points and share.
//
// Usage survives restarts: SaveIfDue writes it to the store's meta
// "fairShareUsage" ({"at": ms, "usage": {queue: GPU-seconds}}) at most
// every 10 s, Save when the loop stops, and Restore reads it at start.
//
// Thread-safety: none; the loop's thread owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/cluster_state.h"
#include "scheduler/fairshare.h"
#include "server/pool_prices.h"
#include "server/server_metrics.h"
#include "store/store.h"

namespace muster::server {

class FairShareLedger {
 public:
  static constexpr const char* kMetaKey = "fairShareUsage";

  explicit FairShareLedger(const scheduler::FairShareOptions& options) : fairshare_(options) {}

  // New options (a reload, or queues made through the API): usage is kept.
  void SetOptions(const scheduler::FairShareOptions& options) { fairshare_.SetOptions(options); }
  bool enabled() const { return fairshare_.enabled(); }

  // Charges what `state`'s running jobs hold up to `now` (see above);
  // `metrics` may be null. Then points() and shares() are the cycle's.
  void Charge(Time now, const core::ClusterState& state, const PoolPrices& prices, ServerMetrics* metrics);
  // The points of each of `num_queues` queues given the snapshot's quotas
  // and schedulable GPUs, kept for points() (a cycle's priorities, `why`).
  const std::vector<int64_t>& UpdatePoints(int32_t num_queues, const core::ClusterSnapshot& snap);
  // Per dense queue id, as of the last cycle (empty before one).
  const std::vector<int64_t>& points() const { return points_; }
  const std::vector<double>& shares() const { return shares_; }

  // The usage to write (empty when fair share is off or nothing was
  // charged yet), and when it was last written.
  store::WriteBatch Save(Time now, const core::ClusterState& state);
  // The same, once 10 s have passed since the last write.
  store::WriteBatch SaveIfDue(Time now, const core::ClusterState& state);
  // Reads what Save wrote (`saved`: the meta's value, if any); DataLoss
  // naming the meta when it is damaged. Queues are named through `state`.
  Status Restore(const std::optional<std::string>& saved, core::ClusterState& state, Time now);

 private:
  void ChargeMetrics(Time now, const core::ClusterState& state, const PoolPrices& prices, ServerMetrics& metrics);

  scheduler::FairShare fairshare_;
  std::vector<int64_t> points_;  // per dense queue id, from the last cycle
  std::vector<double> shares_;   // the same, queue shares
  Time last_save_;               // usage was written to the store then
  Time last_charge_;             // the metrics were charged up to here
};

}  // namespace muster::server
