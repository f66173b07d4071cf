#include "core/fit_check.h"

#include <gtest/gtest.h>

namespace muster::core {
namespace {

Node MakeNode(const std::string& name, const std::string& type, int64_t gpus, int64_t cpus, int64_t gib,
              std::vector<std::string> features = {"on-demand"}) {
  Node n;
  n.spec.name = name;
  n.spec.gpu_type = type;
  n.spec.capacity = {gpus, cpus * 1000, gib << 30};
  n.spec.features = std::move(features);
  return n;
}

JobSpec Job(int32_t replicas, int64_t gpus, int64_t cpus, int64_t gib, std::string type = "") {
  JobSpec j;
  j.replicas = replicas;
  j.per_replica = {gpus, cpus * 1000, gib << 30};
  j.gpu_type = std::move(type);
  j.required_features = {"on-demand"};
  return j;
}

std::string Why(const JobSpec& j, const std::vector<Node>& nodes) {
  const Status s = CheckEverFits(j, nodes);
  return s.ok() ? "ok" : s.field() + ": " + s.message();
}

TEST(CheckEverFits, WhatSomeNodeCouldHoldPasses) {
  const std::vector<Node> nodes = {MakeNode("a1", "A100", 8, 64, 512), MakeNode("a2", "A100", 8, 64, 512),
                                   MakeNode("l1", "L40S", 4, 32, 256)};
  EXPECT_EQ(Why(Job(2, 8, 64, 512, "A100"), nodes), "ok");
  EXPECT_EQ(Why(Job(4, 4, 16, 128), nodes), "ok") << "any type, packed";
  EXPECT_EQ(Why(Job(1, 0, 1, 1), {}), "ok") << "no nodes yet: the cluster is forming";
  JobSpec busy = Job(1, 8, 64, 512);
  EXPECT_EQ(Why(busy, nodes), "ok") << "free or not, a node of that size exists";
}

TEST(CheckEverFits, WhatNoNodeCouldHoldNamesTheLimit) {
  const std::vector<Node> nodes = {MakeNode("a1", "A100", 8, 64, 512), MakeNode("a2", "A100", 8, 64, 512),
                                   MakeNode("l1", "L40S", 4, 32, 256, {"on-demand", "fast"})};
  EXPECT_EQ(Why(Job(1, 1, 1, 1, "H100"), nodes),
            "resources.gpuType: no node has GPUs of type H100 (the cluster's types: A100, L40S)");
  EXPECT_EQ(Why(Job(1, 16, 1, 1), nodes), "resources.gpus: a replica asks for 16 GPUs; the most any node has is 8");
  EXPECT_EQ(Why(Job(1, 8, 128, 1), nodes), "resources.cpus: a replica asks for 128 CPUs; the most any node has is 64");
  EXPECT_EQ(Why(Job(1, 1, 1, 1024, "L40S"), nodes),
            "resources.memory: a replica asks for 1Ti of memory; the most any node of type L40S has is 256Gi");
  JobSpec fast = Job(1, 8, 1, 1);
  fast.required_features.push_back("fast");
  EXPECT_EQ(Why(fast, nodes), "resources.gpus: a replica asks for 8 GPUs; the most any node has is 4")
      << "only the fast node counts";
  fast.required_features.push_back("ib");
  EXPECT_EQ(Why(fast, nodes), "features: no node has all of its required features (on-demand, fast, ib; none has ib)");
  fast.required_features.back() = "ib|fast";
  EXPECT_EQ(Why(fast, nodes), "resources.gpus: a replica asks for 8 GPUs; the most any node has is 4") << "a choice";
  fast.required_features.back() = "ib|roce";
  EXPECT_EQ(Why(fast, nodes),
            "features: no node has all of its required features (on-demand, fast, ib|roce; none has ib|roce)");
  JobSpec nodes3 = Job(3, 8, 1, 1, "A100");
  nodes3.one_per_node = true;
  EXPECT_EQ(Why(nodes3, nodes), "replicas: needs 3 distinct nodes; the cluster has 2 that can hold a replica");
  EXPECT_EQ(Why(Job(3, 8, 1, 1, "A100"), nodes),
            "replicas: needs room for 3 replicas; the whole cluster holds 2 of this size");
  JobSpec elastic = Job(3, 8, 1, 1, "A100");
  elastic.min_replicas = 2;
  EXPECT_EQ(Why(elastic, nodes), "ok") << "an elastic job needs its minimum";
}

}  // namespace
}  // namespace muster::core
