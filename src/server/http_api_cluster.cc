// HttpApi: the cluster's endpoints: health, nodes, reservations, cluster events
// and the agents' sync (the route table is HttpApi::Routes).
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "common/message_text.h"
#include "common/rfc3339.h"
#include "proto/agent_protocol.h"
#include "server/http_api.h"
#include "server/http_api_util.h"

namespace muster::server {

using nlohmann::json;

namespace {

// The answer to an operator's change of a node: its name, whether it takes
// work, its condition and cordon.
std::function<void(StatusOr<ControlLoop::NodeView>)> NodeAnswer(http::Server::Reply reply) {
  using N = ControlLoop::NodeView;
  return Answer<N>(std::move(reply), [](http::Response& res, const N& view) {
    json j = {{"name", view.spec.name}, {"schedulable", view.schedulable}, {"condition", view.condition}};
    if (!view.cordon.empty()) j["cordon"] = view.cordon;
    if (view.reclaim_at) j["reclaimAt"] = FormatRfc3339Utc(*view.reclaim_at);
    ReplyJson(res, 200, j);
  });
}

}  // namespace

void HttpApi::Health(Request&&, Reply reply) {
  http::Response res;
  json body = {{"status", "ok"}};
  const Leadership::Role role = leadership_.role();
  body["role"] = Leadership::RoleName(role);
  if (leadership_.elected()) {
    body["epoch"] = leadership_.epoch();
    if (const std::string leader = leadership_.leader_address(); !leader.empty()) body["leader"] = leader;
  }
  res.headers.emplace_back("X-Muster-Role", Leadership::RoleName(role));
  ReplyJson(res, 200, body);
  reply(std::move(res));
}

void HttpApi::Metrics(Request&&, Reply reply) {
  const auto answer = [this, reply](ServerMetrics::Gauges g) {
    g.leader = leadership_.Leads();
    g.epoch = g.leader ? leadership_.epoch() : 0;
    reply([this, g = std::move(g)] {
      http::Response res;
      res.Set(200, metrics_.Scrape(g), "text/plain; version=0.0.4; charset=utf-8");
      return res;
    });
  };
  // A standby's loop has not started: it has no cluster to describe.
  if (!leadership_.Leads()) return answer({});
  loop_.Gauges(
      [answer](StatusOr<ServerMetrics::Gauges> g) { answer(g.ok() ? std::move(*g) : ServerMetrics::Gauges{}); });
}

void HttpApi::SlurmPartitions(const Request&, Response& res) {
  json items = json::array();
  const std::shared_ptr<const LiveSettings::Values> settings = loop_.settings().Get();
  for (const auto& [name, p] : settings->spec_defaults.slurm.partitions) {
    items.push_back({{"name", name}, {"queue", p.queue ? json(*p.queue) : json(nullptr)}, {"features", p.features}});
  }
  ReplyJson(res, 200, {{"items", items}});
}

void HttpApi::CreateReservation(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  auto body = BodyObject(req, {"name", "nodes", "start", "end", "duration", "users", "queues", "flags"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  const std::string name = (*body).value("name", json()).is_string() ? (*body)["name"].get<std::string>() : "";
  store::AuditRow audit = AuditOf(who, "reservation.create", "reservation/" + name.substr(0, 128));
  if (Status s = authz_.MustBeAdmin(who, "create reservations"); !s.ok()) return RefuseAudited(reply, audit, s);
  loop_.CreateReservation(std::move(*body), who, std::move(audit),
                          Answer<ReservationEntry>(reply, [](http::Response& res, const ReservationEntry& r) {
                            ReplyJson(res, 201, ReservationJson(r));
                          }));
}

void HttpApi::ListReservations(const Request&, Response& res) {
  auto all =
      Await<std::vector<ReservationEntry>>([this](ControlLoop::Done<StatusOr<std::vector<ReservationEntry>>> done) {
        loop_.ReservationList(std::move(done));
      });
  if (!all.ok()) return ReplyStatus(res, all.status());
  json items = json::array();
  for (const ReservationEntry& r : *all) items.push_back(ReservationJson(r));
  ReplyJson(res, 200, {{"items", items}});
}

void HttpApi::DeleteReservation(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  const std::string name = req.captures[0];
  store::AuditRow audit = AuditOf(who, "reservation.delete", "reservation/" + name.substr(0, 128));
  if (Status s = authz_.MustBeAdmin(who, "delete reservations"); !s.ok()) return RefuseAudited(reply, audit, s);
  loop_.DeleteReservation(name, std::move(audit), Answer<bool>(reply, [name](http::Response& res, bool existed) {
                            if (!existed) return ReplyStatus(res, NotFound("no reservation " + QuoteForMessage(name)));
                            ReplyJson(res, 200, {{"name", name}, {"deleted", true}});
                          }));
}

void HttpApi::ListNodes(const Request&, Response& res) {
  using V = std::vector<ControlLoop::NodeView>;
  auto nodes = Await<V>([this](ControlLoop::Done<StatusOr<V>> done) { loop_.Nodes(std::move(done)); });
  if (!nodes.ok()) return ReplyStatus(res, nodes.status());
  json items = json::array();
  for (const auto& n : *nodes) {
    const json agent = json::parse(n.status_json, nullptr, false);
    items.push_back({{"name", n.spec.name},
                     {"agent", agent.is_object() ? agent : json::object()},
                     {"gpuType", n.spec.gpu_type},
                     {"gpus", n.spec.capacity.gpus},
                     {"freeGpus", n.free.gpus},
                     {"cpuMilli", n.spec.capacity.cpu_milli},
                     {"memoryBytes", n.spec.capacity.memory_bytes},
                     {"leaf", n.spec.topology.leaf},
                     {"spine", n.spec.topology.spine},
                     {"features", n.spec.features},
                     {"schedulable", n.schedulable},
                     {"condition", n.condition},
                     {"runningJobs", n.running_jobs}});
    json use = json::array();
    for (const auto& u : n.gpu_use) use.push_back({{"index", u.index}, {"job", u.job}, {"queue", u.queue}});
    items.back()["gpuUse"] = std::move(use);
    if (n.reserved_gpus > 0) items.back().update({{"reservedGpus", n.reserved_gpus}, {"reservedFor", n.reserved_for}});
    if (!n.cordon.empty()) items.back()["cordon"] = n.cordon;
    if (n.reclaim_at) items.back()["reclaimAt"] = FormatRfc3339Utc(*n.reclaim_at);
    items.back()["pool"] = n.pool;
    if (n.last_seen_ms > 0) items.back()["lastSeen"] = FormatRfc3339Utc(Time::FromMillis(n.last_seen_ms));
  }
  ReplyJson(res, 200, {{"items", items}});
}

void HttpApi::CordonNode(const std::string& verb, Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  loop_.Cordon(
      req.captures[0], verb != "uncordon", who, verb == "drain",
      Audited<ControlLoop::NodeView>(AuditOf(who, verb, "node/" + req.captures[0]), NodeAnswer(std::move(reply))));
}

void HttpApi::ReclaimNode(Request&& req, Reply reply) {
  int64_t seconds = 120;  // the notice clouds give for spot capacity
  if (!req.body.empty()) {
    auto body = BodyObject(req, {"deadlineSeconds"});
    if (!body.ok()) return ReplyNow(reply, body.status());
    if (Status st = BodyInt(*body, "deadlineSeconds", seconds, 0, 3600, /*optional=*/true); !st.ok()) {
      return ReplyNow(reply, st);
    }
  }
  const Identity& who = Caller(req);
  loop_.Reclaim(
      req.captures[0], Duration::Seconds(seconds), who,
      Audited<ControlLoop::NodeView>(AuditOf(who, "reclaim", "node/" + req.captures[0]), NodeAnswer(std::move(reply))));
}

void HttpApi::DeclareNodeLost(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  loop_.DeclareLost(req.captures[0], who,
                    Audited<ControlLoop::NodeView>(AuditOf(who, "declare-lost", "node/" + req.captures[0]),
                                                   NodeAnswer(std::move(reply))));
}

void HttpApi::RemoveNode(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  loop_.RemoveNode(req.captures[0], who,
                   Audited<ControlLoop::NodeView>(AuditOf(who, "remove-node", "node/" + req.captures[0]),
                                                  NodeAnswer(std::move(reply))));
}

void HttpApi::ClusterEvents(const Request& req, Response& res) {
  EventsPage(req, store_, 0, res);  // cluster events: nodes and GPUs
}

// An agent's sync holds no thread while it waits for news.
void HttpApi::AgentSync(Request&& req, Reply reply) {
  auto parsed = proto::ParseSyncRequest(req.body);
  if (!parsed.ok()) return ReplyNow(reply, parsed.status());
  // A node's credential speaks for its own node only: nothing it says about
  // another node, or another node's tasks, is heard.
  const Identity& who = Caller(req);
  if (parsed->node != who.node) {
    return RefuseAudited(reply, AuditOf(who, "agent.sync", "node/" + parsed->node.substr(0, 253)),
                         PermissionDenied("this credential is node " + who.node + "'s; it may not sync as node " +
                                          QuoteForMessage(parsed->node)));
  }
  using Phase = ControlLoop::SyncPhase;
  using R = ControlLoop::SyncResult;
  auto answer = Answer<R>(reply, [](http::Response& res, const R& result) {
    res.Set(200, proto::ToJson(result.response), "application/json");
  });
  // At most a third of the lease: an idle agent still renews it in time.
  const Duration wait = std::min({Duration::Millis(parsed->wait_ms), options_.agent_sync_wait,
                                  Duration::Millis(options_.agent_lease.millis() / 3)});
  const Phase phase = parsed->wait_ms > 0 ? Phase::kMayWait : Phase::kFull;
  auto request = std::make_shared<const proto::SyncRequest>(std::move(*parsed));
  const auto began = std::chrono::steady_clock::now();
  loop_.AgentSync(request, phase, [this, request, wait, answer, began](StatusOr<ControlLoop::SyncResult> r) {
    // Timed to the report's processing: a wait for work is not latency.
    metrics_.ObserveSync(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    if (!r.ok() || !r->wait) return answer(std::move(r));
    // Nothing new for this node: the answer waits, in the control loop,
    // until its desired state changes (a bind or a stop) or the wait ends.
    loop_.WhenNodeChanges(request->node, request->version, wait,
                          [this, request, answer] { loop_.AgentSync(request, Phase::kAfterWait, answer); });
  });
}

}  // namespace muster::server
