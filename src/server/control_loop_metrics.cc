// The control loop's side of /metrics: the cluster's state at a scrape.
#include "server/control_loop.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace muster::server {

namespace {

// A quota over all GPU types: its "*" entry, else the sum of its types; -1
// when there is none.
int64_t AllTypes(const std::map<std::string, int64_t>& quota) {
  if (quota.empty()) return -1;
  if (auto all = quota.find("*"); all != quota.end()) return all->second;
  int64_t sum = 0;
  for (const auto& [type, n] : quota) sum += n;
  return sum;
}

}  // namespace

void ControlLoop::Gauges(Done<StatusOr<ServerMetrics::Gauges>> done) {
  using R = StatusOr<ServerMetrics::Gauges>;
  loop_.Async<R>(
      [this](const std::function<void(R)>& reply) {
        ServerMetrics::Gauges g;
        const Time now = clock_.Now();
        for (const auto& [id, row] : jobs_.rows()) {
          const core::JobState state = StateOf(id);
          if (core::IsTerminal(state)) continue;
          ++g.jobs[{row.queue, core::JobStateName(state)}];
          if (state == core::JobState::kPending) {
            const double waited = std::max<double>(0, static_cast<double>(now.millis() - row.submit_ms) / 1000);
            double& oldest = g.oldest_pending_seconds[row.queue];
            oldest = std::max(oldest, waited);
          }
        }
        g.straggling_replicas = stragglers_.Straggling();
        g.syncs_waiting = waits_.Waiting();
        if (pacer_.last_end() != Time::Zero())
          g.last_cycle_unix_seconds = static_cast<double>(pacer_.last_end().millis()) / 1000;
        const std::vector<ReservedGpus> reserved = ReservedByNode();
        for (size_t i = 0; i < state_.nodes().size(); ++i) {
          const core::Node& n = state_.nodes()[i];
          if (agents_.Removed(n.spec.name)) continue;
          g.gpus += n.spec.capacity.gpus;
          g.gpus_allocated += n.spec.capacity.gpus - n.free.gpus;
          const AgentRegistry::Agent* agent = agents_.Find(n.spec.name);
          const int64_t unhealthy = std::min<int64_t>(agent ? agent->unhealthy_gpus : 0, n.free.gpus);
          g.gpus_unhealthy += unhealthy;
          if (!n.schedulable) g.gpus_cordoned += n.free.gpus - unhealthy;
          // The backfill plan's reservations, on nodes that take work.
          if (n.schedulable) g.gpus_reserved += std::min<int64_t>(reserved[i].gpus, n.free.gpus - unhealthy);
          std::string condition = "Ready";
          if (const auto index = state_.FindNode(n.spec.name); index && liveness_.Watched(*index)) {
            condition = lifecycle::NodeConditionName(liveness_.Of(*index));
          }
          ++g.nodes[condition];
        }
        g.gpus_held = preemptions_.HeldGpus();
        // Held GPUs are free ones: never more than are free and usable.
        g.gpus_held = std::min(g.gpus_held, g.gpus - g.gpus_allocated - g.gpus_cordoned - g.gpus_unhealthy);
        g.gpus_reserved =
            std::min(g.gpus_reserved, g.gpus - g.gpus_allocated - g.gpus_cordoned - g.gpus_unhealthy - g.gpus_held);
        for (const core::QueueConfig& c : state_.config().queues) {
          ServerMetrics::Gauges::Queue& q = g.queues[c.name];
          q.guarantee = AllTypes(c.guarantee);
          q.limit = AllTypes(c.limit);
        }
        for (const auto& [queue, gpus] : state_.GpusByQueue()) g.queues[state_.QueueName(queue)].used = gpus;
        reply(std::move(g));
      },
      std::move(done), ShuttingDown());
}

}  // namespace muster::server
