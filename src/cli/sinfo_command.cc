#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "cli/client.h"
#include "cli/command_options.h"
#include "cli/hostlist.h"
#include "cli/slurm_commands.h"
#include "cli/slurm_jobs.h"

namespace muster::cli {
namespace {

using nlohmann::json;

int Error(const std::string& message) {
  std::cerr << "sinfo: error: " << message << "\n";
  return 1;
}

struct NodeView {
  std::string name, state, long_state;
  int64_t cpus = 0, memory_mb = 0, gpus = 0;
  std::string gpu_type;
  std::vector<std::string> features;
};

NodeView NodeFromJson(const json& n) {
  NodeView v;
  v.name = n.value("name", "");
  v.cpus = n.value("cpuMilli", int64_t{0}) / 1000;
  v.memory_mb = n.value("memoryBytes", int64_t{0}) >> 20;
  v.gpus = n.value("gpus", int64_t{0});
  v.gpu_type = n.value("gpuType", "");
  if (n.contains("features") && n["features"].is_array()) v.features = n["features"].get<std::vector<std::string>>();
  const std::string condition = n.value("condition", "Ready");
  const int64_t running = n.value("runningJobs", int64_t{0}), free_gpus = n.value("freeGpus", int64_t{0});
  const bool schedulable = n.value("schedulable", true);
  std::string s = running == 0 ? "idle" : (v.gpus > 0 && free_gpus == 0) ? "alloc" : "mix";
  std::string l = running == 0 ? "idle" : s == "alloc" ? "allocated" : "mixed";
  if (!schedulable) {
    s = running == 0 ? "drain" : "drng";
    l = running == 0 ? "drained" : "draining";
  }
  if (condition == "Lost") {
    s = "down";
    l = "down";
  }
  if (condition != "Ready") {
    s += "*";
    l += "*";
  }
  v.state = s;
  v.long_state = l;
  return v;
}

std::string Header(char field) {
  static const std::map<char, std::string> kTitles = {
      {'P', "PARTITION"}, {'R', "PARTITION"}, {'a', "AVAIL"},          {'l', "TIMELIMIT"},    {'D', "NODES"},
      {'t', "STATE"},     {'T', "STATE"},     {'N', "NODELIST"},       {'n', "HOSTNAMES"},    {'c', "CPUS"},
      {'m', "MEMORY"},    {'G', "GRES"},      {'f', "AVAIL_FEATURES"}, {'C', "CPUS(A/I/O/T)"}};
  auto it = kTitles.find(field);
  return it != kTitles.end() ? it->second : std::string(1, field);
}

}  // namespace

int RunSinfo(const std::vector<std::string>& args) {
  static constexpr CommandOption kOptions[] = {
      {'N', "Node"},         {'h', "noheader"},    {'o', "format", true}, {'p', "partition", true},
      {'t', "states", true}, {'n', "nodes", true}, {'l', "long"},         {'a', "all"},
      {'v', "verbose"},      {'s', "summarize"},   {'e', "exact"},
  };
  auto cl = ReadCommandLine(args, kOptions);
  if (!cl.ok()) return Error(cl.status().message());
  Client client(DefaultServer(), "", RetrySeconds());
  auto nodes_answer = client.Get("/v1/nodes");
  if (!nodes_answer.ok()) return Error(nodes_answer.status().message());
  if (nodes_answer->status != 200) return Error(Client::ErrorOf(*nodes_answer).message());
  auto queues_answer = client.Get("/v1/queues");
  if (!queues_answer.ok()) return Error(queues_answer.status().message());
  if (queues_answer->status != 200) return Error(Client::ErrorOf(*queues_answer).message());
  // The server's partitions (its slurm.partitions table), each over the
  // nodes with its features; without a table, each queue over every node.
  struct Partition {
    std::string name;
    std::vector<std::string> features;
    bool is_default = false;
  };
  std::vector<Partition> partitions;
  auto mapped = client.Get("/v1/slurm/partitions");
  if (!mapped.ok()) return Error(mapped.status().message());
  if (mapped->status != 200) return Error(Client::ErrorOf(*mapped).message());
  for (const json& p : mapped->body.value("items", json::array())) {
    Partition part{p.value("name", ""), p.value("features", std::vector<std::string>()), false};
    // Where a job that names no partition goes: the default queue, any node.
    part.is_default = part.features.empty() && p.contains("queue") && p["queue"].is_string() && p["queue"] == "default";
    partitions.push_back(std::move(part));
  }
  if (partitions.empty()) {
    for (const json& q : queues_answer->body.value("items", json::array())) {
      partitions.push_back({q.value("name", ""), {}, q.value("name", "") == "default"});
    }
  }
  if (partitions.empty()) partitions.push_back({"default", {}, true});
  std::set<std::string> wanted_partitions, wanted_states;
  for (const std::string& p : cl->List("partition")) wanted_partitions.insert(p);
  for (const std::string& s : cl->List("states")) wanted_states.insert(s);
  std::vector<std::string> wanted_nodes;
  if (cl->Has("nodes")) {
    auto names = ExpandHostlist(cl->Last("nodes"));
    if (!names.ok()) return Error(names.status().message());
    wanted_nodes = *names;
  }
  std::vector<NodeView> nodes;
  for (const json& n : nodes_answer->body.value("items", json::array())) {
    NodeView v = NodeFromJson(n);
    if (!wanted_nodes.empty() && std::find(wanted_nodes.begin(), wanted_nodes.end(), v.name) == wanted_nodes.end())
      continue;
    std::string bare = v.state;
    if (!bare.empty() && bare.back() == '*') bare.pop_back();
    if (!wanted_states.empty() && !wanted_states.count(bare) && !wanted_states.count(v.long_state)) continue;
    nodes.push_back(v);
  }
  const bool by_node = cl->Has("Node");
  std::string format = by_node ? "%#N %.6D %#P %6t" : "%#P %.5a %.10l %.6D %.6t %N";
  if (cl->Has("long") && !cl->Has("format")) {
    format = by_node ? "%#N %.6D %#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E"
                     : "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
  }
  if (cl->Has("format")) format = cl->Last("format");
  std::vector<FormatPiece> pieces = ParsePercentFormat(format);
  struct Row {
    std::string partition;
    std::vector<const NodeView*> nodes;
  };
  std::vector<Row> rows;
  for (const Partition& p : partitions) {
    if (!wanted_partitions.empty() && !wanted_partitions.count(p.name)) continue;
    const std::string shown = p.is_default && wanted_partitions.empty() ? p.name + "*" : p.name;
    std::vector<const NodeView*> members;
    for (const NodeView& n : nodes) {
      if (std::all_of(p.features.begin(), p.features.end(), [&](const std::string& f) {
            return std::find(n.features.begin(), n.features.end(), f) != n.features.end();
          })) {
        members.push_back(&n);
      }
    }
    if (by_node) {
      for (const NodeView* n : members) rows.push_back({shown, {n}});
      continue;
    }
    if (members.empty()) rows.push_back({shown, {}});  // "n/a", as Slurm shows a partition without nodes
    std::map<std::string, Row> by_state;
    std::vector<std::string> order;
    for (const NodeView* np : members) {
      const NodeView& n = *np;
      if (!by_state.count(n.state)) order.push_back(n.state);
      Row& r = by_state[n.state];
      r.partition = shown;
      r.nodes.push_back(&n);
    }
    for (const std::string& s : order) rows.push_back(by_state[s]);
  }
  auto value = [](char field, const Row& r) -> std::string {
    if (r.nodes.empty()) {
      switch (field) {
        case 'P':
        case 'R':
          return r.partition;
        case 'a':
          return "up";
        case 'l':
          return "infinite";
        case 'D':
          return "0";
        case 'N':
        case 'n':
          return "";
        default:
          return "n/a";
      }
    }
    const NodeView& first = *r.nodes.front();
    std::vector<std::string> names;
    for (const NodeView* n : r.nodes) names.push_back(n->name);
    switch (field) {
      case 'P':
      case 'R':
        return r.partition;
      case 'a':
        return "up";
      case 'l':
        return "infinite";
      case 'D':
        return std::to_string(r.nodes.size());
      case 't':
        return first.state;
      case 'T':
        return first.long_state;
      case 'N':
      case 'n':
        return CompressHostlist(names);
      case 'c':
        return std::to_string(first.cpus);
      case 'm':
        return std::to_string(first.memory_mb);
      case 'G':
        return first.gpus > 0 ? "gpu:" + first.gpu_type + ":" + std::to_string(first.gpus) : "(null)";
      case 'f': {
        std::string f;
        for (const std::string& x : first.features) f += (f.empty() ? "" : ",") + x;
        return f.empty() ? "(null)" : f;
      }
      default:
        return "N/A";
    }
  };
  // "%#X" fields are as wide as their longest value, header included.
  for (FormatPiece& p : pieces) {
    if (!p.fit || !p.field) continue;
    size_t w = cl->Has("noheader") ? 0 : Header(p.field).size();
    for (const Row& r : rows) w = std::max(w, value(p.field, r).size());
    p.width = static_cast<int>(w);
  }
  std::string out;
  auto render = [&](const std::function<std::string(char)>& cell) {
    for (const FormatPiece& p : pieces) out += p.field ? FitField(p, cell(p.field)) : p.literal;
    out += "\n";
  };
  if (!cl->Has("noheader")) render([](char f) { return Header(f); });
  for (const Row& r : rows) render([&](char f) { return value(f, r); });
  std::cout << out;
  return 0;
}

}  // namespace muster::cli
