// ControlLoop: nodes as operators see and change them: the node list,
// cordon, drain, declare-lost and remove (admins only).
#include <algorithm>
#include <set>

#include "server/control_loop.h"

#include <fmt/format.h>

namespace muster::server {

ControlLoop::NodeView ControlLoop::ViewOf(const core::Node& n) const {
  NodeView v;
  v.spec = n.spec;
  v.free = n.free;
  v.schedulable = n.schedulable;
  v.pool = PoolOf(n);
  v.status_json = "{}";
  const AgentRegistry::Agent* agent = agents_.Find(n.spec.name);
  if (agent == nullptr) return v;
  const AgentRegistry::Agent& a = *agent;
  v.status_json = a.status_json;
  const std::optional<core::NodeIndex> index = state_.FindNode(n.spec.name);
  if (index && liveness_.Watched(*index)) {
    v.condition = lifecycle::NodeConditionName(liveness_.Of(*index));
    v.last_seen_ms = liveness_.LastHeard(*index).millis();
  }
  v.cordon = !a.cordon.empty() ? a.cordon : a.resizing;
  v.reclaim_at = a.reclaim_at;
  return v;
}

std::string ControlLoop::PoolOf(const core::Node& n) const { return settings_.Get()->prices.PoolOf(n.spec.features); }

std::vector<ControlLoop::ReservedGpus> ControlLoop::ReservedByNode() const {
  std::vector<ReservedGpus> out(state_.nodes().size());
  for (const core::Reservation& r : reservations_) {
    for (const core::Allocation& a : r.allocations) {
      if (a.node < 0 || static_cast<size_t>(a.node) >= out.size()) continue;
      ReservedGpus& mine = out[a.node];
      const int64_t take = std::min<int64_t>(state_.nodes()[a.node].free.gpus - mine.gpus, a.resources.gpus);
      if (take <= 0) continue;
      mine.gpus += take;
      if (mine.first_job == 0) mine.first_job = r.job;
    }
  }
  return out;
}

void ControlLoop::Nodes(Done<StatusOr<std::vector<NodeView>>> done) {
  using R = StatusOr<std::vector<NodeView>>;
  loop_.Async<R>(
      [this](std::function<void(R)> reply) {
        std::vector<NodeView> out;
        for (const core::Node& n : state_.nodes()) out.push_back(ViewOf(n));
        for (const auto& [id, r] : state_.running()) {
          std::set<core::NodeIndex> seen;
          for (size_t i = 0; i < r.allocations.size(); ++i) {
            const core::Allocation& a = r.allocations[i];
            if (seen.insert(a.node).second) ++out[a.node].running_jobs;
            if (i >= r.gpu_ids.size()) continue;
            for (int32_t g : r.gpu_ids[i]) out[a.node].gpu_use.push_back({g, id, state_.QueueName(r.queue)});
          }
        }
        for (NodeView& v : out) {
          std::sort(v.gpu_use.begin(), v.gpu_use.end(), [](const auto& x, const auto& y) { return x.index < y.index; });
        }
        const std::vector<ReservedGpus> reserved = ReservedByNode();
        for (size_t i = 0; i < out.size() && i < reserved.size(); ++i) {
          out[i].reserved_gpus = reserved[i].gpus;
          out[i].reserved_for = reserved[i].first_job;
        }
        std::erase_if(out, [this](const NodeView& v) { return agents_.Removed(v.spec.name); });
        // By name, as people look for them (registration order is an accident).
        std::sort(out.begin(), out.end(),
                  [](const NodeView& x, const NodeView& y) { return x.spec.name < y.spec.name; });
        reply(std::move(out));
      },
      std::move(done), ShuttingDown());
}

StatusOr<core::NodeIndex> ControlLoop::AdminNode(const std::string& node, const Identity& who, const std::string& verb,
                                                 bool admins_only) {
  RETURN_IF_ERROR(admins_only ? authz_.MustBeAdmin(who, verb + " a node")
                              : authz_.MayOperateNodes(who, verb + " a node"));
  const std::optional<core::NodeIndex> index = state_.FindNode(node);
  if (!index || agents_.Removed(node)) return NotFound("node " + node + " does not exist");
  return *index;
}

void ControlLoop::ReplyNodeView(store::WriteBatch b, core::NodeIndex node,
                                const std::function<void(StatusOr<NodeView>)>& reply) {
  NodeView view = ViewOf(state_.nodes()[node]);
  if (b.empty()) return reply(view);
  Persist(std::move(b), [reply, view](const Status& st) {
    if (!st.ok()) return reply(st);
    reply(view);
  });
}

void ControlLoop::Cordon(const std::string& node, bool cordon, const Identity& who, bool drain,
                         Done<StatusOr<NodeView>> done) {
  using R = StatusOr<NodeView>;
  loop_.Async<R>(
      [this, node, cordon, who, user = who.Describe(), drain](std::function<void(R)> reply) {
        const std::string verb = drain ? "drain" : cordon ? "cordon" : "uncordon";
        const StatusOr<core::NodeIndex> index = AdminNode(node, who, verb, /*admins_only=*/false);
        if (!index.ok()) return reply(index.status());
        AgentRegistry::Agent& a = agents_.Get(node);
        const std::string before = a.cordon;
        store::WriteBatch b;
        if (!cordon && a.reclaim_at) {  // the node is back: its agent forgets the deadline
          a.reclaim_at.reset();
          lifecycle::Effects fx;
          lifecycle_.Touch(*index, fx);
          ApplyEffects(fx, b);
        }
        const std::optional<std::string> status = agents_.SetCordon(
            a, cordon ? (before.empty() ? (drain ? "drained by " : "cordoned by ") + user : before) : "");
        UpdateSchedulable(*index);
        if (status) b.nodes.push_back({node, *status, "READY", clock_.Now().millis()});
        if (drain)
          RequeueNodeJobs(*index, "its node " + node + " is drained by " + user, "Drain",
                          lifecycle::StopPace::kStaggered, b);
        if (before != a.cordon) {
          b.events.push_back({0, 0, clock_.Now().millis(),
                              drain    ? "NodeDrained"
                              : cordon ? "NodeCordoned"
                                       : "NodeUncordoned",
                              "", node + " " + verb + "ed by " + user});
        }
        ReplyNodeView(std::move(b), *index, reply);
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::RequeueNodeJobs(core::NodeIndex node, const std::string& why, const std::string& event_reason,
                                  lifecycle::StopPace pace, store::WriteBatch& b) {
  // Stop changes nothing for an attempt already stopping; a copy, as
  // stopping an attempt that ran nothing ends it at once.
  const std::set<int64_t> jobs = lifecycle_.AttemptsOn(node);
  for (int64_t job : jobs) {
    lifecycle::Effects fx;
    if (lifecycle_.Stop(job, std::nullopt, true, why, pace, fx) == lifecycle::StopOutcome::kStopping) {
      b.events.push_back(Event(job, "Requeuing", event_reason, why + "; stopping its replicas"));
    }
    ApplyEffects(fx, b);
  }
}

void ControlLoop::BeginReclaim(core::NodeIndex node, Time deadline, const std::string& by, store::WriteBatch& b) {
  const std::string& name = state_.nodes()[node].spec.name;
  AgentRegistry::Agent& a = agents_.Get(name);
  // An agent repeats its notice at each sync, its time left measured anew.
  if (a.reclaim_at && *a.reclaim_at <= deadline + Duration::Seconds(1)) return;
  const bool first = !a.reclaim_at;
  a.reclaim_at = deadline;
  const Time now = clock_.Now();
  const std::string when = fmt::format("in {:.0f} s", std::max<int64_t>(0, (deadline - now).millis()) / 1000.0);
  const std::string why = "reclaimed " + when + " (notice from " + by + ")";
  if (const std::optional<std::string> status = agents_.SetCordon(a, why)) {
    b.nodes.push_back({name, *status, "READY", now.millis()});
  }
  UpdateSchedulable(node);
  b.events.push_back({0, 0, now.millis(), "NodeReclaimed", first ? "Notice" : "EarlierDeadline", name + " " + why});
  // Its jobs' stops have a deadline: they go ahead of drains and preemptions.
  RequeueNodeJobs(node, "its node " + name + " is reclaimed " + when, "Reclaim", lifecycle::StopPace::kUrgent, b);
  // Its agent hears the deadline at once, also when no job runs there.
  lifecycle::Effects fx;
  lifecycle_.Touch(node, fx);
  ApplyEffects(fx, b);
}

void ControlLoop::Reclaim(const std::string& node, Duration deadline, const Identity& who,
                          Done<StatusOr<NodeView>> done) {
  using R = StatusOr<NodeView>;
  loop_.Async<R>(
      [this, node, deadline, who, user = who.Describe()](std::function<void(R)> reply) {
        const StatusOr<core::NodeIndex> index = AdminNode(node, who, "reclaim", /*admins_only=*/false);
        if (!index.ok()) return reply(index.status());
        store::WriteBatch b;
        BeginReclaim(*index, clock_.Now() + deadline, user, b);
        ReplyNodeView(std::move(b), *index, reply);
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::DeclareLost(const std::string& node, const Identity& who, Done<StatusOr<NodeView>> done) {
  using R = StatusOr<NodeView>;
  loop_.Async<R>(
      [this, node, who, user = who.Describe()](std::function<void(R)> reply) {
        const StatusOr<core::NodeIndex> index = AdminNode(node, who, "declare lost", /*admins_only=*/true);
        if (!index.ok()) return reply(index.status());
        lifecycle::Effects fx;
        if (Status s = liveness_.DeclareLost(*index, user, fx); !s.ok()) return reply(s);
        UpdateSchedulable(*index);
        lifecycle_.NodeLost(*index, "was lost with its node " + node + " (declared lost by " + user + ")", fx);
        store::WriteBatch b;
        ApplyEffects(fx, b);
        ReplyNodeView(std::move(b), *index, reply);
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::RemoveNode(const std::string& node, const Identity& who, Done<StatusOr<NodeView>> done) {
  using R = StatusOr<NodeView>;
  loop_.Async<R>(
      [this, node, who, user = who.Describe()](std::function<void(R)> reply) {
        const StatusOr<core::NodeIndex> index = AdminNode(node, who, "remove", /*admins_only=*/true);
        if (!index.ok()) return reply(index.status());
        if (!liveness_.Watched(*index)) {
          return reply(FailedPrecondition("node " + node + " comes from the server's configuration; remove it there"));
        }
        if (const lifecycle::NodeCondition c = liveness_.Of(*index); c != lifecycle::NodeCondition::kLost) {
          return reply(FailedPrecondition("node " + node + " is " + lifecycle::NodeConditionName(c) +
                                          "; only a lost node can be removed (declare it lost first)"));
        }
        if (const std::set<int64_t>& jobs = lifecycle_.AttemptsOn(*index); !jobs.empty()) {
          return reply(FailedPrecondition("node " + node + " still holds job " + std::to_string(*jobs.begin()) +
                                          ", whose other replicas are being stopped; try again once it has ended"));
        }
        AgentRegistry::Agent& a = agents_.Get(node);
        a.removed = true;
        a.inventory.clear();  // a returning agent's first sync stores the node again
        UpdateSchedulable(*index);
        store::WriteBatch b;
        b.removed_nodes.push_back(node);
        b.events.push_back({0, 0, clock_.Now().millis(), "NodeRemoved", "", node + " removed by " + user});
        ReplyNodeView(std::move(b), *index, reply);
      },
      std::move(done), ShuttingDown());
}

}  // namespace muster::server
