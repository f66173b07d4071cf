#include "config/node_list.h"

#include <algorithm>

#include "config/yaml_fields.h"

namespace muster::config {
namespace {

// The optional "cpus" and "memory" keys of `map`; absent keys leave 0.
Status CpusAndMemory(const YAML::Node& map, const std::string& path, int64_t& cpu_milli, int64_t& memory) {
  if (map["cpus"]) {
    ASSIGN_OR_RETURN(cpu_milli, CpuMilli(map["cpus"], path + ".cpus"));
  }
  if (map["memory"]) {
    ASSIGN_OR_RETURN(memory, MemoryBytes(map["memory"], path + ".memory"));
  }
  return Status::Ok();
}

// A node feature: a name of 1 to 64 letters, digits and ._-.
StatusOr<std::string> NodeFeatureName(const YAML::Node& v, const std::string& path) {
  if (!v.IsScalar() || !core::IsFeatureName(v.Scalar())) {
    return InvalidArgument("must be a name of 1 to 64 letters, digits and ._-", path);
  }
  return v.Scalar();
}

// The optional "features" key of `map`: node labels jobs may require
// (Slurm's node features: -C/--constraint).
Status Features(const YAML::Node& map, const std::string& path, std::vector<std::string>& out) {
  const YAML::Node f = map["features"];
  if (!f) return Status::Ok();
  if (!f.IsSequence()) return InvalidArgument("must be a list of feature names", path + ".features");
  for (size_t i = 0; i < f.size(); ++i) {
    ASSIGN_OR_RETURN(std::string name, NodeFeatureName(f[i], path + ".features[" + std::to_string(i) + "]"));
    out.push_back(std::move(name));
  }
  return Status::Ok();
}

// The optional "spot" and "pool" keys of `map`: "pool: spot" is "spot:
// true"; another name becomes the first feature, the one that names the
// node's pool (server/pool_prices.h).
Status NodePool(const YAML::Node& map, const std::string& path, std::vector<std::string>& features, bool& spot) {
  if (map["spot"]) {
    ASSIGN_OR_RETURN(spot, Bool(map["spot"], path + ".spot"));
  }
  if (!map["pool"]) return Status::Ok();
  ASSIGN_OR_RETURN(std::string name, NodeFeatureName(map["pool"], path + ".pool"));
  if (name == core::kSpotFeature) {
    spot = true;
  } else if (name == core::kOnDemandFeature) {
    if (spot) return InvalidArgument("on-demand contradicts spot: true", path + ".pool");
  } else {
    features.insert(features.begin(), std::move(name));
  }
  return Status::Ok();
}

}  // namespace

void AddNodeGroup(const NodeGroup& g, int group_index, NodeList& out) {
  // Default names carry the group index so two groups of one type never clash.
  const std::string prefix =
      g.prefix.empty() ? g.gpu_type + "-" + (group_index > 0 ? "g" + std::to_string(group_index) + "-" : "") : g.prefix;
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
    n.features = g.features;
    if (g.spot) n.features.emplace_back(core::kSpotFeature);
    out.nodes.push_back(std::move(n));
  }
  if (!out.summary.empty()) out.summary += "; ";
  out.summary += std::to_string(g.count) + " nodes x " + std::to_string(g.gpus) + " GPU (" + g.gpu_type + ")";
  if (g.nodes_per_leaf > 0) out.summary += ", " + std::to_string(g.nodes_per_leaf) + " nodes per leaf";
  if (g.leaves_per_spine > 0) {
    out.summary += ", " + std::to_string(g.leaves_per_spine) + " leaves per spine";
  }
}

Status ReadNodeList(const YAML::Node& map, const std::string& path, NodeList& out) {
  const auto too_many = [](const std::string& field) {
    return InvalidArgument("the node list may hold at most " + std::to_string(kMaxNodes) + " nodes in all", field);
  };
  if (const YAML::Node groups = map["nodeGroups"]) {
    if (!groups.IsSequence()) return InvalidArgument("must be a list", path + ".nodeGroups");
    for (size_t i = 0; i < groups.size(); ++i) {
      const YAML::Node g = groups[i];
      const std::string item = path + ".nodeGroups[" + std::to_string(i) + "]";
      if (!g.IsMap()) return InvalidArgument("must be a mapping", item);
      RETURN_IF_ERROR(CheckKeys(g,
                                {"count", "gpus", "gpuType", "cpus", "memory", "nodesPerLeaf", "leavesPerSpine",
                                 "prefix", "spot", "pool", "features"},
                                item));
      NodeGroup grp;
      if (!g["count"]) return InvalidArgument("is required", item + ".count");
      if (!g["gpus"]) return InvalidArgument("is required", item + ".gpus");
      ASSIGN_OR_RETURN(grp.count, Int(g["count"], item + ".count", 1, kMaxNodes));
      if (static_cast<int64_t>(out.nodes.size()) + grp.count > kMaxNodes) return too_many(item + ".count");
      ASSIGN_OR_RETURN(grp.gpus, Int(g["gpus"], item + ".gpus", 0, kMaxGpusPerNode));
      if (g["gpuType"]) grp.gpu_type = g["gpuType"].Scalar();
      RETURN_IF_ERROR(CpusAndMemory(g, item, grp.cpu_milli, grp.memory));
      if (g["nodesPerLeaf"]) {
        ASSIGN_OR_RETURN(grp.nodes_per_leaf, Int(g["nodesPerLeaf"], item + ".nodesPerLeaf", 1));
      }
      if (g["leavesPerSpine"]) {
        ASSIGN_OR_RETURN(grp.leaves_per_spine, Int(g["leavesPerSpine"], item + ".leavesPerSpine", 1));
      }
      if (g["prefix"]) grp.prefix = g["prefix"].Scalar();
      RETURN_IF_ERROR(Features(g, item, grp.features));
      RETURN_IF_ERROR(NodePool(g, item, grp.features, grp.spot));
      AddNodeGroup(grp, static_cast<int>(i), out);
    }
  }
  if (const YAML::Node nodes = map["nodes"]) {
    if (!nodes.IsSequence()) return InvalidArgument("must be a list", path + ".nodes");
    for (size_t i = 0; i < nodes.size(); ++i) {
      const YAML::Node n = nodes[i];
      const std::string item = path + ".nodes[" + std::to_string(i) + "]";
      if (!n.IsMap()) return InvalidArgument("must be a mapping", item);
      if (static_cast<int64_t>(out.nodes.size()) >= kMaxNodes) return too_many(item);
      RETURN_IF_ERROR(CheckKeys(
          n, {"name", "gpus", "gpuType", "cpus", "memory", "leaf", "spine", "spot", "pool", "features"}, item));
      core::NodeSpec spec;
      if (!n["name"]) return InvalidArgument("is required", item + ".name");
      spec.name = n["name"].Scalar();
      if (!n["gpus"]) return InvalidArgument("is required", item + ".gpus");
      ASSIGN_OR_RETURN(spec.capacity.gpus, Int(n["gpus"], item + ".gpus", 0, kMaxGpusPerNode));
      spec.gpu_type = n["gpuType"] ? n["gpuType"].Scalar() : "gpu";
      RETURN_IF_ERROR(CpusAndMemory(n, item, spec.capacity.cpu_milli, spec.capacity.memory_bytes));
      if (n["leaf"]) spec.topology.leaf = n["leaf"].Scalar();
      if (n["spine"]) spec.topology.spine = n["spine"].Scalar();
      RETURN_IF_ERROR(Features(n, item, spec.features));
      bool spot = false;
      RETURN_IF_ERROR(NodePool(n, item, spec.features, spot));
      if (spot) spec.features.emplace_back(core::kSpotFeature);
      out.nodes.push_back(std::move(spec));
    }
    if (!out.summary.empty()) out.summary += "; ";
    out.summary += std::to_string(nodes.size()) + " listed nodes";
  }
  int64_t spot = 0;
  for (core::NodeSpec& n : out.nodes) {
    n.features = core::WithPoolFeature(std::move(n.features));
    spot += core::InSpotPool(n.features);
  }
  if (spot > 0) out.summary += "; " + std::to_string(spot) + " spot nodes";
  return Status::Ok();
}

}  // namespace muster::config
