// Helpers for scheduler tests: small clusters and jobs in one line each.
#pragma once

#include <algorithm>
#include <string>

#include "core/cluster_state.h"
#include "core/decisions.h"

namespace muster::scheduler::testing {

// Adds `count` nodes of `gpus` GPUs of `type`, `per_leaf` per leaf switch
// (0: one leaf), all under one spine. Names are prefix + index.
inline void AddNodes(core::ClusterState& state, int count, int gpus, int per_leaf,
                     const std::string& prefix = "n", const std::string& type = "H100") {
  for (int i = 0; i < count; ++i) {
    core::NodeSpec spec;
    spec.name = prefix + std::to_string(i);
    spec.gpu_type = type;
    spec.capacity.gpus = gpus;
    spec.topology.leaf = prefix + "-leaf" + std::to_string(per_leaf > 0 ? i / per_leaf : 0);
    spec.topology.spine = "spine";
    auto added = state.AddNode(spec);
    (void)added;
  }
}

inline core::JobSpec Gpus(int replicas, int per_replica, Duration limit,
                          const std::string& cls = "normal") {
  core::JobSpec spec;
  spec.replicas = replicas;
  spec.per_replica.gpus = per_replica;
  spec.time_limit = limit;
  spec.priority_class = cls;
  return spec;
}

// The reason a cycle gave `job`, or nullptr.
inline const core::PendingReason* ReasonOf(const core::Decisions& d, core::JobId job) {
  for (const auto& r : d.reasons) {
    if (r.job == job) return &r;
  }
  return nullptr;
}

// Whether a cycle started `job`.
inline bool Started(const core::Decisions& d, core::JobId job) {
  return std::any_of(d.bindings.begin(), d.bindings.end(), [&](const auto& b) { return b.job == job; });
}

}  // namespace muster::scheduler::testing
