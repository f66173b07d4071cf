// AgentRegistry: the agents that serve nodes, as the server knows them.
//
// A node the configuration does not name is registered by its agent's first
// sync; the registry keeps, by node name, what the server needs of that
// agent beyond its liveness (lifecycle/node_liveness.h):
//   - who serves the node: one agent a node. Admit refuses a second agent
//     (a copy started by hand, a cloned machine) while the serving one may
//     still run tasks, since it would run them a second time.
//   - where it is (address, log port): for logs, and for the addresses a
//     gang's replicas are given (MASTER_ADDR).
//   - what its agent last said of the node (GPUs, labels, health events):
//     the node's stored status, rebuilt only when it changed (Report).
//   - what keeps the node from new work besides liveness: a cordon (an
//     operator's, or a fatal GPU fault's), a capacity waiting to apply, its
//     removal by an operator.
//   - the newest task report processed: an older one is not applied.
// After a restart, Restore reads the agent-registered nodes back from the
// store.
//
// Thread-safety: none; the control loop's thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/node.h"
#include "proto/agent_protocol.h"
#include "store/store.h"

namespace muster::server {

class AgentRegistry {
 public:
  struct Agent {
    std::string agent_id;  // the agent serving the node (SyncRequest::agent_id)
    std::string address;
    int32_t log_port = 0;
    int32_t unhealthy_gpus = 0;                    // reported unhealthy in its last report
    std::string log_tls_pin;                       // "": its log server speaks plain HTTP
    std::string status_json = "{}";                // the node's stored status (its agent's report)
    std::string inventory;                         // what the last report said of the node, to notice a change
    std::vector<proto::HealthEventReport> events;  // the last few
    std::string cordon;       // why the node gets no new work (an operator, a GPU fault), until cleared
    int64_t report_seq = -1;  // the newest task report processed
    bool removed = false;     // forgotten by an operator (ControlLoop::RemoveNode)
    // A capacity its agent reported that running jobs keep from taking
    // effect: the node gets no new work until it applies. Empty: none.
    std::string resizing;
    // The cloud reclaims the node at this time (a notice from its agent or
    // an operator: ControlLoop::Reclaim), until an uncordon; unset: not.
    // Stored with the node's status (SetCordon), so a restarted server
    // still cuts its stops to it.
    std::optional<Time> reclaim_at;

    // Kept from new work by its cordon, removal or a pending resize.
    bool Cordoned() const { return !cordon.empty() || removed || !resizing.empty(); }
  };

  Agent* Find(const std::string& node);
  const Agent* Find(const std::string& node) const;
  // The node's record, created empty if it has none.
  Agent& Get(const std::string& node);
  bool Removed(const std::string& node) const;
  // Whether an agent serves the node (it has synced, and no operator
  // removed it since).
  bool Serves(const std::string& node) const;
  // Where the node's replicas are reached: its agent's address, else its name.
  std::string AddressOf(const std::string& node) const;

  // Whether the agent of `req` may serve its node. Another agent than the
  // one serving it is refused (FailedPrecondition, naming both) while that
  // one may still run tasks: its sync is held here (`waiting()`), or it has
  // been silent for less than `lost_after` (longer than the lease, so its
  // tasks have fenced themselves, and the node's jobs are requeued).
  Status Admit(const proto::SyncRequest& req, Duration silent_for, const std::function<bool()>& waiting,
               Duration lost_after) const;

  // Records who serves the node and where, from its agent's sync `req`.
  struct Served {
    bool first = false;                   // its first sync (or the first from a new address, or after its removal)
    std::optional<std::string> replaced;  // the event text when this agent took over from another
  };
  Served Serve(const proto::SyncRequest& req, Agent& a);
  // Records what the sync `req` says of the node: its health events (the
  // last 32 kept) and its status. Returns the status to store when it
  // changed (or health events came), else nullopt.
  std::optional<std::string> Report(const proto::SyncRequest& req, Agent& a);
  // Sets (non-empty `why`) or clears the node's cordon, and stores its
  // reclaim deadline (Agent::reclaim_at) with it. Returns the node's status
  // to store when it has one (an agent reported).
  std::optional<std::string> SetCordon(Agent& a, std::string why);

  // The agent-registered nodes in the store's rows, to add to the cluster,
  // with their agents' records restored (address, log port, cordon,
  // status). A node `configured` says the configuration names is skipped:
  // the configuration wins.
  std::vector<core::NodeSpec> Restore(const std::vector<store::NodeRow>& rows,
                                      const std::function<bool(const std::string&)>& configured);

 private:
  std::unordered_map<std::string, Agent> agents_;  // by node name
};

}  // namespace muster::server
