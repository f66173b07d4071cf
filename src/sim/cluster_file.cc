#include "sim/cluster_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "common/quantity.h"

namespace muster::sim {
namespace {

struct Group {
  int64_t count = 0;
  int64_t gpus = 0;
  std::string gpu_type = "gpu";
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  int64_t nodes_per_leaf = 0;
  int64_t leaves_per_spine = 0;
  std::string prefix;
};

void AddGroup(const Group& g, int group_index, ClusterDescription& out) {
  // Default names carry the group index so two groups of one type never clash.
  const std::string prefix =
      g.prefix.empty() ? g.gpu_type + "-" + (group_index > 0 ? "g" + std::to_string(group_index) + "-" : "")
                       : g.prefix;
  const std::string tag = "g" + std::to_string(group_index);
  for (int64_t i = 0; i < g.count; ++i) {
    core::NodeSpec n;
    n.name = prefix + std::to_string(i);
    n.gpu_type = g.gpu_type;
    n.capacity = {g.gpus, g.cpu_milli, g.memory};
    const int64_t leaf = g.nodes_per_leaf > 0 ? i / g.nodes_per_leaf : 0;
    const int64_t spine = g.leaves_per_spine > 0 ? leaf / g.leaves_per_spine : 0;
    n.topology.leaf = tag + "-leaf" + std::to_string(leaf);
    n.topology.spine = tag + "-spine" + std::to_string(spine);
    out.nodes.push_back(std::move(n));
  }
  if (!out.summary.empty()) out.summary += "; ";
  out.summary += std::to_string(g.count) + " nodes x " + std::to_string(g.gpus) + " GPU (" +
                 g.gpu_type + ")";
  if (g.nodes_per_leaf > 0) out.summary += ", " + std::to_string(g.nodes_per_leaf) + " nodes per leaf";
  if (g.leaves_per_spine > 0) {
    out.summary += ", " + std::to_string(g.leaves_per_spine) + " leaves per spine";
  }
}

Status CheckKeys(const YAML::Node& map, const std::vector<std::string>& known, const std::string& path) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string msg = "unknown field";
    const std::string close = ClosestMatch(key, known);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    return InvalidArgument(msg, path + "." + key);
  }
  return Status::Ok();
}

StatusOr<int64_t> Int(const YAML::Node& v, const std::string& path, int64_t min) {
  int64_t out = 0;
  const std::string s = v.Scalar();
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (!v.IsScalar() || ec != std::errc() || p != s.data() + s.size()) {
    return InvalidArgument("must be an integer, got \"" + s + "\"", path);
  }
  if (out < min) return InvalidArgument("must be >= " + std::to_string(min) + ", got " + s, path);
  return out;
}

// The optional "cpus" and "memory" keys of `map`; absent keys leave 0.
Status CpusAndMemory(const YAML::Node& map, const std::string& path, int64_t& cpu_milli,
                     int64_t& memory) {
  if (map["cpus"]) {
    auto cpu = ParseCpuMilli(map["cpus"].Scalar());
    if (!cpu.ok()) return cpu.status().WithFieldPrefix(path + ".cpus");
    cpu_milli = *cpu;
  }
  if (map["memory"]) {
    auto mem = ParseMemoryBytes(map["memory"].Scalar());
    if (!mem.ok()) return mem.status().WithFieldPrefix(path + ".memory");
    memory = *mem;
  }
  return Status::Ok();
}

StatusOr<ClusterDescription> Parse(const YAML::Node& root) {
  ClusterDescription out;
  if (!root.IsMap()) return InvalidArgument("the cluster file must be a YAML mapping");
  RETURN_IF_ERROR(CheckKeys(root, {"nodeGroups", "nodes"}, "cluster"));
  if (const YAML::Node groups = root["nodeGroups"]) {
    if (!groups.IsSequence()) return InvalidArgument("must be a list", "cluster.nodeGroups");
    for (size_t i = 0; i < groups.size(); ++i) {
      const YAML::Node g = groups[i];
      const std::string path = "cluster.nodeGroups[" + std::to_string(i) + "]";
      if (!g.IsMap()) return InvalidArgument("must be a mapping", path);
      RETURN_IF_ERROR(CheckKeys(g, {"count", "gpus", "gpuType", "cpus", "memory", "nodesPerLeaf",
                                    "leavesPerSpine", "prefix"},
                                path));
      Group grp;
      if (!g["count"]) return InvalidArgument("is required", path + ".count");
      if (!g["gpus"]) return InvalidArgument("is required", path + ".gpus");
      ASSIGN_OR_RETURN(grp.count, Int(g["count"], path + ".count", 1));
      ASSIGN_OR_RETURN(grp.gpus, Int(g["gpus"], path + ".gpus", 0));
      if (g["gpuType"]) grp.gpu_type = g["gpuType"].Scalar();
      RETURN_IF_ERROR(CpusAndMemory(g, path, grp.cpu_milli, grp.memory));
      if (g["nodesPerLeaf"]) {
        ASSIGN_OR_RETURN(grp.nodes_per_leaf, Int(g["nodesPerLeaf"], path + ".nodesPerLeaf", 1));
      }
      if (g["leavesPerSpine"]) {
        ASSIGN_OR_RETURN(grp.leaves_per_spine, Int(g["leavesPerSpine"], path + ".leavesPerSpine", 1));
      }
      if (g["prefix"]) grp.prefix = g["prefix"].Scalar();
      AddGroup(grp, static_cast<int>(i), out);
    }
  }
  if (const YAML::Node nodes = root["nodes"]) {
    if (!nodes.IsSequence()) return InvalidArgument("must be a list", "cluster.nodes");
    for (size_t i = 0; i < nodes.size(); ++i) {
      const YAML::Node n = nodes[i];
      const std::string path = "cluster.nodes[" + std::to_string(i) + "]";
      if (!n.IsMap()) return InvalidArgument("must be a mapping", path);
      RETURN_IF_ERROR(CheckKeys(n, {"name", "gpus", "gpuType", "cpus", "memory", "leaf", "spine"}, path));
      core::NodeSpec spec;
      if (!n["name"]) return InvalidArgument("is required", path + ".name");
      spec.name = n["name"].Scalar();
      if (!n["gpus"]) return InvalidArgument("is required", path + ".gpus");
      ASSIGN_OR_RETURN(spec.capacity.gpus, Int(n["gpus"], path + ".gpus", 0));
      spec.gpu_type = n["gpuType"] ? n["gpuType"].Scalar() : "gpu";
      RETURN_IF_ERROR(CpusAndMemory(n, path, spec.capacity.cpu_milli, spec.capacity.memory_bytes));
      if (n["leaf"]) spec.topology.leaf = n["leaf"].Scalar();
      if (n["spine"]) spec.topology.spine = n["spine"].Scalar();
      out.nodes.push_back(std::move(spec));
    }
    if (!out.summary.empty()) out.summary += "; ";
    out.summary += std::to_string(nodes.size()) + " listed nodes";
  }
  if (out.nodes.empty()) return InvalidArgument("the cluster has no nodes", "cluster");
  return out;
}

}  // namespace

int64_t ClusterDescription::total_gpus() const {
  int64_t n = 0;
  for (const auto& node : nodes) n += node.capacity.gpus;
  return n;
}

int64_t ClusterDescription::max_gpus_per_node() const {
  int64_t n = 0;
  for (const auto& node : nodes) n = std::max(n, node.capacity.gpus);
  return n;
}

StatusOr<ClusterDescription> ClusterFromFlags(const NodeFlags& flags) {
  const std::string& s = flags.nodes;
  const size_t x = s.find('x');
  Group g;
  auto parse = [](std::string_view v, int64_t& out) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && p == v.data() + v.size();
  };
  if (x == std::string::npos || !parse(std::string_view(s).substr(0, x), g.count) ||
      !parse(std::string_view(s).substr(x + 1), g.gpus) || g.count < 1 || g.gpus < 1) {
    return InvalidArgument("expected COUNTxGPUS such as 80x8, got \"" + s + "\"", "--nodes");
  }
  if (flags.nodes_per_leaf < 0) return InvalidArgument("must be >= 0", "--nodes-per-leaf");
  if (flags.leaves_per_spine < 0) return InvalidArgument("must be >= 0", "--leaves-per-spine");
  g.gpu_type = flags.gpu_type;
  g.nodes_per_leaf = flags.nodes_per_leaf;
  g.leaves_per_spine = flags.leaves_per_spine;
  ClusterDescription out;
  AddGroup(g, 0, out);
  return out;
}

StatusOr<ClusterDescription> ParseClusterYaml(const std::string& text, const std::string& source) {
  try {
    auto parsed = Parse(YAML::Load(text));
    if (!parsed.ok()) {
      const Status& s = parsed.status();
      return Status(s.code(), source + ": " + s.message(), s.field());
    }
    return parsed;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ": " + e.what());
  }
}

StatusOr<ClusterDescription> LoadClusterFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open cluster file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseClusterYaml(ss.str(), path);
}

ClusterDescription SinglePool(const ClusterDescription& cluster) {
  std::map<std::string, core::NodeSpec> pools;
  for (const auto& n : cluster.nodes) {
    core::NodeSpec& p = pools[n.gpu_type];
    p.name = "pool-" + n.gpu_type;
    p.gpu_type = n.gpu_type;
    p.capacity += n.capacity;
  }
  ClusterDescription out;
  for (auto& [type, spec] : pools) {
    if (!out.summary.empty()) out.summary += "; ";
    out.summary += "single pool of " + std::to_string(spec.capacity.gpus) + " GPU (" + type + ")";
    out.nodes.push_back(std::move(spec));
  }
  return out;
}

}  // namespace muster::sim
