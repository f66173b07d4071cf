#include "scheduler/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/random.h"
#include "core/cluster_state.h"
#include "scheduler/test_util.h"

namespace muster::scheduler {
namespace {

using core::TopologyScope;

struct Fixture {
  core::ClusterState state;
  FreeIndex ix;
  void Index() {
    const core::ClusterSnapshot s = state.Snapshot(Time::Zero());
    ix.Build(s.nodes, s.num_gpu_types, s.num_leaves, s.leaf_spine, false);
  }
};

TEST(Placement, PrefersFewestNodesOverFullerLeaf) {
  Fixture f;
  // Leaf 0: 4 nodes of 8; leaf 1: 4 nodes of 8.
  testing::AddNodes(f.state, 8, 8, 4);
  f.Index();
  // Leaf 0 gets fuller but fragmented: 4 free on each node (needs 4 nodes for 2x8? no: 0 slots).
  for (NodeIndex n = 0; n < 4; ++n) f.ix.Take(n, {4, 0, 0});
  // Leaf 1: two whole nodes free, two full.
  f.ix.Take(4, {8, 0, 0});
  f.ix.Take(5, {8, 0, 0});
  auto p = FindPlacement(f.ix, {4, {4, 0, 0}, 0, TopologyScope::kAny});
  ASSERT_TRUE(p.has_value());
  // 4 replicas of 4: leaf 1 needs 2 nodes, leaf 0 needs 4. Fewest nodes wins.
  std::set<NodeIndex> nodes;
  for (const auto& a : *p) nodes.insert(a.node);
  EXPECT_EQ(nodes, (std::set<NodeIndex>{6, 7}));
}

TEST(Placement, SingleNodeBestFit) {
  Fixture f;
  testing::AddNodes(f.state, 3, 8, 0);
  f.Index();
  f.ix.Take(0, {2, 0, 0});  // 6 free
  f.ix.Take(1, {5, 0, 0});  // 3 free
  auto p = FindPlacement(f.ix, {1, {3, 0, 0}, 0, TopologyScope::kAny});
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->size(), 1u);
  EXPECT_EQ((*p)[0].node, 1);
  p = FindPlacement(f.ix, {1, {4, 0, 0}, 0, TopologyScope::kAny});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)[0].node, 0);
}

TEST(Placement, GpuTypeMustMatchAndGangStaysOnOneType) {
  Fixture f;
  testing::AddNodes(f.state, 1, 8, 0, "h", "H100");
  testing::AddNodes(f.state, 1, 8, 0, "a", "A100");
  f.Index();
  // 2 x 8 any type: 16 GPUs exist but only 8 per type: no mixed-type gang.
  EXPECT_FALSE(FindPlacement(f.ix, {2, {8, 0, 0}, core::kAnyGpuType, TopologyScope::kAny}).has_value());
  auto p = FindPlacement(f.ix, {1, {8, 0, 0}, 1, TopologyScope::kAny});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)[0].node, 1);
}

TEST(Placement, RespectsCpuAndMemory) {
  Fixture f;
  core::NodeSpec a{"a", "H100", {8, 16'000, 64LL << 30}, {}, {}};
  core::NodeSpec b{"b", "H100", {8, 64'000, 512LL << 30}, {}, {}};
  ASSERT_TRUE(f.state.AddNode(a).ok());
  ASSERT_TRUE(f.state.AddNode(b).ok());
  f.Index();
  f.ix.Take(1, {1, 0, 0});  // b is fuller by GPUs, so best fit would pick it...
  auto p = FindPlacement(f.ix, {1, {2, 32'000, 0}, 0, TopologyScope::kAny});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)[0].node, 1);  // ...and it has the CPUs.
  p = FindPlacement(f.ix, {1, {2, 8'000, 100LL << 30}, 0, TopologyScope::kAny});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)[0].node, 1);  // only b has 100Gi
  EXPECT_FALSE(FindPlacement(f.ix, {1, {2, 128'000, 0}, 0, TopologyScope::kAny}).has_value());
}

// Property: a placement is whole, within availability, one type, within its
// scope; and when GPU slots exist within the scope, a placement is found.
TEST(Placement, RandomizedSoundAndComplete) {
  int found = 0, spanning = 0, infeasible = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Random rng(seed);
    Fixture f;
    const int nodes = static_cast<int>(rng.Uniform(1, 24));
    const int per_leaf = static_cast<int>(rng.Uniform(1, 6));
    for (int i = 0; i < nodes; ++i) {
      core::NodeSpec spec;
      spec.name = "n" + std::to_string(i);
      spec.gpu_type = "H100";
      spec.capacity.gpus = 8;
      spec.topology.leaf = "l" + std::to_string(i / per_leaf);
      spec.topology.spine = "s" + std::to_string(i / per_leaf / 2);
      ASSERT_TRUE(f.state.AddNode(spec).ok());
    }
    f.Index();
    for (int i = 0; i < nodes; ++i) f.ix.Take(i, {rng.Uniform(0, 8), 0, 0});
    const int64_t r = rng.Uniform(1, 8);
    const int32_t replicas = static_cast<int32_t>(rng.Uniform(1, 6));
    const auto scope = static_cast<TopologyScope>(rng.Uniform(0, 3));
    const Shape shape{replicas, {r, 0, 0}, 0, scope};
    auto p = FindPlacement(f.ix, shape);

    // What exists, by scope.
    const core::ClusterSnapshot snap = f.state.Snapshot(Time::Zero());
    std::map<int32_t, int64_t> leaf_slots, spine_slots;
    int64_t node_best = 0, total = 0;
    for (int i = 0; i < nodes; ++i) {
      const int64_t slots = f.ix.avail(i).gpus / r;
      node_best = std::max(node_best, slots);
      leaf_slots[snap.nodes[i].leaf] += slots;
      spine_slots[snap.nodes[i].spine] += slots;
      total += slots;
    }
    auto max_of = [](const std::map<int32_t, int64_t>& m) {
      int64_t best = 0;
      for (const auto& [k, v] : m) best = std::max(best, v);
      return best;
    };
    bool feasible = node_best >= replicas;
    if (scope != TopologyScope::kNode) {
      feasible = feasible || max_of(leaf_slots) >= replicas;
      if (scope != TopologyScope::kLeaf) feasible = feasible || max_of(spine_slots) >= replicas;
      if (scope == TopologyScope::kAny) feasible = feasible || total >= replicas;
    }
    ASSERT_EQ(p.has_value(), feasible) << "seed " << seed;
    if (!p) {
      ++infeasible;
      continue;
    }
    ++found;
    if (p->size() > 1) ++spanning;
    int32_t placed = 0;
    std::set<int32_t> leaves, spines;
    std::set<NodeIndex> distinct;
    for (const auto& a : *p) {
      placed += a.replicas;
      ASSERT_TRUE(a.resources.FitsIn(f.ix.avail(a.node))) << "seed " << seed;
      ASSERT_TRUE(distinct.insert(a.node).second) << "node used twice, seed " << seed;
      leaves.insert(snap.nodes[a.node].leaf);
      spines.insert(snap.nodes[a.node].spine);
    }
    ASSERT_EQ(placed, replicas) << "seed " << seed;
    // A job that fits one node never spans.
    if (node_best >= replicas) {
      ASSERT_EQ(p->size(), 1u) << "seed " << seed;
    }
    if (scope == TopologyScope::kNode) {
      ASSERT_EQ(p->size(), 1u);
    }
    if (scope == TopologyScope::kLeaf) {
      ASSERT_EQ(leaves.size(), 1u);
    }
    if (scope == TopologyScope::kSpine) {
      ASSERT_EQ(spines.size(), 1u);
    }
    // Within one leaf when some leaf can hold it.
    if (scope != TopologyScope::kNode && max_of(leaf_slots) >= replicas) {
      ASSERT_EQ(leaves.size(), 1u) << "seed " << seed;
    }
  }
  EXPECT_GT(found, 40);
  EXPECT_GT(spanning, 10);
  EXPECT_GT(infeasible, 10);
}

// Slurm's --nodes=2 asks for two machines: two replicas of 4 GPUs that
// would share one free node go to two nodes, the fullest eligible ones.
TEST(Placement, OnePerNodePutsEachReplicaOnItsOwnNode) {
  Fixture f;
  testing::AddNodes(f.state, 4, 8, 2);
  f.Index();
  f.ix.Take(1, {4, 0, 0});  // leaf 0: nodes 0 (8 free) and 1 (4 free)
  f.ix.Take(3, {6, 0, 0});  // leaf 1: nodes 2 (8 free) and 3 (2 free)
  Shape packed{2, {4, 0, 0}, 0, TopologyScope::kAny};
  auto p = FindPlacement(f.ix, packed);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->size(), 1u) << "without the flag a gang that fits one node stays on it";
  Shape spread = packed;
  spread.one_per_node = true;
  p = FindPlacement(f.ix, spread);
  ASSERT_TRUE(p.has_value());
  std::set<NodeIndex> nodes;
  for (const auto& a : *p) {
    EXPECT_EQ(a.replicas, 1);
    EXPECT_EQ(a.resources, (Resources{4, 0, 0}));
    nodes.insert(a.node);
  }
  EXPECT_EQ(nodes, (std::set<NodeIndex>{0, 1})) << "one leaf, its two eligible nodes";
  // Three replicas: no leaf has three eligible nodes; 3 has only 2 free.
  spread.replicas = 3;
  p = FindPlacement(f.ix, spread);
  ASSERT_TRUE(p.has_value());
  nodes.clear();
  for (const auto& a : *p) nodes.insert(a.node);
  EXPECT_EQ(nodes, (std::set<NodeIndex>{0, 1, 2}));
  spread.replicas = 4;
  EXPECT_FALSE(FindPlacement(f.ix, spread).has_value()) << "node 3 cannot hold a replica of 4";
  spread.replicas = 2;
  spread.scope = TopologyScope::kNode;
  EXPECT_FALSE(FindPlacement(f.ix, spread).has_value());
  EXPECT_TRUE(MayFitAfterGrowth(f.ix, Shape{2, {4, 0, 0}, 0, TopologyScope::kAny, 0, true}, 0));
  EXPECT_FALSE(MayFitAfterGrowth(f.ix, Shape{2, {4, 0, 0}, 0, TopologyScope::kAny, 0, true}, 3));
}

// Slurm's --exclusive: only idle nodes, and the replica holds all of one.
TEST(Placement, ExclusiveTakesWholeIdleNodesOnly) {
  Fixture f;
  testing::AddNodes(f.state, 3, 8, 0);
  f.Index();
  f.ix.Take(0, {1, 0, 0});
  Shape s{2, {2, 0, 0}, 0, TopologyScope::kAny, 0, true, true};
  auto p = FindPlacement(f.ix, s);
  ASSERT_TRUE(p.has_value());
  std::set<NodeIndex> nodes;
  for (const auto& a : *p) {
    EXPECT_EQ(a.resources, f.ix.capacity(a.node)) << "the whole node";
    nodes.insert(a.node);
  }
  EXPECT_EQ(nodes, (std::set<NodeIndex>{1, 2})) << "node 0 is in use";
  s.replicas = 3;
  EXPECT_FALSE(FindPlacement(f.ix, s).has_value());
  EXPECT_FALSE(MayFitAfterGrowth(f.ix, s, 0));
  s.per_replica.gpus = 0;  // no GPUs asked: still whole nodes
  s.replicas = 1;
  p = FindPlacement(f.ix, s);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)[0].resources.gpus, 8);
}

}  // namespace
}  // namespace muster::scheduler
