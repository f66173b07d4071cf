// PreemptionRecord: what the control loop remembers of the preemptions
// under way, one concern of ControlLoop (control_loop_preemption.cc
// applies the scheduler's preemptions through it).
//
// - Holds. A preemptor's victims are stopped like a requeue, and the
//   capacity they free is held for it (ClusterState::Nominate) until it
//   starts. A hold whose preemptor has not started by its deadline (it was
//   cancelled or held, or its node failed) lapses: Sweep returns it, and
//   the loop drops the nomination and makes its victims immune.
// - Immunity. A lapsed hold's victims are not evicted again until an
//   attempt that started after the lapse has ended (EndsImmunity).
// - Grace cuts. A victim whose grace a preemptor's class cut
//   (preemptGrace): its agent hears the shorter grace with the stop, as
//   long as that attempt lasts.
//
// Kept in memory: a restart drops holds and cuts (the victims were
// already requeued) and immunity. Bookkeeping only: the loop applies what
// it returns to the cluster state and the store.
//
// Thread-safety: none; the loop's thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/time.h"
#include "proto/agent_protocol.h"

namespace muster::server {

class PreemptionRecord {
 public:
  struct Hold {
    std::vector<int64_t> victims;
    Time deadline;
    int64_t gpus = 0;  // held for the preemptor (metrics)
  };
  // Where a hold's preemptor stands, as the loop sees it.
  enum class Preemptor {
    kStarted,  // running, or ended after it started: the hold served
    kWaiting,  // pending: the hold stands until its deadline
    kGone,     // held, cancelled, or ended without starting
  };
  struct Lapsed {
    int64_t preemptor = 0;
    Preemptor was = Preemptor::kGone;
    std::vector<int64_t> victims;
  };

  void AddHold(int64_t preemptor, Hold hold) { holds_[preemptor] = std::move(hold); }
  // The GPUs every hold keeps for its preemptor.
  int64_t HeldGpus() const;
  // Forgets holds whose preemptor started; returns those that lapsed
  // (their preemptor gone, or still waiting at the deadline), forgotten
  // too, by preemptor id.
  std::vector<Lapsed> Sweep(Time now, const std::function<Preemptor(int64_t)>& preemptor);

  // `job` is immune from `since` on.
  void MarkImmune(int64_t job, Time since) { immune_since_[job] = since; }
  // An attempt of `job` that started at `started` has ended: true (and
  // forgotten) when that ends its immunity, i.e. it started after it.
  bool EndsImmunity(int64_t job, Time started);
  bool immune(int64_t job) const { return immune_since_.count(job) > 0; }

  // The stop of `job`'s attempt `attempt` gets at most `grace`.
  void CutGrace(int64_t job, int32_t attempt, Duration grace) { cuts_[job] = {attempt, grace}; }
  // The cuts an agent hears: `on_node(job, attempt)` says whether that
  // attempt has a replica on the node (nullopt: the attempt is gone, and
  // its cut is forgotten).
  std::vector<proto::GraceCut> CutsOn(const std::function<std::optional<bool>(int64_t, int32_t)>& on_node);

 private:
  struct Cut {
    int32_t attempt = 0;
    Duration grace;
  };
  std::unordered_map<int64_t, Hold> holds_;  // by preemptor
  std::unordered_map<int64_t, Time> immune_since_;
  std::unordered_map<int64_t, Cut> cuts_;
};

}  // namespace muster::server
