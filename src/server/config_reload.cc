#include "server/config_reload.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/log.h"
#include "config/yaml_fields.h"
#include "server/control_loop.h"
#include "server/options.h"

namespace muster::server {

namespace {

const std::set<std::string> kReloadable = {
    "queues", "priorityClasses", "defaultPriorityClass", "fairShare", "prices", "pools", "slurm"};

// A value on one line, as YAML's flow style writes it ("~" when absent).
std::string Flow(const YAML::Node& n) {
  if (!n || n.IsNull()) return "~";
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << n;
  std::string text = out.c_str();
  if (text.size() > 300) text = text.substr(0, 297) + "...";
  return text;
}

// The queues of a `queues` list, by name.
std::map<std::string, YAML::Node> ByName(const YAML::Node& list) {
  std::map<std::string, YAML::Node> out;
  if (!list || !list.IsSequence()) return out;
  for (const YAML::Node& q : list) {
    if (q.IsMap() && q["name"] && q["name"].IsScalar()) out[q["name"].Scalar()] = q;
  }
  return out;
}

}  // namespace

StatusOr<ReloadPlan> PlanReload(const std::string& in_force_yaml, const std::string& next_yaml) {
  ASSIGN_OR_RETURN(YAML::Node old_root, config::LoadYaml(in_force_yaml, "the configuration in force"));
  ASSIGN_OR_RETURN(YAML::Node new_root, config::LoadYaml(next_yaml, "the new configuration"));
  auto keys = [](const YAML::Node& root) {
    std::set<std::string> out;
    if (root.IsMap()) {
      for (const auto& kv : root) out.insert(kv.first.Scalar());
    }
    return out;
  };
  std::set<std::string> all = keys(old_root);
  for (const std::string& k : keys(new_root)) all.insert(k);
  ReloadPlan plan;
  for (const std::string& key : all) {
    const YAML::Node before = old_root.IsMap() ? old_root[key] : YAML::Node();
    const YAML::Node after = new_root.IsMap() ? new_root[key] : YAML::Node();
    if (Flow(before) == Flow(after)) continue;
    if (!kReloadable.count(key)) {
      plan.restart.push_back(key);
      continue;
    }
    if (key != "queues") {
      plan.applied.push_back(key + ": " + Flow(before) + " -> " + Flow(after));
      continue;
    }
    const auto was = ByName(before), is = ByName(after);
    std::set<std::string> names;
    for (const auto& [name, q] : was) names.insert(name);
    for (const auto& [name, q] : is) names.insert(name);
    for (const std::string& name : names) {
      const auto a = was.find(name), b = is.find(name);
      if (a == was.end()) {
        plan.applied.push_back("queues." + name + ": added " + Flow(b->second));
      } else if (b == is.end()) {
        plan.applied.push_back("queues." + name + ": removed (its jobs have no quota now)");
      } else if (Flow(a->second) != Flow(b->second)) {
        plan.applied.push_back("queues." + name + ": " + Flow(a->second) + " -> " + Flow(b->second));
      }
    }
    if (Flow(before) != Flow(after) && plan.applied.empty()) plan.applied.push_back("queues: reordered");
  }
  YAML::Node in_force = old_root.IsMap() ? YAML::Clone(old_root) : YAML::Node(YAML::NodeType::Map);
  for (const std::string& key : kReloadable) {
    if (new_root.IsMap() && new_root[key]) {
      in_force[key] = YAML::Clone(new_root[key]);
    } else {
      in_force.remove(key);
    }
  }
  YAML::Emitter out;
  out << in_force;
  plan.in_force = out.c_str();
  return plan;
}

Status ReloadConfig(const std::string& path, std::string& in_force_yaml, ControlLoop& loop) {
  const auto refuse = [&](const Status& why) {
    log::Error("reload of {} refused; the configuration in force stays: {}", path, why.ToString());
    return why;
  };
  std::ifstream in(path);
  if (!in) return refuse(Status(StatusCode::kNotFound, "cannot open " + path));
  std::stringstream text;
  text << in.rdbuf();
  StatusOr<ServerOptions> next = ParseServerOptions(text.str(), path);
  if (!next.ok()) return refuse(next.status());
  StatusOr<ReloadPlan> plan = PlanReload(in_force_yaml, text.str());
  if (!plan.ok()) return refuse(plan.status());
  if (!plan->applied.empty()) {
    if (Status s = loop.Reconfigure(*next); !s.ok()) return refuse(s.WithFieldPrefix("server.priorityClasses"));
  }
  in_force_yaml = plan->in_force;
  for (const std::string& key : plan->restart) {
    log::Warn("reload of {}: {} changed; it takes a restart and is not applied", path, key);
  }
  if (plan->applied.empty()) {
    log::Info("reloaded {}: nothing a reload applies changed", path);
    return Status::Ok();
  }
  std::string changes;
  for (const std::string& c : plan->applied) changes += (changes.empty() ? "" : "; ") + c;
  log::Info("reloaded {}: {}", path, changes);
  return Status::Ok();
}

}  // namespace muster::server
