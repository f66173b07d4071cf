#include "scheduler/free_index.h"

#include <gtest/gtest.h>

#include "common/random.h"
#include "core/cluster_state.h"
#include "scheduler/test_util.h"

namespace muster::scheduler {
namespace {

FreeIndex Build(const core::ClusterState& state, bool capacity = false) {
  const core::ClusterSnapshot s = state.Snapshot(Time::Zero());
  FreeIndex ix;
  ix.Build(s.nodes, s.num_gpu_types, s.num_leaves, s.leaf_spine, capacity);
  return ix;
}

TEST(FreeIndex, BucketsAndSlots) {
  core::ClusterState state;
  testing::AddNodes(state, 3, 8, 3);
  FreeIndex ix = Build(state);
  ix.Take(1, {5, 0, 0});
  ix.Take(2, {5, 0, 0});
  const int32_t t = 0;
  EXPECT_EQ(ix.type(t).by_f[8].size(), 1u);
  EXPECT_EQ(ix.type(t).by_f[3].size(), 2u);
  EXPECT_EQ(ix.LargestNodeFree(t), 8);
  EXPECT_EQ(ix.type(t).free_gpus, 14);
  EXPECT_EQ(ix.LeafSlots(t, 0, 2), 4 + 1 + 1);
  EXPECT_EQ(ix.GlobalSlots(t, 4), 2);
  EXPECT_EQ(ix.SpineSlots(t, 0, 3), 2 + 1 + 1);
  EXPECT_EQ(ix.LargestLeafFree(t), 14);
  EXPECT_TRUE(ix.CheckConsistent());
}

TEST(FreeIndex, UnschedulableNodesAreNotIndexed) {
  core::ClusterState state;
  testing::AddNodes(state, 2, 8, 0);
  ASSERT_TRUE(state.SetSchedulable(0, false).ok());
  FreeIndex ix = Build(state);
  EXPECT_FALSE(ix.indexed(0));
  EXPECT_TRUE(ix.indexed(1));
  EXPECT_EQ(ix.type(0).free_gpus, 8);
}

TEST(FreeIndex, CapacityViewIgnoresAllocations) {
  core::ClusterState state;
  testing::AddNodes(state, 1, 8, 0);
  ASSERT_TRUE(state.Submit(testing::Gpus(1, 8, Duration::Hours(1)), Time::Zero()).ok());
  ASSERT_TRUE(state.Bind({1, {{0, 1, {8, 0, 0}}}}, Time::Zero()).ok());
  EXPECT_EQ(Build(state, false).type(0).free_gpus, 0);
  EXPECT_EQ(Build(state, true).type(0).free_gpus, 8);
}

// Random updates keep every bucket, position and sum consistent.
TEST(FreeIndex, StaysConsistentUnderRandomUpdates) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Random rng(seed);
    core::ClusterState state;
    testing::AddNodes(state, 40, 8, 5, "a", "H100");
    testing::AddNodes(state, 10, 4, 0, "b", "A100");
    FreeIndex ix = Build(state);
    for (int step = 0; step < 500; ++step) {
      const auto n = static_cast<NodeIndex>(rng.Uniform(0, 49));
      const int64_t cap = n < 40 ? 8 : 4;
      ix.SetAvail(n, {rng.Uniform(0, cap), 0, 0});
      ASSERT_TRUE(ix.CheckConsistent()) << "seed " << seed << " step " << step;
    }
  }
}

}  // namespace
}  // namespace muster::scheduler
