#include "scheduler/feature_views.h"

#include <gtest/gtest.h>

#include "scheduler/placement.h"

namespace muster::scheduler {
namespace {

core::Node MakeNode(int64_t gpus, core::FeatureMask features, int32_t leaf = 0) {
  core::Node n;
  n.spec.capacity = {gpus, 8000, 64LL << 30};
  n.free = n.spec.capacity;
  n.features = features;
  n.leaf = leaf;
  return n;
}

constexpr core::FeatureMask kContainers = 1, kGpuContainers = 2;

TEST(FeatureViewsTest, AViewHoldsOnlyTheNodesWithItsFeaturesAndFollowsEveryChange) {
  std::vector<core::Node> nodes = {MakeNode(8, 0), MakeNode(4, kContainers | kGpuContainers), MakeNode(2, kContainers)};
  const std::vector<int32_t> leaf_spine = {0};
  FeatureViews v;
  v.Build(nodes, 1, 1, leaf_spine, /*use_capacity=*/false);
  const FreeIndex& gpu = v.For(kContainers | kGpuContainers, nodes);
  EXPECT_FALSE(gpu.indexed(0));
  EXPECT_TRUE(gpu.indexed(1));
  EXPECT_FALSE(gpu.indexed(2));
  EXPECT_EQ(gpu.type(0).free_gpus, 4);
  EXPECT_EQ(gpu.type(0).nodes, 1);
  EXPECT_TRUE(gpu.CheckConsistent());
  // Eight GPUs on one node fit the cluster, not the container nodes.
  const Shape eight{1, {8, 0, 0}};
  EXPECT_TRUE(FindPlacement(v.all(), eight).has_value());
  EXPECT_FALSE(FindPlacement(gpu, eight).has_value());
  const auto four = FindPlacement(gpu, Shape{1, {4, 0, 0}});
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(four->front().node, 1);

  // A change reaches every index holding the node, and only those.
  v.Take(1, {3, 0, 0});
  v.Take(0, {8, 0, 0});
  EXPECT_EQ(gpu.avail(1).gpus, 1);
  EXPECT_EQ(v.all().avail(1).gpus, 1);
  EXPECT_EQ(gpu.type(0).free_gpus, 1);
  EXPECT_EQ(v.all().type(0).free_gpus, 1 + 0 + 2);
  EXPECT_TRUE(gpu.CheckConsistent());
  EXPECT_TRUE(v.all().CheckConsistent());

  // A view built later starts from what the whole index holds then.
  const FreeIndex& cpu = v.For(kContainers, nodes);
  EXPECT_EQ(cpu.type(0).free_gpus, 1 + 2);
  EXPECT_EQ(&v.For(kContainers | kGpuContainers, nodes), &gpu) << "views are made once";
  EXPECT_EQ(v.num_views(), 2);
}

TEST(FeatureViewsTest, ASetEveryNodeHasIsTheWholeIndex) {
  std::vector<core::Node> nodes = {MakeNode(8, kContainers), MakeNode(8, kContainers | kGpuContainers)};
  nodes.push_back(MakeNode(8, 0));
  nodes.back().schedulable = false;  // not indexed at all: does not count
  const std::vector<int32_t> leaf_spine = {0};
  FeatureViews v;
  v.Build(nodes, 1, 1, leaf_spine, true);
  EXPECT_EQ(&v.For(0, nodes), &v.all());
  EXPECT_EQ(&v.For(kContainers, nodes), &v.all());
  EXPECT_NE(&v.For(kGpuContainers, nodes), &v.all());
  // Built again (the nodes changed): the views are gone.
  v.Build(nodes, 1, 1, leaf_spine, true);
  EXPECT_EQ(v.num_views(), 0);
}

}  // namespace
}  // namespace muster::scheduler
