#include "scheduler/placement.h"

#include <algorithm>
#include <tuple>

namespace muster::scheduler {
namespace {

using core::Allocation;
using core::TopologyScope;
using Placement = std::vector<Allocation>;

bool Taken(const Placement& p, NodeIndex n) {
  for (const Allocation& a : p) {
    if (a.node == n) return true;
  }
  return false;
}

void Add(Placement& p, NodeIndex n, int64_t replicas, const Resources& per) {
  p.push_back({n, static_cast<int32_t>(replicas), per * replicas});
}

// Step 1: best-fit single node for all replicas.
std::optional<Placement> OneNode(const FreeIndex& ix, int32_t t, const Shape& s) {
  const FreeIndex::TypeEntry& te = ix.type(t);
  const int64_t need = s.per_replica.gpus * s.replicas;
  if (need > te.max_f) return std::nullopt;
  for (int64_t f = need; f <= te.max_f; ++f) {
    const auto& bucket = te.by_f[f];
    for (size_t i = bucket.size(); i-- > 0;) {
      const NodeIndex n = bucket[i];
      if (ix.avail(n).CopiesOf(s.per_replica, s.replicas) >= s.replicas) {
        Placement p;
        Add(p, n, s.replicas, s.per_replica);
        return p;
      }
    }
  }
  return std::nullopt;
}

// Fills up to `rem` replicas from one leaf: largest nodes first, and the
// fullest node that covers the remainder as soon as one does.
void FillFromLeaf(const FreeIndex& ix, int32_t t, int32_t ll, const Shape& s, int64_t& rem, Placement& p) {
  const FreeIndex::TypeEntry& te = ix.type(t);
  const FreeIndex::LeafEntry& le = te.leaves[ll];
  const int64_t r = s.per_replica.gpus;
  while (rem > 0) {
    // Best fit for the whole remainder.
    bool done = false;
    for (int64_t f = std::max<int64_t>(r, rem * r); f <= te.max_f && !done; ++f) {
      for (size_t i = le.by_f[f].size(); i-- > 0;) {
        const NodeIndex n = le.by_f[f][i];
        if (!Taken(p, n) && ix.avail(n).CopiesOf(s.per_replica, rem) >= rem) {
          Add(p, n, rem, s.per_replica);
          rem = 0;
          done = true;
          break;
        }
      }
    }
    if (done) return;
    // Otherwise the node that holds the most replicas.
    NodeIndex best = -1;
    int64_t best_copies = 0;
    for (int64_t f = te.max_f; f >= r && best_copies < (f / r); --f) {
      for (size_t i = le.by_f[f].size(); i-- > 0;) {
        const NodeIndex n = le.by_f[f][i];
        if (Taken(p, n)) continue;
        const int64_t c = ix.avail(n).CopiesOf(s.per_replica, rem);
        if (c > best_copies) {
          best = n;
          best_copies = c;
          if (c == f / r) break;
        }
      }
    }
    if (best < 0) return;  // leaf exhausted
    Add(p, best, best_copies, s.per_replica);
    rem -= best_copies;
  }
}

std::optional<Placement> FillLeaves(const FreeIndex& ix, int32_t t, const std::vector<int32_t>& leaves,
                                    const Shape& s) {
  Placement p;
  int64_t rem = s.replicas;
  for (int32_t ll : leaves) {
    FillFromLeaf(ix, t, ll, s, rem, p);
    if (rem == 0) return p;
  }
  return std::nullopt;
}

// Fewest nodes needed to hold `want` replicas of r GPUs from a histogram
// source, or -1 if it cannot. `count(f)` is the node count with f free.
template <typename Count>
int64_t NodesNeeded(int64_t want, int64_t r, int32_t max_f, Count count) {
  int64_t k = 0;
  for (int32_t f = max_f; f >= r && want > 0; --f) {
    const int64_t per = f / r;
    const int64_t have = count(f);
    if (have == 0) continue;
    const int64_t use = std::min<int64_t>(have, (want + per - 1) / per);
    k += use;
    want -= use * per;
  }
  return want > 0 ? -1 : k;
}

// Leaves of `candidates` ordered by replica slots, largest first.
std::vector<int32_t> LeavesBySlots(const FreeIndex& ix, int32_t t, std::vector<int32_t> leaves, int64_t r) {
  std::vector<std::pair<int64_t, int32_t>> keyed;
  keyed.reserve(leaves.size());
  for (int32_t ll : leaves) {
    const int64_t slots = ix.LeafSlots(t, ll, r);
    if (slots > 0) keyed.emplace_back(-slots, ll);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int32_t> out;
  out.reserve(keyed.size());
  for (const auto& [neg, ll] : keyed) out.push_back(ll);
  return out;
}

std::optional<Placement> PlaceInType(const FreeIndex& ix, int32_t t, const Shape& s) {
  const FreeIndex::TypeEntry& te = ix.type(t);
  if (te.nodes == 0) return std::nullopt;
  if (auto one = OneNode(ix, t, s)) return one;
  if (s.scope == TopologyScope::kNode || s.replicas == 1) return std::nullopt;
  const int64_t r = s.per_replica.gpus;
  if (ix.GlobalSlots(t, r) < s.replicas) return std::nullopt;

  // Step 2: one leaf, fewest nodes, then fullest.
  std::vector<std::tuple<int64_t, int64_t, int32_t>> leaf_candidates;
  for (int32_t ll = 0; ll < static_cast<int32_t>(te.leaves.size()); ++ll) {
    const FreeIndex::LeafEntry& le = te.leaves[ll];
    if (le.free_gpus < s.replicas * r) continue;
    const int64_t k =
        NodesNeeded(s.replicas, r, te.max_f, [&](int32_t f) { return static_cast<int64_t>(le.by_f[f].size()); });
    if (k > 0) leaf_candidates.emplace_back(k, le.free_gpus, le.leaf);
  }
  std::sort(leaf_candidates.begin(), leaf_candidates.end());
  for (const auto& [k, free, leaf] : leaf_candidates) {
    if (auto p = FillLeaves(ix, t, {te.leaf_local[leaf]}, s)) return p;
  }
  if (s.scope == TopologyScope::kLeaf) return std::nullopt;

  // Step 3: one spine, fewest leaves, then fullest.
  std::vector<std::tuple<int64_t, int64_t, int32_t>> spine_candidates;
  for (int32_t ls = 0; ls < static_cast<int32_t>(te.spines.size()); ++ls) {
    const FreeIndex::SpineEntry& se = te.spines[ls];
    if (ix.SpineSlots(t, ls, r) < s.replicas) continue;
    std::vector<int64_t> slots;
    for (int32_t ll : se.leaves) slots.push_back(ix.LeafSlots(t, ll, r));
    std::sort(slots.rbegin(), slots.rend());
    int64_t rem = s.replicas, used = 0;
    for (int64_t sl : slots) {
      if (rem <= 0) break;
      rem -= sl;
      ++used;
    }
    spine_candidates.emplace_back(used, se.free_gpus, ls);
  }
  std::sort(spine_candidates.begin(), spine_candidates.end());
  for (const auto& [used, free, ls] : spine_candidates) {
    if (auto p = FillLeaves(ix, t, LeavesBySlots(ix, t, te.spines[ls].leaves, r), s)) return p;
  }
  if (s.scope == TopologyScope::kSpine) return std::nullopt;

  // Step 4: anywhere.
  std::vector<int32_t> all(te.leaves.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
  return FillLeaves(ix, t, LeavesBySlots(ix, t, std::move(all), r), s);
}

// Jobs without GPUs: nodes with the fewest free GPUs first, ignoring topology.
std::optional<Placement> PlaceWithoutGpus(const FreeIndex& ix, const Shape& s) {
  Placement p;
  int64_t rem = s.replicas;
  for (int32_t t = 0; t < ix.num_types(); ++t) {
    const FreeIndex::TypeEntry& te = ix.type(t);
    for (int32_t f = 0; f <= te.max_f; ++f) {
      for (size_t i = te.by_f[f].size(); i-- > 0;) {
        const NodeIndex n = te.by_f[f][i];
        const int64_t c = ix.avail(n).CopiesOf(s.per_replica, rem);
        if (c == 0) continue;
        if (s.scope == TopologyScope::kNode && c < s.replicas) continue;
        Add(p, n, c, s.per_replica);
        rem -= c;
        if (rem == 0) return p;
      }
    }
  }
  return std::nullopt;
}

// One replica per node (Shape::one_per_node). A node is eligible when one
// replica fits in what it has free (with `exclusive`: when it is idle and
// one fits in its capacity); each gets one replica, and with `exclusive`
// holds the whole node. The fullest eligible nodes are taken first, so
// large free nodes stay whole. Topology as for gangs: one leaf (the
// fullest of those with enough eligible nodes), then one spine (the
// fewest leaves, then the fullest), then anywhere.
class DistinctNodes {
 public:
  DistinctNodes(const FreeIndex& ix, const Shape& s) : ix_(ix), s_(s) {}

  bool Eligible(NodeIndex n) const {
    if (s_.exclusive) return ix_.idle(n) && s_.per_replica.FitsIn(ix_.capacity(n));
    return s_.per_replica.FitsIn(ix_.avail(n));
  }

  std::optional<Placement> InType(int32_t t) const {
    const FreeIndex::TypeEntry& te = ix_.type(t);
    if (te.nodes == 0) return std::nullopt;
    if (s_.replicas > 1 && s_.scope == TopologyScope::kNode) return std::nullopt;
    // Eligible nodes of each leaf, fullest first.
    std::vector<std::vector<NodeIndex>> by_leaf(te.leaves.size());
    for (size_t ll = 0; ll < te.leaves.size(); ++ll) {
      for (int64_t f = s_.per_replica.gpus; f <= te.max_f; ++f) {
        for (size_t i = te.leaves[ll].by_f[f].size(); i-- > 0;) {
          const NodeIndex n = te.leaves[ll].by_f[f][i];
          if (Eligible(n)) by_leaf[ll].push_back(n);
        }
      }
    }
    if (s_.replicas == 1) {  // the fullest eligible node of the type
      std::optional<std::pair<int64_t, NodeIndex>> best;
      for (const auto& nodes : by_leaf) {
        if (!nodes.empty() && (!best || ix_.avail(nodes[0]).gpus < best->first))
          best = {{ix_.avail(nodes[0]).gpus, nodes[0]}};
      }
      if (!best) return std::nullopt;
      return Placement{Take(best->second)};
    }
    const auto fill = [&](const std::vector<int32_t>& leaves) -> std::optional<Placement> {
      Placement p;
      for (int32_t ll : leaves) {
        for (NodeIndex n : by_leaf[ll]) {
          if (static_cast<int32_t>(p.size()) == s_.replicas) return p;
          p.push_back(Take(n));
        }
      }
      if (static_cast<int32_t>(p.size()) == s_.replicas) return p;
      return std::nullopt;
    };
    const auto by_count = [&](std::vector<int32_t> leaves) {
      std::stable_sort(leaves.begin(), leaves.end(),
                       [&](int32_t a, int32_t b) { return by_leaf[a].size() > by_leaf[b].size(); });
      return leaves;
    };
    // One leaf: the fullest with enough eligible nodes.
    std::optional<std::pair<int64_t, int32_t>> leaf;
    for (size_t ll = 0; ll < te.leaves.size(); ++ll) {
      if (static_cast<int32_t>(by_leaf[ll].size()) < s_.replicas) continue;
      const std::pair<int64_t, int32_t> key{te.leaves[ll].free_gpus, te.leaves[ll].leaf};
      if (!leaf || key < std::pair<int64_t, int32_t>{te.leaves[leaf->second].free_gpus, te.leaves[leaf->second].leaf}) {
        leaf = {{key.first, static_cast<int32_t>(ll)}};
      }
    }
    if (leaf) return fill({leaf->second});
    if (s_.scope == TopologyScope::kLeaf) return std::nullopt;
    // One spine: the fewest leaves, then the fullest.
    std::optional<std::tuple<int64_t, int64_t, int32_t>> spine;
    for (size_t ls = 0; ls < te.spines.size(); ++ls) {
      int64_t have = 0, used = 0;
      for (int32_t ll : by_count(te.spines[ls].leaves)) {
        if (have >= s_.replicas) break;
        have += static_cast<int64_t>(by_leaf[ll].size());
        ++used;
      }
      if (have < s_.replicas) continue;
      const std::tuple<int64_t, int64_t, int32_t> key{used, te.spines[ls].free_gpus, static_cast<int32_t>(ls)};
      if (!spine || key < *spine) spine = key;
    }
    if (spine) return fill(by_count(te.spines[std::get<2>(*spine)].leaves));
    if (s_.scope == TopologyScope::kSpine) return std::nullopt;
    std::vector<int32_t> all(te.leaves.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
    return fill(by_count(std::move(all)));
  }

 private:
  Allocation Take(NodeIndex n) const { return {n, 1, s_.exclusive ? ix_.capacity(n) : s_.per_replica}; }

  const FreeIndex& ix_;
  const Shape& s_;
};

}  // namespace

std::optional<Placement> FindPlacement(const FreeIndex& ix, const Shape& s) {
  if (s.one_per_node || s.exclusive) {
    const DistinctNodes distinct(ix, s);
    for (int32_t t = 0; t < ix.num_types(); ++t) {
      if (s.gpu_type != core::kAnyGpuType && t != s.gpu_type) continue;
      if (auto p = distinct.InType(t)) return p;
    }
    return std::nullopt;
  }
  if (s.per_replica.gpus == 0) return PlaceWithoutGpus(ix, s);
  if (s.gpu_type != core::kAnyGpuType) {
    if (s.gpu_type >= ix.num_types()) return std::nullopt;
    return PlaceInType(ix, s.gpu_type, s);
  }
  for (int32_t t = 0; t < ix.num_types(); ++t) {
    if (auto p = PlaceInType(ix, t, s)) return p;
  }
  return std::nullopt;
}

bool MayFitAfterGrowth(const FreeIndex& ix, const Shape& s, NodeIndex grown) {
  if (!ix.indexed(grown)) return false;
  if (s.one_per_node || s.exclusive) return DistinctNodes(ix, s).Eligible(grown);
  if (s.per_replica.gpus == 0) return ix.avail(grown).CopiesOf(s.per_replica, 1) > 0;
  const int32_t t = ix.type_of(grown);
  if (s.gpu_type != core::kAnyGpuType && s.gpu_type != t) return false;
  if (ix.avail(grown).CopiesOf(s.per_replica, s.replicas) >= s.replicas) return true;
  if (s.scope == TopologyScope::kNode || s.replicas == 1) return false;
  const int64_t r = s.per_replica.gpus;
  const int32_t ll = ix.local_leaf_of(grown);
  if (ix.LeafSlots(t, ll, r) >= s.replicas) return true;
  if (s.scope == TopologyScope::kLeaf) return false;
  if (ix.SpineSlots(t, ix.type(t).leaves[ll].spine, r) >= s.replicas) return true;
  if (s.scope == TopologyScope::kSpine) return false;
  return ix.GlobalSlots(t, r) >= s.replicas;
}

}  // namespace muster::scheduler
