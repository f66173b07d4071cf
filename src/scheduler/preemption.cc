#include "scheduler/preemption.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace muster::scheduler {
namespace {

using core::Allocation;
using core::JobId;
using core::Resources;
using core::RunningJob;

struct Candidate {
  const RunningJob* job = nullptr;
  int64_t cost = 0;
};

// (cost, victims) lexicographically.
bool Cheaper(int64_t cost, size_t count, int64_t best_cost, size_t best_count) {
  return cost != best_cost ? cost < best_cost : count < best_count;
}

constexpr size_t kExactPerNode = 12;   // subsets enumerated up to this many victims on a node
constexpr size_t kGreedyCandidates = 1024;

class VictimSearch {
 public:
  VictimSearch(const core::PendingJob& job, const Shape& shape, const FreeIndex& free_now,
               const std::function<bool(NodeIndex)>& usable)
      : job_(job), shape_(shape), free_now_(free_now), usable_(usable) {}

  std::optional<core::Preemption> Run(std::vector<Candidate> cands) {
    std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      return a.cost != b.cost ? a.cost < b.cost : a.job->id < b.job->id;
    });
    std::optional<core::Preemption> best = OneNode(cands);
    if (auto g = Greedy(cands)) {
      if (!best || Cheaper(g->lost_gpu_seconds, g->victims.size(), best->lost_gpu_seconds, best->victims.size())) {
        best = std::move(g);
      }
    }
    if (best) best->job = job_.id;
    return best;
  }

 private:
  bool NodeMatches(NodeIndex n) const {
    if (n < 0 || static_cast<size_t>(n) >= free_now_.num_nodes() || !free_now_.indexed(n) || !usable_(n)) {
      return false;
    }
    return shape_.per_replica.gpus == 0 || shape_.gpu_type == core::kAnyGpuType ||
           free_now_.type_of(n) == shape_.gpu_type;
  }

  // Step 1: the whole gang on one node.
  std::optional<core::Preemption> OneNode(const std::vector<Candidate>& cands) {
    // What each candidate frees on each matching node.
    std::unordered_map<NodeIndex, std::vector<std::pair<size_t, Resources>>> on_node;
    for (size_t i = 0; i < cands.size(); ++i) {
      for (const Allocation& a : cands[i].job->allocations) {
        if (!NodeMatches(a.node)) continue;
        auto& v = on_node[a.node];
        if (!v.empty() && v.back().first == i) {
          v.back().second += a.resources;
        } else {
          v.emplace_back(i, a.resources);
        }
      }
    }
    const Resources need = shape_.per_replica * shape_.replicas;
    auto fits = [&](const Resources& r) { return need.FitsIn(r); };
    std::optional<core::Preemption> best;
    std::vector<NodeIndex> nodes;
    for (const auto& [n, v] : on_node) nodes.push_back(n);
    std::sort(nodes.begin(), nodes.end());  // deterministic ties
    for (NodeIndex n : nodes) {
      const auto& v = on_node[n];
      const Resources base = free_now_.avail(n);
      if (fits(base)) continue;  // no victim needed here (the caller found no placement)
      std::vector<size_t> chosen;
      int64_t cost = 0;
      bool found = false;
      if (v.size() <= kExactPerNode) {
        for (uint32_t mask = 1; mask < (1u << v.size()); ++mask) {
          Resources r = base;
          int64_t c = 0;
          for (size_t k = 0; k < v.size(); ++k) {
            if (mask & (1u << k)) {
              r += v[k].second;
              c += cands[v[k].first].cost;
            }
          }
          const size_t count = static_cast<size_t>(__builtin_popcount(mask));
          if (!fits(r) || (found && !Cheaper(c, count, cost, chosen.size()))) continue;
          found = true;
          cost = c;
          chosen.clear();
          for (size_t k = 0; k < v.size(); ++k) {
            if (mask & (1u << k)) chosen.push_back(v[k].first);
          }
        }
      } else {
        Resources r = base;  // v is in cost order: candidates were sorted
        for (const auto& [i, freed] : v) {
          r += freed;
          cost += cands[i].cost;
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
      for (size_t i : chosen) best->victims.push_back(cands[i].job->id);
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
  std::optional<core::Preemption> Greedy(const std::vector<Candidate>& cands) {
    FreeIndex trial = free_now_;
    std::vector<size_t> chosen;
    std::optional<std::vector<Allocation>> placement;
    for (size_t i = 0; i < cands.size() && chosen.size() < kGreedyCandidates && !placement; ++i) {
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
  const FreeIndex& free_now_;
  const std::function<bool(NodeIndex)>& usable_;
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

bool MayPreempt(const core::ClusterSnapshot& snap, int32_t preemptor_class, const RunningJob& victim,
                const PreemptionOptions& options) {
  const auto n = static_cast<int32_t>(snap.classes.size());
  if (!options.enabled || preemptor_class < 0 || preemptor_class >= n || victim.priority_class < 0 ||
      victim.priority_class >= n) {
    return false;
  }
  const core::PriorityClass& p = snap.classes[preemptor_class];
  const core::PriorityClass& v = snap.classes[victim.priority_class];
  return p.may_preempt && v.preemptible && v.weight < p.weight && !victim.stopping && !victim.preempt_immune &&
         snap.now - victim.start >= options.min_run_time;
}

std::optional<core::Preemption> ChooseVictims(const core::PendingJob& job, const Shape& shape,
                                              const core::ClusterSnapshot& snap, const FreeIndex& free_now,
                                              const std::function<bool(NodeIndex)>& usable,
                                              const std::unordered_set<JobId>& taken,
                                              const PreemptionOptions& options) {
  if (!options.enabled || job.priority_class < 0 ||
      job.priority_class >= static_cast<int32_t>(snap.classes.size()) ||
      !snap.classes[job.priority_class].may_preempt || snap.running == nullptr) {
    return std::nullopt;
  }
  std::vector<Candidate> cands;
  for (const auto& [id, r] : *snap.running) {
    if (taken.count(id) || !MayPreempt(snap, job.priority_class, r, options)) continue;
    cands.push_back({&r, LostGpuSeconds(r, snap.now)});
  }
  if (cands.empty()) return std::nullopt;
  return VictimSearch(job, shape, free_now, usable).Run(std::move(cands));
}

}  // namespace muster::scheduler
