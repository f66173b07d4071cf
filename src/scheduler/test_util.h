// Helpers for scheduler tests: small clusters and jobs in one line each.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "core/cluster_state.h"
#include "core/decisions.h"
#include "scheduler/scheduler.h"

namespace muster::scheduler::testing {

// Adds `count` nodes of `gpus` GPUs of `type`, `per_leaf` per leaf switch
// (0: one leaf), all under one spine. Names are prefix + index.
inline void AddNodes(core::ClusterState& state, int count, int gpus, int per_leaf, const std::string& prefix = "n",
                     const std::string& type = "H100") {
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

inline core::JobSpec Gpus(int replicas, int per_replica, Duration limit, const std::string& cls = "normal") {
  core::JobSpec spec;
  spec.replicas = replicas;
  spec.per_replica.gpus = per_replica;
  spec.time_limit = limit;
  spec.priority_class = cls;
  return spec;
}

// A scheduler with `options`, which the test means to be valid.
inline std::unique_ptr<Scheduler> MakeScheduler(SchedulerOptions options = {}) {
  auto s = Scheduler::Create(std::move(options));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

// Applies a cycle as the server does: failures end the jobs, bindings start
// them, and each preemption's placement is held for its job while its
// victims get `grace` to stop (they keep running until the test ends them).
inline void Apply(core::ClusterState& state, const core::Decisions& d, Time now,
                  Duration grace = Duration::Seconds(30)) {
  for (const auto& f : d.failures) ASSERT_TRUE(state.EndPending(f.job, f.state, now, f.reason).ok());
  for (const auto& b : d.bindings) ASSERT_TRUE(state.Bind(b, now).ok()) << "job " << b.job;
  for (const auto& p : d.preemptions) {
    ASSERT_TRUE(state.Nominate(p.job, p.allocations, p.victims).ok());
    for (const auto& s : p.shrinks) ASSERT_TRUE(state.MarkShrinking(s.job).ok());
    for (core::JobId v : p.victims) {
      const bool shrunk = std::any_of(p.shrinks.begin(), p.shrinks.end(), [&](const auto& s) { return s.job == v; });
      if (!shrunk) {
        ASSERT_TRUE(state.MarkStopping(v, now + grace).ok());
      }
    }
  }
  for (const auto& g : d.growths) ASSERT_TRUE(state.Grow(g.job, g.allocations, now).ok()) << "job " << g.job;
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

// The nodes a cycle started `job` on.
inline std::set<core::NodeIndex> NodesOf(const core::Decisions& d, core::JobId job) {
  std::set<core::NodeIndex> out;
  for (const auto& b : d.bindings) {
    if (b.job != job) continue;
    for (const auto& a : b.allocations) out.insert(a.node);
  }
  return out;
}

}  // namespace muster::scheduler::testing
