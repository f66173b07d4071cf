// NodeLiveness: which agent-served nodes are alive, unreachable or lost.
//
// A node is Ready while its agent syncs. Silent for more than
// unreachable_after, it is Unreachable: no new work, its jobs keep running
// (the agent may only be slow). Silent for more than lost_after, and long
// enough that its tasks have fenced themselves (FencedAfter), it is Lost:
// the owner ends its replicas and requeues their gangs. An agent that syncs
// again makes its node Ready again.
//
// The mass-silence guard. Many nodes going silent together is more likely
// the server's own network than a mass failure, so their loss is held
// back. It judges a burst, not the standing count of dead nodes:
//   1. A node's burst is the nodes silent and not lost whose silence began
//      within burst_window of its own (by their last syncs), itself included.
//   2. When a node crosses lost_after and its burst holds at least 3 nodes
//      and more than max_lost_fraction of the nodes not lost, its loss is
//      held back: a ManyNodesSilent event says so when nodes are first held.
//   3. A hold lasts at most mass_silence_hold past lost_after (by then every
//      task there has long fenced itself): the node is lost after all
//      (SilenceHoldEnded). An operator may end it sooner with DeclareLost.
// Nodes dead for good (a rack retired, junk registrations) are lost once
// their hold ends and then count no more; and a node that dies later is
// not in their burst, so it is lost on time.
// Example (lost_after 120 s, window 60 s, fraction 0.3, hold 10 min, 30
// nodes): 10 nodes go silent at t=0; from t=120 s they are held (a burst of
// 10 > 9); at t=720 s they are lost; a node silent from t=1000 s is lost at
// t=1120 s (a burst of 1).
//
// Thread-safety: none; one owner thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "core/cluster_state.h"
#include "lifecycle/effects.h"

namespace muster::lifecycle {

struct LivenessOptions {
  Duration unreachable_after = Duration::Seconds(20);
  Duration lost_after = Duration::Seconds(120);
  Duration lease = Duration::Seconds(60);  // an agent's tasks fence themselves this long after its last sync
  double max_lost_fraction = 0.3;
  Duration burst_window = Duration::Seconds(60);
  Duration mass_silence_hold = Duration::Minutes(10);
};

enum class NodeCondition : uint8_t { kReady, kUnreachable, kLost };
const char* NodeConditionName(NodeCondition c);  // "Ready"

class NodeLiveness {
 public:
  // How long the shims take to fence after the lease runs out, beyond the
  // tasks' grace: they look at the lease each second, then SIGKILL.
  static constexpr Duration kFenceSlack = Duration::Seconds(2);

  // `state` (for node names) and `clock` must outlive this object.
  // `longest_grace(node)`: the longest grace period a task on `node` was
  // started with (its stop signal to SIGKILL); none given: zero.
  NodeLiveness(const core::ClusterState& state, const Clock& clock, LivenessOptions options,
               std::function<Duration(core::NodeIndex)> longest_grace = nullptr);

  // Starts watching `node`, served by an agent: heard now, or (`synced`
  // false) restored from the store after a restart: a fresh grace period,
  // but Unreachable (no new work) until its agent syncs, since it may have
  // died before the restart.
  void Watch(core::NodeIndex node, bool synced);
  bool Watched(core::NodeIndex node) const;
  // Its agent synced now. True when that made it Ready (from Unreachable or Lost).
  bool Heard(core::NodeIndex node);
  NodeCondition Of(core::NodeIndex node) const;
  // Its agent's last sync (a restored node: the restart).
  Time LastHeard(core::NodeIndex node) const;
  // How long after its agent's last sync a task of `node` may still run: a
  // shim whose lease ran out stops its task and kills it after its grace
  // (lease + longest grace + kFenceSlack). Only then may its jobs run
  // elsewhere without two copies of one.
  Duration FencedAfter(core::NodeIndex node) const;

  struct SweepResult {
    std::vector<core::NodeIndex> changed;  // became Unreachable, or Ready again
    std::vector<core::NodeIndex> lost;     // became Lost now: end their replicas
  };
  // Applies the rules above at the clock's time.
  SweepResult Sweep(Effects& fx);
  // An operator's word that `node` is gone: it becomes Lost now (the owner
  // ends its replicas). Refused for a node no agent serves, a node already
  // lost, and a node whose agent synced within FencedAfter: its tasks may
  // still run, and running them elsewhere too would make two copies.
  Status DeclareLost(core::NodeIndex node, const std::string& who, Effects& fx);
  // Why the replicas of a node Sweep found lost ended, in words, for
  // JobLifecycle::NodeLost ("was lost with its node n1 (silent for more
  // than 120 s)").
  std::string SilentTooLong(core::NodeIndex node) const;

 private:
  struct Entry {
    bool watched = false;
    bool synced = false;
    bool unreachable = false;
    bool lost = false;
    bool held = false;  // its loss is held back (rule 2)
    Time last_heard = Time::Zero();
  };
  const core::ClusterState& state_;
  const Clock& clock_;
  LivenessOptions options_;
  std::function<Duration(core::NodeIndex)> longest_grace_;
  std::vector<Entry> nodes_;  // by node index
};

}  // namespace muster::lifecycle
