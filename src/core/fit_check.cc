#include "core/fit_check.h"

#include <algorithm>
#include <set>

#include "common/quantity.h"

namespace muster::core {

Status CheckEverFits(const JobSpec& job, const std::vector<Node>& nodes) {
  if (nodes.empty()) return Status::Ok();
  const Resources& per = job.per_replica;
  const bool typed = per.gpus > 0 && !job.gpu_type.empty();
  std::set<std::string> types;
  for (const Node& n : nodes) {
    if (!n.spec.gpu_type.empty()) types.insert(n.spec.gpu_type);
  }
  auto list = [](const auto& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? std::string("none") : out;
  };
  if (typed && !types.count(job.gpu_type)) {
    return InvalidArgument("no node has GPUs of type " + job.gpu_type + " (the cluster's types: " + list(types) + ")",
                           "resources.gpuType");
  }
  // Nodes of the type with every required feature.
  auto has_features = [&](const Node& n) {
    return std::all_of(job.required_features.begin(), job.required_features.end(),
                       [&](const std::string& f) { return NodeHasFeature(n.spec.features, f); });
  };
  std::vector<const Node*> candidates;
  for (const Node& n : nodes) {
    if (typed && n.spec.gpu_type != job.gpu_type) continue;
    if (has_features(n)) candidates.push_back(&n);
  }
  if (candidates.empty()) {
    // The pools first: a job runs on spot nodes only when it says so.
    const bool pool_only = std::none_of(nodes.begin(), nodes.end(), [&](const Node& n) {
      return std::find(n.spec.features.begin(), n.spec.features.end(), kOnDemandFeature) != n.spec.features.end();
    });
    if (pool_only && std::find(job.required_features.begin(), job.required_features.end(), kOnDemandFeature) !=
                         job.required_features.end()) {
      return InvalidArgument(
          "the cluster has no on-demand node, and the job may run on spot nodes only with spot: true", "features");
    }
    std::set<std::string> missing;
    for (const std::string& f : job.required_features) {
      if (std::none_of(nodes.begin(), nodes.end(), [&](const Node& n) {
            return (!typed || n.spec.gpu_type == job.gpu_type) && NodeHasFeature(n.spec.features, f);
          })) {
        missing.insert(f);
      }
    }
    std::vector<std::string> wanted(job.required_features.begin(), job.required_features.end());
    return InvalidArgument("no node" + std::string(typed ? " with " + job.gpu_type + " GPUs" : "") +
                               " has all of its required features (" + list(wanted) +
                               (missing.empty() ? "" : "; none has " + list(missing)) + ")",
                           "features");
  }
  Resources largest;
  std::vector<const Node*> fitting;
  for (const Node* n : candidates) {
    const Resources& c = n->spec.capacity;
    largest = {std::max(largest.gpus, c.gpus), std::max(largest.cpu_milli, c.cpu_milli),
               std::max(largest.memory_bytes, c.memory_bytes)};
    if (c.gpus >= per.gpus && c.cpu_milli >= per.cpu_milli && c.memory_bytes >= per.memory_bytes) fitting.push_back(n);
  }
  const std::string where = typed ? " of type " + job.gpu_type : std::string();
  if (fitting.empty()) {
    if (per.gpus > largest.gpus) {
      return InvalidArgument("a replica asks for " + std::to_string(per.gpus) + " GPUs; the most any node" + where +
                                 " has is " + std::to_string(largest.gpus),
                             "resources.gpus");
    }
    if (per.cpu_milli > largest.cpu_milli) {
      return InvalidArgument("a replica asks for " + FormatCpus(per.cpu_milli) + " CPUs; the most any node" + where +
                                 " has is " + FormatCpus(largest.cpu_milli),
                             "resources.cpus");
    }
    if (per.memory_bytes > largest.memory_bytes) {
      return InvalidArgument("a replica asks for " + FormatMemory(per.memory_bytes) + " of memory; the most any node" +
                                 where + " has is " + FormatMemory(largest.memory_bytes),
                             "resources.memory");
    }
    return InvalidArgument("no single node" + where + " holds a replica's " + std::to_string(per.gpus) + " GPUs, " +
                               FormatCpus(per.cpu_milli) + " CPUs and " + FormatMemory(per.memory_bytes) + " together",
                           "resources");
  }
  const int64_t need = job.min_replicas > 0 ? job.min_replicas : job.replicas;
  if (job.one_per_node || job.exclusive) {
    if (static_cast<int64_t>(fitting.size()) < need) {
      return InvalidArgument("needs " + std::to_string(need) + " distinct nodes; the cluster has " +
                                 std::to_string(fitting.size()) + " that can hold a replica",
                             "replicas");
    }
    return Status::Ok();
  }
  int64_t room = 0;
  for (const Node* n : fitting) room += n->spec.capacity.CopiesOf(per, need);
  if (room < need) {
    return InvalidArgument("needs room for " + std::to_string(need) + " replicas; the whole cluster holds " +
                               std::to_string(room) + " of this size",
                           "replicas");
  }
  return Status::Ok();
}

}  // namespace muster::core
