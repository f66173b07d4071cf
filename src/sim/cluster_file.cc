#include "sim/cluster_file.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "common/message_text.h"
#include "config/node_list.h"
#include "config/queue_list.h"
#include "config/yaml_fields.h"

namespace muster::sim {

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
  config::NodeGroup g;
  auto parse = [](std::string_view v, int64_t& out) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && p == v.data() + v.size();
  };
  if (x == std::string::npos || !parse(std::string_view(s).substr(0, x), g.count) ||
      !parse(std::string_view(s).substr(x + 1), g.gpus) || g.count < 1 || g.gpus < 1) {
    return InvalidArgument("expected COUNTxGPUS such as 80x8, got " + QuoteForMessage(s), "--nodes");
  }
  if (g.count > config::kMaxNodes || g.gpus > config::kMaxGpusPerNode) {
    return InvalidArgument("at most " + std::to_string(config::kMaxNodes) + " nodes of at most " +
                               std::to_string(config::kMaxGpusPerNode) + " GPUs each, got " + QuoteForMessage(s),
                           "--nodes");
  }
  if (flags.nodes_per_leaf < 0) return InvalidArgument("must be >= 0", "--nodes-per-leaf");
  if (flags.leaves_per_spine < 0) return InvalidArgument("must be >= 0", "--leaves-per-spine");
  g.gpu_type = flags.gpu_type;
  g.nodes_per_leaf = flags.nodes_per_leaf;
  g.leaves_per_spine = flags.leaves_per_spine;
  config::NodeList list;
  config::AddNodeGroup(g, 0, list);
  return ClusterDescription{std::move(list.nodes), std::move(list.summary), {}, {}};
}

StatusOr<ClusterDescription> ParseClusterYaml(const std::string& text, const std::string& source) {
  ASSIGN_OR_RETURN(YAML::Node root, config::LoadYaml(text, source));
  auto parsed = [&]() -> StatusOr<ClusterDescription> {
    if (!root.IsMap()) return InvalidArgument("the cluster file must be a YAML mapping");
    RETURN_IF_ERROR(config::CheckKeys(root, {"nodeGroups", "nodes", "queues"}, "cluster"));
    config::NodeList list;
    RETURN_IF_ERROR(config::ReadNodeList(root, "cluster", list));
    if (list.nodes.empty()) return InvalidArgument("the cluster has no nodes", "cluster");
    ClusterDescription d{std::move(list.nodes), std::move(list.summary), {}, {}};
    if (const YAML::Node queues = root["queues"]) {
      RETURN_IF_ERROR(config::ReadQueueList(queues, "cluster.queues", d.quotas, d.shares));
    }
    return d;
  }();
  // Errors without a field name the file; field errors get it from
  // LoadClusterFile, so the field path stays machine-readable here.
  if (!parsed.ok() && parsed.status().field().empty()) {
    return Status(parsed.status().code(), source + ": " + parsed.status().message());
  }
  return parsed;
}

StatusOr<ClusterDescription> LoadClusterFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open cluster file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = ParseClusterYaml(ss.str(), path);
  // "cluster.yaml: cluster.nodeGroups[0].gpuTyp: unknown field; ..."
  if (!parsed.ok() && !parsed.status().field().empty()) {
    return Status(parsed.status().code(), path + ": " + parsed.status().ToString());
  }
  return parsed;
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
