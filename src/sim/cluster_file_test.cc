#include "sim/cluster_file.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace muster::sim {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

StatusOr<ClusterDescription> Parse(const std::string& yaml) { return ParseClusterYaml(yaml, "cluster.yaml"); }

std::set<std::string> Leaves(const ClusterDescription& c) {
  std::set<std::string> out;
  for (const auto& n : c.nodes) out.insert(n.topology.leaf);
  return out;
}

std::set<std::string> Spines(const ClusterDescription& c) {
  std::set<std::string> out;
  for (const auto& n : c.nodes) out.insert(n.topology.spine);
  return out;
}

TEST(ParseClusterYamlTest, NodeGroupWithTopology) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - count: 8
    gpus: 8
    gpuType: H100
    nodesPerLeaf: 4
    leavesPerSpine: 2
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ClusterDescription& c = *r;
  ASSERT_EQ(c.nodes.size(), 8u);
  EXPECT_EQ(c.total_gpus(), 64);
  EXPECT_EQ(c.max_gpus_per_node(), 8);
  for (const auto& n : c.nodes) {
    EXPECT_EQ(n.gpu_type, "H100");
    EXPECT_EQ(n.capacity.gpus, 8);
    EXPECT_FALSE(n.topology.leaf.empty());
    EXPECT_FALSE(n.topology.spine.empty());
  }
  // 8 nodes, 4 per leaf: nodes 0-3 share one leaf, 4-7 another.
  EXPECT_EQ(Leaves(c).size(), 2u);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(c.nodes[i].topology.leaf, c.nodes[0].topology.leaf);
  for (int i = 5; i < 8; ++i) EXPECT_EQ(c.nodes[i].topology.leaf, c.nodes[4].topology.leaf);
  EXPECT_NE(c.nodes[0].topology.leaf, c.nodes[4].topology.leaf);
  // Both leaves fit under one spine.
  EXPECT_EQ(Spines(c).size(), 1u);
  // Names are unique.
  std::set<std::string> names;
  for (const auto& n : c.nodes) names.insert(n.name);
  EXPECT_EQ(names.size(), 8u);
}

TEST(ParseClusterYamlTest, LeavesPerSpineGroupsLeaves) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - {count: 16, gpus: 4, nodesPerLeaf: 2, leavesPerSpine: 4}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ClusterDescription& c = *r;
  ASSERT_EQ(c.nodes.size(), 16u);
  EXPECT_EQ(Leaves(c).size(), 8u);
  EXPECT_EQ(Spines(c).size(), 2u);
  // Every leaf is under exactly one spine.
  std::map<std::string, std::set<std::string>> spines_of_leaf;
  for (const auto& n : c.nodes) spines_of_leaf[n.topology.leaf].insert(n.topology.spine);
  for (const auto& [leaf, spines] : spines_of_leaf) EXPECT_EQ(spines.size(), 1u) << leaf;
  EXPECT_EQ(c.nodes[0].topology.spine, c.nodes[7].topology.spine);  // leaves 0..3
  EXPECT_NE(c.nodes[7].topology.spine, c.nodes[8].topology.spine);  // leaf 3 vs leaf 4
}

TEST(ParseClusterYamlTest, GroupDefaults) {
  StatusOr<ClusterDescription> r = Parse("nodeGroups:\n  - {count: 3, gpus: 2}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ClusterDescription& c = *r;
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.nodes[0].gpu_type, "gpu");
  EXPECT_EQ(c.nodes[0].name, "gpu-0");
  EXPECT_EQ(c.nodes[2].name, "gpu-2");
  EXPECT_EQ(c.nodes[0].capacity.cpu_milli, 0);
  EXPECT_EQ(c.nodes[0].capacity.memory_bytes, 0);
  EXPECT_EQ(Leaves(c).size(), 1u);  // all nodes of the group under one leaf
  EXPECT_EQ(Spines(c).size(), 1u);
}

TEST(ParseClusterYamlTest, GroupCpusMemoryAndPrefix) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - count: 2
    gpus: 8
    gpuType: V100
    cpus: 64
    memory: 512Gi
    prefix: v100-
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->nodes.size(), 2u);
  EXPECT_EQ(r->nodes[1].name, "v100-1");
  EXPECT_EQ(r->nodes[1].capacity.cpu_milli, 64'000);
  EXPECT_EQ(r->nodes[1].capacity.memory_bytes, 512 * kGi);
  EXPECT_TRUE(Contains(r->summary, "V100")) << r->summary;
}

TEST(ParseClusterYamlTest, TwoGroupsHaveSeparateTopology) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - {count: 2, gpus: 8, gpuType: H100}
  - {count: 3, gpus: 4, gpuType: A100}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->nodes.size(), 5u);
  EXPECT_EQ(r->total_gpus(), 28);
  EXPECT_EQ(r->max_gpus_per_node(), 8);
  EXPECT_EQ(Leaves(*r).size(), 2u);
  EXPECT_NE(r->nodes[0].topology.leaf, r->nodes[2].topology.leaf);
}

TEST(ParseClusterYamlTest, TwoGroupsOfOneTypeGetDistinctNames) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - {count: 2, gpus: 8, gpuType: H100, nodesPerLeaf: 1}
  - {count: 2, gpus: 4, gpuType: H100}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::set<std::string> names;
  for (const auto& n : r->nodes) names.insert(n.name);
  EXPECT_EQ(names.size(), r->nodes.size());
}

TEST(ParseClusterYamlTest, ExplicitNodes) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodes:
  - {name: a1, gpus: 8, gpuType: H100, leaf: l1, spine: s1}
  - {name: a2, gpus: 8, gpuType: H100, leaf: l1, spine: s1, cpus: 2.5, memory: 16G}
  - {name: b1, gpus: 4}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ClusterDescription& c = *r;
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.nodes[0].name, "a1");
  EXPECT_EQ(c.nodes[0].gpu_type, "H100");
  EXPECT_EQ(c.nodes[0].capacity.gpus, 8);
  EXPECT_EQ(c.nodes[0].topology.leaf, "l1");
  EXPECT_EQ(c.nodes[0].topology.spine, "s1");
  EXPECT_EQ(c.nodes[1].capacity.cpu_milli, 2'500);
  EXPECT_EQ(c.nodes[1].capacity.memory_bytes, int64_t{16'000'000'000});
  EXPECT_EQ(c.nodes[2].name, "b1");
  EXPECT_EQ(c.nodes[2].gpu_type, "gpu");
  EXPECT_EQ(c.nodes[2].topology.leaf, "");
  EXPECT_EQ(c.total_gpus(), 20);
}

TEST(ParseClusterYamlTest, GroupsAndNodesTogether) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - {count: 4, gpus: 8, gpuType: H100}
nodes:
  - {name: debug, gpus: 1, gpuType: T4}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->nodes.size(), 5u);
  EXPECT_EQ(r->nodes[4].name, "debug");
  EXPECT_EQ(r->total_gpus(), 33);
}

// Spot nodes carry the feature "spot", every other node "on-demand".
TEST(ParseClusterYamlTest, SpotNodesAndTheOnDemandFeature) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - {count: 1, gpus: 8, spot: true, prefix: s-}
  - {count: 1, gpus: 8}
nodes:
  - {name: n1, gpus: 4, spot: false}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->nodes.size(), 3u);
  EXPECT_EQ(r->nodes[0].features, std::vector<std::string>{"spot"});
  EXPECT_EQ(r->nodes[1].features, std::vector<std::string>{"on-demand"});
  EXPECT_EQ(r->nodes[2].features, std::vector<std::string>{"on-demand"});
  EXPECT_TRUE(Contains(r->summary, "1 spot nodes")) << r->summary;
  StatusOr<ClusterDescription> plain = Parse("nodeGroups: [{count: 2, gpus: 8}]\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->nodes[0].features, std::vector<std::string>{"on-demand"});
  EXPECT_FALSE(Contains(plain->summary, "spot")) << plain->summary;
  StatusOr<ClusterDescription> bad = Parse("nodeGroups: [{count: 2, gpus: 8, spot: maybe}]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "cluster.nodeGroups[0].spot");
}

// A named pool is the node's first feature; "pool: spot" is "spot: true".
TEST(ParseClusterYamlTest, APoolIsTheFirstFeature) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - {count: 1, gpus: 8, pool: reserved-east, features: [a100], prefix: r-}
  - {count: 1, gpus: 8, pool: spot, prefix: s-}
nodes:
  - {name: n1, gpus: 4, pool: spot-east, spot: true}
  - {name: n2, gpus: 4, pool: on-demand}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->nodes.size(), 4u);
  EXPECT_EQ(r->nodes[0].features, (std::vector<std::string>{"reserved-east", "a100", "on-demand"}));
  EXPECT_EQ(r->nodes[1].features, std::vector<std::string>{"spot"});
  EXPECT_EQ(r->nodes[2].features, (std::vector<std::string>{"spot-east", "spot"}));
  EXPECT_EQ(r->nodes[3].features, std::vector<std::string>{"on-demand"});
  StatusOr<ClusterDescription> bad = Parse("nodes: [{name: n1, gpus: 4, pool: \"my pool\"}]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "cluster.nodes[0].pool");
  bad = Parse("nodeGroups: [{count: 2, gpus: 8, spot: true, pool: on-demand}]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "cluster.nodeGroups[0].pool");
  EXPECT_TRUE(Contains(bad.status().message(), "contradicts")) << bad.status().ToString();
}

TEST(ParseClusterYamlTest, UnknownKeySuggestsClosest) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - count: 2
    gpus: 8
    gpuTyp: H100
)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "cluster.nodeGroups[0].gpuTyp");
  EXPECT_TRUE(Contains(r.status().message(), "did you mean \"gpuType\"")) << r.status().message();
}

TEST(ParseClusterYamlTest, UnknownKeyInLaterGroupAndInNodes) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - {count: 2, gpus: 8}
  - {count: 2, gpus: 8, nodesPerLef: 2}
)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "cluster.nodeGroups[1].nodesPerLef");
  EXPECT_TRUE(Contains(r.status().message(), "did you mean \"nodesPerLeaf\""));

  r = Parse("nodes:\n  - {name: a, gpus: 1, rack: r1}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "cluster.nodes[0].rack");
}

TEST(ParseClusterYamlTest, UnknownTopLevelKeyWithoutSuggestion) {
  StatusOr<ClusterDescription> r = Parse("nodeGroups:\n  - {count: 1, gpus: 1}\nbananas: 3\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "cluster.bananas");
  EXPECT_FALSE(Contains(r.status().message(), "did you mean")) << r.status().message();
}

TEST(ParseClusterYamlTest, CountZeroRejected) {
  StatusOr<ClusterDescription> r = Parse("nodeGroups:\n  - {count: 0, gpus: 8}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "cluster.nodeGroups[0].count");
}

TEST(ParseClusterYamlTest, BadGroupValuesRejected) {
  struct Case {
    std::string yaml;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"nodeGroups:\n  - {count: two, gpus: 8}\n", "cluster.nodeGroups[0].count"},
      {"nodeGroups:\n  - {count: 2, gpus: -1}\n", "cluster.nodeGroups[0].gpus"},
      {"nodeGroups:\n  - {count: 2, gpus: 8.5}\n", "cluster.nodeGroups[0].gpus"},
      {"nodeGroups:\n  - {gpus: 8}\n", "cluster.nodeGroups[0].count"},
      {"nodeGroups:\n  - {count: 2}\n", "cluster.nodeGroups[0].gpus"},
      {"nodeGroups:\n  - {count: 2, gpus: 8, memory: lots}\n", "cluster.nodeGroups[0].memory"},
      {"nodeGroups:\n  - {count: 2, gpus: 8, cpus: -4}\n", "cluster.nodeGroups[0].cpus"},
      {"nodeGroups:\n  - {count: 2, gpus: 8, nodesPerLeaf: 0}\n", "cluster.nodeGroups[0].nodesPerLeaf"},
      {"nodeGroups:\n  - {count: [1, 2], gpus: 8}\n", "cluster.nodeGroups[0].count"},
      {"nodeGroups:\n  - 5\n", "cluster.nodeGroups[0]"},
      {"nodeGroups: 5\n", "cluster.nodeGroups"},
      {"nodes:\n  - {gpus: 8}\n", "cluster.nodes[0].name"},
      {"nodes:\n  - {name: a}\n", "cluster.nodes[0].gpus"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    StatusOr<ClusterDescription> r = Parse(c.yaml);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), c.field);
  }
}

TEST(ParseClusterYamlTest, NoNodesRejected) {
  for (const std::string yaml : {"nodeGroups: []\n", "nodes: []\n", "{}\n"}) {
    SCOPED_TRACE(yaml);
    StatusOr<ClusterDescription> r = Parse(yaml);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), "cluster");
  }
}

TEST(ParseClusterYamlTest, MalformedYamlIsAnErrorNotACrash) {
  for (const std::string yaml : {
           "nodeGroups: [ {count: 1, gpus: 8\n",
           "nodeGroups:\n  - count: 1\n   gpus: 8\n  bad indent: [\n",
           "\"unterminated\n",
           "just a string\n",
           "",
           "- 1\n- 2\n",
           "? [a, b]\n: 1\n",
       }) {
    SCOPED_TRACE(yaml);
    StatusOr<ClusterDescription> r = Parse(yaml);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(r.status().message(), "cluster.yaml")) << r.status().message();
  }
}

TEST(LoadClusterFileTest, MissingFileIsNotFound) {
  StatusOr<ClusterDescription> r = LoadClusterFile("/nonexistent/muster/cluster.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

// Found by sim_input_fuzz: yaml-cpp's message quotes the bad escape raw.
TEST(ParseClusterYamlTest, AYamlErrorIsEchoedWithoutControlCharacters) {
  StatusOr<ClusterDescription> r = ParseClusterYaml("nodes: [{name: \"a\\\x1b[2J\"}]\n", "c.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  for (unsigned char c : r.status().ToString()) EXPECT_GE(c, 0x20) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "c.yaml: yaml-cpp: error at line 1")) << r.status().message();
}

// Found by sim_input_fuzz: an unknown key went raw into the field path.
TEST(ParseClusterYamlTest, AnOddKeyIsQuotedInTheFieldPath) {
  StatusOr<ClusterDescription> r = ParseClusterYaml(
      "nod\x11"
      "eGroups: []\n",
      "c.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "cluster[\"nod\\u0011eGroups\"]");
  r = ParseClusterYaml("nodeGroups: [{count: 1, gpus: 1, gpuTyp: x}]\n", "c.yaml");
  EXPECT_EQ(r.status().field(), "cluster.nodeGroups[0].gpuTyp");
}

// A key that is not a name (here a list) was converted with as<string>(),
// which threw: the simulator, and the server reading its configuration,
// died of an uncaught exception.
TEST(ParseClusterYamlTest, AKeyThatIsNotANameIsAnError) {
  StatusOr<ClusterDescription> r =
      ParseClusterYaml("nodes: [{name: a, gpus: 1}]\nqueues: [{name: q, guarantee: {[x]: 1}}]\n", "c.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(r.status().message(), "keys must be GPU type names")) << r.status().ToString();
}

TEST(ParseClusterYamlTest, NodesInAllAreBounded) {
  StatusOr<ClusterDescription> r =
      ParseClusterYaml("nodeGroups:\n  - {count: 600000, gpus: 8}\n  - {count: 600000, gpus: 8}\n", "c.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "cluster.nodeGroups[1].count");
  EXPECT_TRUE(Contains(r.status().message(), "at most 1000000 nodes in all")) << r.status().message();
  EXPECT_TRUE(ParseClusterYaml("nodeGroups:\n  - {count: 1000000, gpus: 8}\n", "c.yaml").ok());
}

TEST(ClusterFromFlagsTest, CountTimesGpus) {
  NodeFlags flags;
  flags.nodes = "80x8";
  StatusOr<ClusterDescription> r = ClusterFromFlags(flags);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes.size(), 80u);
  EXPECT_EQ(r->total_gpus(), 640);
  EXPECT_EQ(r->max_gpus_per_node(), 8);
  for (const auto& n : r->nodes) {
    EXPECT_EQ(n.gpu_type, "gpu");
    EXPECT_EQ(n.capacity.gpus, 8);
  }
  EXPECT_EQ(Leaves(*r).size(), 1u);
  EXPECT_EQ(Spines(*r).size(), 1u);
}

TEST(ClusterFromFlagsTest, TopologyAndType) {
  NodeFlags flags;
  flags.nodes = "10x4";
  flags.nodes_per_leaf = 3;  // leaves of 3, 3, 3, 1
  flags.leaves_per_spine = 2;
  flags.gpu_type = "A100";
  StatusOr<ClusterDescription> r = ClusterFromFlags(flags);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes.size(), 10u);
  EXPECT_EQ(r->total_gpus(), 40);
  EXPECT_EQ(r->nodes[0].gpu_type, "A100");
  EXPECT_EQ(Leaves(*r).size(), 4u);
  EXPECT_EQ(Spines(*r).size(), 2u);
}

TEST(ClusterFromFlagsTest, BadStringsRejected) {
  // Too many nodes or GPUs: an error, not an allocation that fails (was
  // std::bad_alloc, uncaught, for 2000000000x8).
  for (const std::string bad : {"80", "x8", "0x8", "8xq", "80x", "80x0", "-1x8", "", "8x8x8", "2000000000x8",
                                "1000001x8", "1x1025", "1x9000000000000000000"}) {
    SCOPED_TRACE(bad);
    NodeFlags flags;
    flags.nodes = bad;
    StatusOr<ClusterDescription> r = ClusterFromFlags(flags);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), "--nodes");
    EXPECT_TRUE(Contains(r.status().message(), "\"" + bad + "\"")) << r.status().message();
  }
}

TEST(ClusterFromFlagsTest, NegativeTopologyRejected) {
  NodeFlags flags;
  flags.nodes = "4x8";
  flags.nodes_per_leaf = -1;
  EXPECT_EQ(ClusterFromFlags(flags).status().field(), "--nodes-per-leaf");
  flags.nodes_per_leaf = 0;
  flags.leaves_per_spine = -1;
  EXPECT_EQ(ClusterFromFlags(flags).status().field(), "--leaves-per-spine");
}

TEST(SinglePoolTest, OneNodePerGpuTypeHoldingAllGpus) {
  StatusOr<ClusterDescription> r = Parse(R"(
nodeGroups:
  - {count: 2, gpus: 8, gpuType: H100, cpus: 64, memory: 1Ti, nodesPerLeaf: 1}
  - {count: 3, gpus: 4, gpuType: A100}
nodes:
  - {name: extra, gpus: 2, gpuType: H100}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ClusterDescription pool = SinglePool(*r);
  ASSERT_EQ(pool.nodes.size(), 2u);
  EXPECT_EQ(pool.total_gpus(), r->total_gpus());
  std::map<std::string, core::NodeSpec> by_type;
  for (const auto& n : pool.nodes) by_type[n.gpu_type] = n;
  ASSERT_EQ(by_type.count("H100"), 1u);
  ASSERT_EQ(by_type.count("A100"), 1u);
  EXPECT_EQ(by_type["H100"].capacity.gpus, 18);
  EXPECT_EQ(by_type["H100"].capacity.cpu_milli, 128'000);
  EXPECT_EQ(by_type["H100"].capacity.memory_bytes, 2 * (kGi << 10));
  EXPECT_EQ(by_type["A100"].capacity.gpus, 12);
  EXPECT_NE(by_type["H100"].name, by_type["A100"].name);
  EXPECT_EQ(pool.max_gpus_per_node(), 18);
}

TEST(SinglePoolTest, SingleTypeClusterBecomesOneNode) {
  NodeFlags flags;
  flags.nodes = "80x8";
  StatusOr<ClusterDescription> r = ClusterFromFlags(flags);
  ASSERT_TRUE(r.ok());
  const ClusterDescription pool = SinglePool(*r);
  ASSERT_EQ(pool.nodes.size(), 1u);
  EXPECT_EQ(pool.nodes[0].capacity.gpus, 640);
  EXPECT_EQ(pool.nodes[0].gpu_type, "gpu");
}

TEST(ParseClusterYamlTest, QueuesGiveShares) {
  auto c = ParseClusterYaml(
      "nodeGroups: [{count: 2, gpus: 8}]\nqueues: [{name: vc1, share: 3, guarantee: 8, limit: 12}, {name: vc2}]\n",
      "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->shares.at("vc1"), 3.0);
  EXPECT_EQ(c->shares.count("vc2"), 0u);  // the default share, 1
  ASSERT_EQ(c->quotas.size(), 2u);
  EXPECT_EQ(c->quotas[0].guarantee.at("*"), 8);
  EXPECT_EQ(c->quotas[0].limit.at("*"), 12);
  EXPECT_TRUE(c->quotas[1].guarantee.empty());
  auto above =
      ParseClusterYaml("nodeGroups: [{count: 1, gpus: 8}]\nqueues: [{name: a, guarantee: 9, limit: 8}]\n", "t.yaml");
  EXPECT_EQ(above.status().field(), "cluster.queues[0].guarantee");
  auto dup = ParseClusterYaml("nodeGroups: [{count: 1, gpus: 8}]\nqueues: [{name: a}, {name: a}]\n", "t.yaml");
  EXPECT_EQ(dup.status().field(), "cluster.queues[1].name");
  auto zero = ParseClusterYaml("nodeGroups: [{count: 1, gpus: 8}]\nqueues: [{name: a, share: 0}]\n", "t.yaml");
  EXPECT_EQ(zero.status().field(), "cluster.queues[0].share");
  auto typo = ParseClusterYaml("nodeGroups: [{count: 1, gpus: 8}]\nqueues: [{name: a, shares: 2}]\n", "t.yaml");
  EXPECT_EQ(typo.status().field(), "cluster.queues[0].shares");
}

}  // namespace
}  // namespace muster::sim
