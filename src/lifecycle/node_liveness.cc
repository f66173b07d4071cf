#include "lifecycle/node_liveness.h"

#include <algorithm>

namespace muster::lifecycle {

using core::NodeIndex;

const char* NodeConditionName(NodeCondition c) {
  switch (c) {
    case NodeCondition::kReady:
      return "Ready";
    case NodeCondition::kUnreachable:
      return "Unreachable";
    case NodeCondition::kLost:
      return "Lost";
  }
  return "?";
}

NodeLiveness::NodeLiveness(const core::ClusterState& state, const Clock& clock, LivenessOptions options,
                           std::function<Duration(NodeIndex)> longest_grace)
    : state_(state), clock_(clock), options_(options), longest_grace_(std::move(longest_grace)) {}

void NodeLiveness::Watch(NodeIndex node, bool synced) {
  if (nodes_.size() <= static_cast<size_t>(node)) nodes_.resize(static_cast<size_t>(node) + 1);
  Entry& w = nodes_[node];
  w.watched = true;
  w.synced = synced;
  w.unreachable = !synced;
  w.lost = false;
  w.held = false;
  w.last_heard = clock_.Now();
}

bool NodeLiveness::Watched(NodeIndex node) const {
  return node >= 0 && static_cast<size_t>(node) < nodes_.size() && nodes_[node].watched;
}

bool NodeLiveness::Heard(NodeIndex node) {
  if (!Watched(node)) Watch(node, true);
  Entry& w = nodes_[node];
  const bool back = w.unreachable || w.lost;
  w.synced = true;
  w.unreachable = false;
  w.lost = false;
  w.held = false;
  w.last_heard = clock_.Now();
  return back;
}

NodeCondition NodeLiveness::Of(NodeIndex node) const {
  if (!Watched(node)) return NodeCondition::kReady;
  const Entry& w = nodes_[node];
  return w.lost ? NodeCondition::kLost : w.unreachable ? NodeCondition::kUnreachable : NodeCondition::kReady;
}

Time NodeLiveness::LastHeard(NodeIndex node) const { return Watched(node) ? nodes_[node].last_heard : Time::Zero(); }

Duration NodeLiveness::FencedAfter(NodeIndex node) const {
  return options_.lease + (longest_grace_ ? longest_grace_(node) : Duration::Zero()) + kFenceSlack;
}

NodeLiveness::SweepResult NodeLiveness::Sweep(Effects& fx) {
  SweepResult out;
  const Time now = clock_.Now();
  std::vector<NodeIndex> candidates;
  std::vector<Time> silence_starts;  // of every node silent and not lost, sorted below
  size_t alive = 0;                  // watched and not lost
  for (NodeIndex n = 0; n < static_cast<NodeIndex>(nodes_.size()); ++n) {
    Entry& w = nodes_[n];
    if (!w.watched) continue;
    const Duration silent_for = now - w.last_heard;
    const bool silent = !w.synced || silent_for > options_.unreachable_after;
    if (silent != w.unreachable) {
      w.unreachable = silent;
      out.changed.push_back(n);
    }
    if (w.lost) continue;
    ++alive;
    if (!silent) continue;
    silence_starts.push_back(w.last_heard);
    if (silent_for > options_.lost_after && silent_for > FencedAfter(n)) candidates.push_back(n);
  }
  std::sort(silence_starts.begin(), silence_starts.end());
  size_t newly_held = 0, largest_burst = 0, expired = 0;
  for (NodeIndex n : candidates) {
    Entry& w = nodes_[n];
    const auto from =
        std::lower_bound(silence_starts.begin(), silence_starts.end(), w.last_heard - options_.burst_window);
    const auto to =
        std::upper_bound(silence_starts.begin(), silence_starts.end(), w.last_heard + options_.burst_window);
    const size_t burst = static_cast<size_t>(to - from);
    if (burst >= 3 && static_cast<double>(burst) > options_.max_lost_fraction * static_cast<double>(alive)) {
      if (now - (w.last_heard + options_.lost_after) < options_.mass_silence_hold) {
        if (!w.held) ++newly_held;
        w.held = true;
        largest_burst = std::max(largest_burst, burst);
        continue;
      }
      ++expired;
    }
    w.lost = true;
    w.held = false;
    out.lost.push_back(n);
  }
  if (newly_held > 0) {
    fx.events.push_back({0, EventType::kManyNodesSilent, "NoRequeue",
                         std::to_string(largest_burst) + " of " + std::to_string(alive) +
                             " nodes went silent together; assuming the fault is this server's, their jobs are not "
                             "requeued for up to " +
                             options_.mass_silence_hold.ToString() + " more"});
  }
  if (expired > 0) {
    fx.events.push_back({0, EventType::kSilenceHoldEnded, "HoldExpired",
                         std::to_string(expired) + " nodes held back as part of a mass silence stayed silent " +
                             options_.mass_silence_hold.ToString() + " past lostAfter: they are lost after all"});
  }
  for (NodeIndex n : out.lost) {
    fx.events.push_back({0, EventType::kNodeLost, "Silent",
                         state_.nodes()[n].spec.name + " has not synced for " +
                             std::to_string((now - nodes_[n].last_heard).seconds()) + " s; its jobs are requeued"});
  }
  return out;
}

std::string NodeLiveness::SilentTooLong(NodeIndex node) const {
  return "was lost with its node " + state_.nodes()[node].spec.name + " (silent for more than " +
         std::to_string(std::max(options_.lost_after, FencedAfter(node)).seconds()) + " s)";
}

Status NodeLiveness::DeclareLost(NodeIndex node, const std::string& who, Effects& fx) {
  const std::string& name = state_.nodes()[node].spec.name;
  if (!Watched(node)) return FailedPrecondition("node " + name + " has no agent; nothing runs there to be lost");
  Entry& w = nodes_[node];
  if (w.lost) return FailedPrecondition("node " + name + " is already lost");
  const Duration silent_for = clock_.Now() - w.last_heard;
  if (const Duration fenced = FencedAfter(node); silent_for <= fenced) {
    return FailedPrecondition("node " + name + " is alive: its agent synced " + std::to_string(silent_for.seconds()) +
                              " s ago, and its tasks may run until their lease (" + options_.lease.ToString() +
                              ") and then their grace period run out; declare it lost once it has been silent for " +
                              fenced.ToString());
  }
  w.lost = true;
  w.held = false;
  w.unreachable = true;
  fx.events.push_back({0, EventType::kNodeLost, "Declared",
                       name + " was declared lost by " + who + " (silent for " + std::to_string(silent_for.seconds()) +
                           " s); its jobs are requeued"});
  return Status::Ok();
}

}  // namespace muster::lifecycle
