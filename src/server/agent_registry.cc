#include "server/agent_registry.h"

#include <nlohmann/json.hpp>

namespace muster::server {

using nlohmann::json;

AgentRegistry::Agent* AgentRegistry::Find(const std::string& node) {
  auto it = agents_.find(node);
  return it == agents_.end() ? nullptr : &it->second;
}

const AgentRegistry::Agent* AgentRegistry::Find(const std::string& node) const {
  auto it = agents_.find(node);
  return it == agents_.end() ? nullptr : &it->second;
}

AgentRegistry::Agent& AgentRegistry::Get(const std::string& node) { return agents_[node]; }

bool AgentRegistry::Removed(const std::string& node) const {
  const Agent* a = Find(node);
  return a != nullptr && a->removed;
}

bool AgentRegistry::Serves(const std::string& node) const {
  const Agent* a = Find(node);
  return a != nullptr && !a->agent_id.empty() && !a->removed;
}

std::string AgentRegistry::AddressOf(const std::string& node) const {
  const Agent* a = Find(node);
  return a != nullptr && !a->address.empty() ? a->address : node;
}

Status AgentRegistry::Admit(const proto::SyncRequest& req, Duration silent_for, const std::function<bool()>& is_waiting,
                            Duration lost_after) const {
  const Agent* serving = Find(req.node);
  if (serving == nullptr || req.agent_id.empty() || serving->agent_id.empty() || serving->agent_id == req.agent_id) {
    return Status::Ok();
  }
  const bool waiting = is_waiting();  // asked only of a contested node: it takes a lock
  if (!waiting && silent_for >= lost_after) return Status::Ok();
  return FailedPrecondition(
      "node " + req.node + " is served by another agent (" + serving->agent_id +
      (waiting ? ", whose sync is waiting here" : ", which synced " + std::to_string(silent_for.millis()) + " ms ago") +
      "); this agent (" + req.agent_id + ") may take over once that one has been silent for " + "agents.lostAfter (" +
      lost_after.ToString() + ")");
}

AgentRegistry::Served AgentRegistry::Serve(const proto::SyncRequest& req, Agent& a) {
  Served out;
  if (!req.agent_id.empty() && a.agent_id != req.agent_id) {
    if (!a.agent_id.empty()) {
      out.replaced = "node " + req.node + ": agent " + req.agent_id + " took over from " + a.agent_id;
    }
    a.agent_id = req.agent_id;
  }
  out.first = a.inventory.empty() || a.address != req.address;
  a.address = req.address;
  a.log_port = req.log_port;
  a.log_tls_pin = req.log_tls_pin;
  if (a.removed) {  // forgotten by an operator, and back: registered again
    a.removed = false;
    out.first = true;
  }
  return out;
}

std::optional<std::string> AgentRegistry::Report(const proto::SyncRequest& req, Agent& a) {
  a.events.insert(a.events.end(), req.health_events.begin(), req.health_events.end());
  if (a.events.size() > 32) a.events.erase(a.events.begin(), a.events.end() - 32);
  // The node's status is rebuilt (and stored) only when it changed.
  std::string inventory = req.gpu_type + "|" + req.address + "|" + std::to_string(req.log_port) + "|" +
                          req.log_tls_pin + "|" + req.cgroups + "|" + req.agent_version + "|" + req.gpu_note + "|" +
                          std::to_string(req.cpu_milli) + "|" + std::to_string(req.memory_bytes) + "|" +
                          req.containers + "|" + req.containers_note;
  for (const std::string& f : req.features) inventory += "|+" + f;
  for (const auto& [k, v] : req.labels) inventory += "|" + k + "=" + v;
  for (const proto::GpuReport& g : req.gpus) inventory += "|" + g.uuid + (g.healthy ? "+" : "-") + g.health;
  if (inventory == a.inventory && req.health_events.empty()) return std::nullopt;
  a.unhealthy_gpus = 0;
  for (const proto::GpuReport& g : req.gpus) a.unhealthy_gpus += g.healthy ? 0 : 1;
  a.inventory = inventory;
  auto label = [&](const char* k) { return req.labels.count(k) ? req.labels.at(k) : std::string(); };
  json status = {{"source", "agent"},
                 {"gpuType", req.gpu_type},
                 {"gpus", static_cast<int64_t>(req.gpus.size())},
                 {"cpuMilli", req.cpu_milli},
                 {"memoryBytes", req.memory_bytes},
                 {"leaf", label("leaf")},
                 {"spine", label("spine")},
                 {"zone", label("zone")},
                 {"labels", req.labels},
                 {"address", req.address},
                 {"logPort", req.log_port},
                 {"logTlsPin", req.log_tls_pin},
                 {"agentVersion", req.agent_version},
                 {"gpuSource", req.gpu_source},
                 {"gpuNote", req.gpu_note},
                 {"cgroups", req.cgroups},
                 {"containers", req.containers},
                 {"features", req.features}};
  if (!req.containers_note.empty()) status["containersNote"] = req.containers_note;
  json gpus = json::array();
  for (const proto::GpuReport& g : req.gpus) {
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"name", g.name},
                    {"memoryBytes", g.memory_bytes},
                    {"numaNode", g.numa_node},
                    {"nvlinks", g.nvlinks},
                    {"healthy", g.healthy},
                    {"health", g.health}});
  }
  status["gpuDevices"] = gpus;
  json events = json::array();
  for (const proto::HealthEventReport& e : a.events) {
    events.push_back({{"uuid", e.uuid}, {"xid", e.xid}, {"kind", e.kind}, {"fatal", e.fatal}, {"timeMs", e.time_ms}});
  }
  status["healthEvents"] = events;
  if (!a.cordon.empty()) status["cordoned"] = a.cordon;
  if (a.reclaim_at) status["reclaimAtMs"] = a.reclaim_at->millis();
  a.status_json = status.dump();
  return a.status_json;
}

std::optional<std::string> AgentRegistry::SetCordon(Agent& a, std::string why) {
  a.cordon = std::move(why);
  if (a.status_json == "{}") return std::nullopt;
  json status = json::parse(a.status_json, nullptr, false);
  if (!status.is_object()) return std::nullopt;
  if (a.cordon.empty()) {
    status.erase("cordoned");
  } else {
    status["cordoned"] = a.cordon;
  }
  if (a.reclaim_at) {
    status["reclaimAtMs"] = a.reclaim_at->millis();
  } else {
    status.erase("reclaimAtMs");
  }
  a.status_json = status.dump();
  return a.status_json;
}

std::vector<core::NodeSpec> AgentRegistry::Restore(const std::vector<store::NodeRow>& rows,
                                                   const std::function<bool(const std::string&)>& configured) {
  std::vector<core::NodeSpec> out;
  for (const store::NodeRow& row : rows) {
    const json spec = json::parse(row.spec_json, nullptr, false);
    if (!spec.is_object() || spec.value("source", "") != "agent") continue;
    if (configured(row.name)) continue;
    core::NodeSpec n;
    n.name = row.name;
    n.gpu_type = spec.value("gpuType", "");
    n.capacity.gpus = spec.value("gpus", 0);
    n.capacity.cpu_milli = spec.value("cpuMilli", int64_t{0});
    n.capacity.memory_bytes = spec.value("memoryBytes", int64_t{0});
    n.topology.leaf = spec.value("leaf", "");
    n.topology.spine = spec.value("spine", "");
    n.topology.zone = spec.value("zone", "");
    if (const auto f = spec.find("features"); f != spec.end() && f->is_array()) {
      for (const json& name : *f) {
        if (name.is_string()) n.features.push_back(name.get<std::string>());
      }
    }
    n.features = core::WithPoolFeature(std::move(n.features));
    Agent& a = agents_[row.name];
    a.address = spec.value("address", "");
    a.inventory = "(restored)";
    a.cordon = spec.value("cordoned", "");
    if (const int64_t at = spec.value("reclaimAtMs", int64_t{0}); at > 0) a.reclaim_at = Time::FromMillis(at);
    a.log_port = spec.value("logPort", 0);
    a.log_tls_pin = spec.value("logTlsPin", "");
    a.status_json = spec.dump();
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace muster::server
