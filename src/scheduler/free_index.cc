#include "scheduler/free_index.h"

#include <algorithm>

namespace muster::scheduler {

void FreeIndex::Build(std::span<const core::Node> nodes, int32_t num_types, int32_t num_leaves,
                      std::span<const int32_t> leaf_spine, bool use_capacity) {
  nodes_.assign(nodes.size(), NodeEntry{});
  types_.assign(num_types, TypeEntry{});
  ++version_;
  for (const core::Node& n : nodes) {
    if (!n.schedulable) continue;
    TypeEntry& t = types_[n.gpu_type];
    t.max_f = std::max<int32_t>(t.max_f, static_cast<int32_t>(n.spec.capacity.gpus));
  }
  std::vector<std::vector<int32_t>> spine_local(num_types);
  for (int32_t ti = 0; ti < num_types; ++ti) {
    TypeEntry& t = types_[ti];
    t.by_f.assign(t.max_f + 1, {});
    t.leaf_local.assign(num_leaves, -1);
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const core::Node& n = nodes[i];
    if (!n.schedulable) continue;
    TypeEntry& t = types_[n.gpu_type];
    int32_t& ll = t.leaf_local[n.leaf];
    if (ll < 0) {
      auto& sl = spine_local[n.gpu_type];
      const int32_t spine = leaf_spine[n.leaf];
      if (sl.size() <= static_cast<size_t>(spine)) sl.resize(spine + 1, -1);
      if (sl[spine] < 0) {
        sl[spine] = static_cast<int32_t>(t.spines.size());
        SpineEntry se;
        se.spine = spine;
        se.hist.assign(t.max_f + 1, 0);
        t.spines.push_back(std::move(se));
      }
      ll = static_cast<int32_t>(t.leaves.size());
      LeafEntry le;
      le.leaf = n.leaf;
      le.spine = sl[spine];
      le.by_f.assign(t.max_f + 1, {});
      t.leaves.push_back(std::move(le));
      t.spines[sl[spine]].leaves.push_back(ll);
    }
    NodeEntry& e = nodes_[i];
    e.type = n.gpu_type;
    e.lleaf = ll;
    e.avail = use_capacity ? n.spec.capacity : n.free;
    e.capacity = n.spec.capacity;
    ++t.nodes;
    Insert(static_cast<NodeIndex>(i));
  }
}

void FreeIndex::Insert(NodeIndex n) {
  NodeEntry& e = nodes_[n];
  TypeEntry& t = types_[e.type];
  LeafEntry& l = t.leaves[e.lleaf];
  SpineEntry& s = t.spines[l.spine];
  e.key = static_cast<int32_t>(std::clamp<int64_t>(e.avail.gpus, 0, t.max_f));
  e.pos_global = static_cast<int32_t>(t.by_f[e.key].size());
  t.by_f[e.key].push_back(n);
  e.pos_leaf = static_cast<int32_t>(l.by_f[e.key].size());
  l.by_f[e.key].push_back(n);
  ++s.hist[e.key];
  t.free_gpus += e.key;
  l.free_gpus += e.key;
  s.free_gpus += e.key;
}

void FreeIndex::Remove(NodeIndex n) {
  NodeEntry& e = nodes_[n];
  TypeEntry& t = types_[e.type];
  LeafEntry& l = t.leaves[e.lleaf];
  SpineEntry& s = t.spines[l.spine];
  auto& gb = t.by_f[e.key];
  const NodeIndex gl = gb.back();
  gb[e.pos_global] = gl;
  nodes_[gl].pos_global = e.pos_global;
  gb.pop_back();
  auto& lb = l.by_f[e.key];
  const NodeIndex ll = lb.back();
  lb[e.pos_leaf] = ll;
  nodes_[ll].pos_leaf = e.pos_leaf;
  lb.pop_back();
  --s.hist[e.key];
  t.free_gpus -= e.key;
  l.free_gpus -= e.key;
  s.free_gpus -= e.key;
}

void FreeIndex::SetAvail(NodeIndex n, const Resources& avail) {
  ++version_;
  NodeEntry& e = nodes_[n];
  const int32_t new_key = static_cast<int32_t>(std::clamp<int64_t>(avail.gpus, 0, types_[e.type].max_f));
  if (new_key == e.key) {
    e.avail = avail;
    return;
  }
  Remove(n);
  e.avail = avail;
  Insert(n);
}

void FreeIndex::Drop(NodeIndex n) {
  ++version_;
  Remove(n);
  --types_[nodes_[n].type].nodes;
  nodes_[n] = NodeEntry{};
}

int64_t FreeIndex::LargestNodeFree(int32_t ti) const {
  const TypeEntry& t = types_[ti];
  for (int32_t f = t.max_f; f > 0; --f) {
    if (!t.by_f[f].empty()) return f;
  }
  return 0;
}

int64_t FreeIndex::LargestLeafFree(int32_t ti) const {
  int64_t best = 0;
  for (const LeafEntry& l : types_[ti].leaves) best = std::max(best, l.free_gpus);
  return best;
}

namespace {

// Replicas of r GPUs that fit nodes counted by free GPUs: sum of count(f) x (f / r).
template <typename Count>
int64_t Slots(int32_t max_f, int64_t r, Count count) {
  int64_t slots = 0;
  for (int32_t f = static_cast<int32_t>(r); f <= max_f; ++f) slots += count(f) * (f / r);
  return slots;
}

}  // namespace

int64_t FreeIndex::GlobalSlots(int32_t ti, int64_t r) const {
  const TypeEntry& t = types_[ti];
  return Slots(t.max_f, r, [&](int32_t f) { return static_cast<int64_t>(t.by_f[f].size()); });
}

int64_t FreeIndex::LeafSlots(int32_t ti, int32_t lleaf, int64_t r) const {
  const TypeEntry& t = types_[ti];
  const LeafEntry& l = t.leaves[lleaf];
  return Slots(t.max_f, r, [&](int32_t f) { return static_cast<int64_t>(l.by_f[f].size()); });
}

int64_t FreeIndex::SpineSlots(int32_t ti, int32_t lspine, int64_t r) const {
  const TypeEntry& t = types_[ti];
  const SpineEntry& s = t.spines[lspine];
  return Slots(t.max_f, r, [&](int32_t f) { return static_cast<int64_t>(s.hist[f]); });
}

bool FreeIndex::CheckConsistent() const {
  for (size_t ti = 0; ti < types_.size(); ++ti) {
    const TypeEntry& t = types_[ti];
    int64_t tfree = 0, count = 0;
    for (int32_t f = 0; f <= t.max_f; ++f) {
      for (size_t p = 0; p < t.by_f[f].size(); ++p) {
        const NodeEntry& e = nodes_[t.by_f[f][p]];
        if (e.type != static_cast<int32_t>(ti) || e.key != f || e.pos_global != static_cast<int32_t>(p)) {
          return false;
        }
        if (std::clamp<int64_t>(e.avail.gpus, 0, t.max_f) != f) return false;
        tfree += f;
        ++count;
      }
    }
    if (tfree != t.free_gpus || count != t.nodes) return false;
    for (const LeafEntry& l : t.leaves) {
      int64_t lfree = 0;
      for (int32_t f = 0; f <= t.max_f; ++f) {
        for (size_t p = 0; p < l.by_f[f].size(); ++p) {
          if (nodes_[l.by_f[f][p]].pos_leaf != static_cast<int32_t>(p)) return false;
          lfree += f;
        }
      }
      if (lfree != l.free_gpus) return false;
    }
  }
  return true;
}

}  // namespace muster::scheduler
