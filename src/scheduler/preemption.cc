#include "scheduler/preemption.h"

#include <algorithm>
#include <utility>

namespace muster::scheduler {
namespace {

using core::Allocation;
using core::JobId;
using core::Resources;
using core::RunningJob;
using Candidate = VictimPool::Candidate;

// (cost, victims) lexicographically.
bool Cheaper(int64_t cost, size_t count, int64_t best_cost, size_t best_count) {
  return cost != best_cost ? cost < best_cost : count < best_count;
}

constexpr size_t kExactPerNode = 8;  // subsets enumerated up to this many victims on a node
constexpr size_t kGreedyCandidates = 1024;

class VictimSearch {
 public:
  VictimSearch(const core::PendingJob& job, const Shape& shape, const VictimPool& pool, const FreeIndex& free_now,
               const std::function<bool(NodeIndex)>& usable, const std::unordered_set<JobId>& taken,
               const std::function<bool(const Candidate&)>& eligible)
      : job_(job),
        shape_(shape),
        pool_(pool),
        free_now_(free_now),
        usable_(usable),
        taken_(taken),
        eligible_(eligible) {}

  std::optional<core::Preemption> Run() {
    std::optional<core::Preemption> best = OneNode();
    // One replica is always placed on one node: step 1 covered it.
    if (shape_.replicas > 1 && shape_.scope != core::TopologyScope::kNode) {
      if (auto g = Greedy()) {
        if (!best || Cheaper(g->lost_gpu_seconds, g->victims.size(), best->lost_gpu_seconds, best->victims.size())) {
          best = std::move(g);
        }
      }
    }
    if (best) best->job = job_.id;
    return best;
  }

 private:
  const Candidate& At(size_t i) const { return pool_.candidates()[i]; }
  bool Eligible(size_t i) const { return !taken_.count(At(i).job->id) && eligible_(At(i)); }

  bool NodeMatches(NodeIndex n) const {
    if (n < 0 || static_cast<size_t>(n) >= free_now_.num_nodes() || !free_now_.indexed(n) || !usable_(n)) {
      return false;
    }
    return shape_.per_replica.gpus == 0 || shape_.gpu_type == core::kAnyGpuType ||
           free_now_.type_of(n) == shape_.gpu_type;
  }

  // Step 1: the whole gang on one node.
  std::optional<core::Preemption> OneNode() {
    const Resources need = shape_.per_replica * shape_.replicas;
    auto fits = [&](const Resources& r) { return need.FitsIn(r); };
    std::optional<core::Preemption> best;
    std::vector<std::pair<size_t, Resources>> e;
    std::vector<size_t> chosen;
    for (NodeIndex n : pool_.nodes()) {
      const auto all = pool_.OnNode(n);
      // Nodes come cheapest candidate first: no later node can do better.
      if (best && At(all.front().first).cost > best->lost_gpu_seconds) break;
      if (!NodeMatches(n)) continue;
      const Resources base = free_now_.avail(n);
      if (fits(base)) continue;  // no victim needed here (the caller found no placement)
      e.clear();
      Resources most = base;
      for (const auto& c : all) {
        if (!Eligible(c.first)) continue;
        e.push_back(c);
        most += c.second;
      }
      if (e.empty() || !fits(most)) continue;
      chosen.clear();
      int64_t cost = 0;
      bool found = false;
      if (e.size() <= kExactPerNode) {
        for (uint32_t mask = 1; mask < (1u << e.size()); ++mask) {
          Resources r = base;
          int64_t c = 0;
          for (size_t k = 0; k < e.size(); ++k) {
            if (mask & (1u << k)) {
              r += e[k].second;
              c += At(e[k].first).cost;
            }
          }
          const size_t count = static_cast<size_t>(__builtin_popcount(mask));
          if (!fits(r) || (found && !Cheaper(c, count, cost, chosen.size()))) continue;
          found = true;
          cost = c;
          chosen.clear();
          for (size_t k = 0; k < e.size(); ++k) {
            if (mask & (1u << k)) chosen.push_back(e[k].first);
          }
        }
      } else {
        Resources r = base;  // cheapest first
        for (const auto& [i, freed] : e) {
          r += freed;
          cost += At(i).cost;
          chosen.push_back(i);
          if (fits(r)) {
            found = true;
            break;
          }
        }
      }
      if (!found || (best && !Cheaper(cost, chosen.size(), best->lost_gpu_seconds, best->victims.size()))) {
        continue;
      }
      best.emplace();
      best->lost_gpu_seconds = cost;
      for (size_t i : chosen) best->victims.push_back(At(i).job->id);
      best->allocations = {Allocation{n, shape_.replicas, need}};
    }
    return best;
  }

  // Returns (sign +1) or takes back (-1) what `r` holds on usable nodes.
  void Apply(FreeIndex& trial, const RunningJob& r, int sign, std::vector<NodeIndex>* grown) {
    for (const Allocation& a : r.allocations) {
      if (!NodeMatches(a.node)) continue;
      const Resources avail = sign > 0 ? trial.avail(a.node) + a.resources : trial.avail(a.node) - a.resources;
      trial.SetAvail(a.node, avail);
      if (grown) grown->push_back(a.node);
    }
  }

  // Step 2: cheapest first until the gang fits anywhere, then prune.
  std::optional<core::Preemption> Greedy() {
    FreeIndex trial = free_now_;
    std::vector<size_t> chosen;
    std::optional<std::vector<Allocation>> placement;
    const auto& cands = pool_.candidates();
    for (size_t i = 0; i < cands.size() && chosen.size() < kGreedyCandidates && !placement; ++i) {
      if (!Eligible(i)) continue;
      std::vector<NodeIndex> grown;
      Apply(trial, *cands[i].job, +1, &grown);
      if (grown.empty()) continue;  // frees nothing this job can use
      chosen.push_back(i);
      for (NodeIndex n : grown) {
        if (MayFitAfterGrowth(trial, shape_, n)) {
          placement = FindPlacement(trial, shape_);
          break;
        }
      }
    }
    if (!placement) return std::nullopt;
    for (size_t k = chosen.size(); k-- > 0;) {
      Apply(trial, *cands[chosen[k]].job, -1, nullptr);
      if (auto p = FindPlacement(trial, shape_)) {
        placement = std::move(p);
        chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        Apply(trial, *cands[chosen[k]].job, +1, nullptr);
      }
    }
    core::Preemption out;
    out.allocations = std::move(*placement);
    for (size_t i : chosen) {
      out.victims.push_back(cands[i].job->id);
      out.lost_gpu_seconds += cands[i].cost;
    }
    return out;
  }

  const core::PendingJob& job_;
  const Shape& shape_;
  const VictimPool& pool_;
  const FreeIndex& free_now_;
  const std::function<bool(NodeIndex)>& usable_;
  const std::unordered_set<JobId>& taken_;
  const std::function<bool(const Candidate&)>& eligible_;
};

}  // namespace

Status PreemptionOptions::Validate() const {
  if (min_run_time < Duration::Zero()) return InvalidArgument("must be >= 0", "scheduler.preemption.minRunTime");
  if (max_per_cycle < 0) {
    return InvalidArgument("must be >= 0, got " + std::to_string(max_per_cycle), "scheduler.preemption.maxPerCycle");
  }
  return Status::Ok();
}

int64_t LostGpuSeconds(const RunningJob& r, Time now) {
  const Duration since = now - r.NewestCheckpoint(now);
  return since <= Duration::Zero() ? 0 : r.gpus() * (since.millis() / 1000);
}

bool AnyVictimClass(const core::ClusterSnapshot& snap, int32_t preemptor_class, const PreemptionOptions& options) {
  const auto n = static_cast<int32_t>(snap.classes.size());
  if (!options.enabled || preemptor_class < 0 || preemptor_class >= n || !snap.classes[preemptor_class].may_preempt) {
    return false;
  }
  for (int32_t c = 0; c < n && c < static_cast<int32_t>(snap.running_per_class.size()); ++c) {
    if (snap.classes[c].preemptible && snap.classes[c].weight < snap.classes[preemptor_class].weight &&
        snap.running_per_class[c] > 0) {
      return true;
    }
  }
  return false;
}

VictimPool::VictimPool(const core::ClusterSnapshot& snap, const PreemptionOptions& options, Kind kind) {
  if (!options.enabled || snap.running == nullptr) return;
  const auto n = static_cast<int32_t>(snap.classes.size());
  const bool interactive = kind == Kind::kInteractive;
  int64_t top = INT64_MIN;  // the highest weight of a class that may preempt (interactive: of such a class)
  for (const core::PriorityClass& c : snap.classes) {
    if (c.may_preempt && (c.interactive || !interactive)) top = std::max(top, c.weight);
  }
  for (const auto& [id, r] : *snap.running) {
    if (r.priority_class < 0 || r.priority_class >= n || r.stopping || r.preempt_immune ||
        (!interactive && snap.now - r.start < options.min_run_time)) {
      continue;
    }
    const core::PriorityClass& c = snap.classes[r.priority_class];
    if (kind != Kind::kReclaimAny && !c.preemptible) continue;
    if ((kind == Kind::kByClass || interactive) && c.weight >= top) continue;
    candidates_.push_back({&r, LostGpuSeconds(r, snap.now), c.weight, c.preemptible});
  }
  std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.job->id < b.job->id;
  });
  // Per-node lists laid out one after the other: count, then fill.
  const size_t nodes = snap.nodes.size();
  begin_.assign(nodes + 1, 0);
  size_.assign(nodes, 0);
  for (const Candidate& c : candidates_) {
    for (const Allocation& a : c.job->allocations) ++begin_[a.node + 1];
  }
  for (size_t k = 0; k < nodes; ++k) begin_[k + 1] += begin_[k];
  entries_.resize(begin_[nodes]);
  for (size_t i = 0; i < candidates_.size(); ++i) {
    for (const Allocation& a : candidates_[i].job->allocations) {
      uint32_t& size = size_[a.node];
      if (size == 0) nodes_.push_back(a.node);  // first seen with its cheapest candidate
      auto* last = size > 0 ? &entries_[begin_[a.node] + size - 1] : nullptr;
      if (last != nullptr && last->first == i) {
        last->second += a.resources;  // a job listed twice on one node
      } else {
        entries_[begin_[a.node] + size++] = {i, a.resources};
      }
    }
  }
}

std::optional<core::Preemption> ChooseVictims(const core::PendingJob& job, const Shape& shape, const VictimPool& pool,
                                              const FreeIndex& free_now, const std::function<bool(NodeIndex)>& usable,
                                              const std::unordered_set<JobId>& taken,
                                              const std::function<bool(const Candidate&)>& eligible) {
  if (pool.candidates().empty()) return std::nullopt;
  return VictimSearch(job, shape, pool, free_now, usable, taken, eligible).Run();
}

}  // namespace muster::scheduler
