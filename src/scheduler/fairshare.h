// FairShare: decayed usage per queue and the fair-share term of priority.
//
// Usage is GPU-seconds, decayed with a half-life (default 7 days): usage
// recorded t ago counts 2^(-t / half_life). A queue's term is
//
//   points = weight x 2^(-(usage_q / usage_total) / (share_q / share_total))
//
// (Slurm's classic fair-share factor): a queue that has used nothing gets
// the full weight, one that has used exactly its share gets half of it, one
// that has used twice its share a quarter. Under sustained contention this
// pushes each queue's long-run usage toward its share.
//
// It is accounting, not scheduling: the owner of the cluster state (server
// control loop, simulator) calls Advance() with what is running, then hands
// Points() to the scheduler in the snapshot. Time comes in as arguments.
// Usage is floating point (it is a decayed sum, not an allocation).
//
// With guarantees (queues not nested), a queue's share in that formula is
// what it is owed when every queue wants more than it gets: its guarantee
// plus its share, by weight, of what the guarantees leave,
//
//   target_q = guarantee_q + share_q / share_total x (capacity - guarantees)
//
// so that priority aims at the same split as reclaims (queue_quotas.h):
// queues of 64 GPUs guaranteed 48 and 8 with equal weights are owed 52 and
// 12, not 32 each, and the priority term does not hand the one guaranteed
// 8 the GPUs the other then reclaims.
//
// Example: half-life 7 d, two queues with equal shares, A has run 8 GPUs for
// a day and B nothing: A's points = w x 2^(-1/0.5) = w/4, B's = w.
//
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/snapshot.h"

namespace muster::scheduler {

struct FairShareOptions {
  Duration half_life = Duration::Hours(int64_t{7} * 24);
  int64_t weight = 5'000;  // points at zero usage; 0 turns fair-share off
  // Configured shares by queue name; a queue not listed has share 1.
  std::map<std::string, double> shares;

  Status Validate() const;
};

class FairShare {
 public:
  explicit FairShare(FairShareOptions options) : options_(std::move(options)) {}
  // New options (a reload): usage is kept; every queue is to be named
  // again (NameQueue from 0) for its share.
  void SetOptions(FairShareOptions options) {
    options_ = std::move(options);
    named_ = 0;
  }

  // Sets a queue's share (default 1). Queues are dense ids.
  void SetShare(int32_t queue, double share);
  // Gives dense queue `queue` its configured share by name (options.shares).
  // Owners call it for every queue id the cluster state has created:
  //   for (q = fs.named(); q < state.num_queues(); ++q) fs.NameQueue(q, state.QueueName(q));
  void NameQueue(int32_t queue, const std::string& name);
  int32_t named() const { return named_; }
  // Decays all usage to `now`, then charges each (queue, GPUs) pair in
  // `running` for the time since the previous call. Time never goes back.
  void Advance(Time now, const std::vector<std::pair<int32_t, int64_t>>& running);
  // The share of every queue in [0, num_queues) (1 where none is set).
  std::vector<double> Shares(int32_t num_queues) const;
  // The fair-share points of every queue in [0, num_queues); `quotas` (per
  // dense queue, may be shorter) and `capacity` (GPUs) give the guarantees'
  // targets (above; ignored when a queue is nested or none has a guarantee).
  std::vector<int64_t> Points(int32_t num_queues, std::span<const core::QueueQuota> quotas = {},
                              int64_t capacity = 0) const;
  // Decayed GPU-seconds of `queue`.
  double Usage(int32_t queue) const;
  // Starts from usage saved at `at` (a restart): the next Advance() decays
  // it from then and charges what runs for the time since.
  void Restore(Time at, const std::vector<std::pair<int32_t, double>>& usage);
  // The time usage was last advanced to (Time::Zero() before the first call).
  Time last() const { return last_; }
  bool enabled() const { return options_.weight > 0; }

 private:
  void Grow(int32_t queue);

  FairShareOptions options_;
  std::vector<double> usage_;
  std::vector<double> share_;
  int32_t named_ = 0;
  Time last_;
  bool started_ = false;
};

}  // namespace muster::scheduler
