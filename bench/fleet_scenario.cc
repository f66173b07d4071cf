// muster_fleet_scenario: replays a `muster sim` scenario (a trace, a
// cluster, node failures) against a real `muster server` with played agents
// (fleet_agents.h), and writes each job's story (sim/job_story.h) as the
// server tells it through its API.
//
// The same inputs given to `muster sim --stories` give the simulator's
// stories; test/sim_server_parity.sh checks that both equal one expected
// file. To make that a fair comparison the replay follows the simulator's
// rules: the agents register in the cluster's node order (the scheduler
// sees the same nodes in the same order), each trace job becomes the same
// spec (sim::GangShape; a time limit of --time-limit-factor x its duration;
// no retries), its tasks sleep the trace's duration, and a failed node's
// agent goes silent at the trace time given. The server's liveness times
// are the ones given here (--unreachable-after, --lost-after, --lease: 2 s
// unless given) with long polls of 500 ms and no grace period (the
// simulator's tasks stop at once). Trace times are seconds of wall time from the
// first submit, so keep scenarios short and their events seconds apart.
//
// Usage: muster_fleet_scenario --muster PATH TRACE (--nodes 3x8 | --cluster FILE)
//          [--node-failure NODE@SECONDS]... [--unreachable-after 1s]
//          [--lost-after 3s] [--lease 2s] [--time-limit-factor 2] --stories OUT
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/quantity.h"
#include "core/job.h"
#include "fleet_agents.h"
#include "sim/cluster_file.h"
#include "sim/job_story.h"
#include "sim/simulator.h"
#include "sim/trace_reader.h"

namespace {

using nlohmann::json;
using namespace muster;
using namespace muster::fleet;

struct Options {
  std::string muster, trace, nodes, cluster, stories;
  std::vector<std::pair<std::string, int64_t>> failures;  // (node, seconds)
  std::string unreachable_after = "1s", lost_after = "3s", lease = "2s";
  double time_limit_factor = 2.0;
};

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "muster_fleet_scenario: %s\nusage: muster_fleet_scenario --muster PATH TRACE (--nodes CxG | --cluster "
               "FILE) [--node-failure NODE@SECONDS]... [--unreachable-after D] [--lost-after D] "
               "[--lease D] [--time-limit-factor F] --stories OUT\n",
               why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0) {
      o.trace = k;
      continue;
    }
    if (i + 1 >= argc) return Usage(k + " needs a value");
    const std::string v = argv[++i];
    if (k == "--muster")
      o.muster = v;
    else if (k == "--nodes")
      o.nodes = v;
    else if (k == "--cluster")
      o.cluster = v;
    else if (k == "--stories")
      o.stories = v;
    else if (k == "--unreachable-after")
      o.unreachable_after = v;
    else if (k == "--lost-after")
      o.lost_after = v;
    else if (k == "--lease")
      o.lease = v;
    else if (k == "--time-limit-factor")
      o.time_limit_factor = std::stod(v);
    else if (k == "--node-failure") {
      const size_t at = v.rfind('@');
      if (at == std::string::npos || at == 0) return Usage("--node-failure must be NODE@SECONDS");
      o.failures.emplace_back(v.substr(0, at), std::stoll(v.substr(at + 1)));
    } else {
      return Usage("unknown flag " + k);
    }
  }
  if (o.muster.empty() || o.trace.empty() || o.stories.empty() || o.nodes.empty() == o.cluster.empty()) {
    return Usage("give --muster, a trace, --stories and one of --nodes or --cluster");
  }
  auto trace = sim::ReadTraceFile(o.trace);
  if (!trace.ok()) return Usage(trace.status().ToString());
  auto cluster = o.cluster.empty() ? sim::ClusterFromFlags({o.nodes, 0, 0, "gpu"}) : sim::LoadClusterFile(o.cluster);
  if (!cluster.ok()) return Usage(cluster.status().ToString());
  for (const std::string* d : {&o.unreachable_after, &o.lost_after, &o.lease}) {
    if (!ParseDuration(*d).ok()) return Usage("not a duration: " + *d);
  }
  std::stable_sort(trace->begin(), trace->end(),
                   [](const sim::TraceJob& a, const sim::TraceJob& b) { return a.submit_s < b.submit_s; });

  signal(SIGPIPE, SIG_IGN);
  const std::string dir = std::filesystem::temp_directory_path() / ("muster-scenario-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::vector<PlayedNode> nodes;
  for (const core::NodeSpec& n : cluster->nodes) {
    PlayedNode p;
    p.name = n.name;
    p.gpus = static_cast<int>(n.capacity.gpus);
    p.gpu_type = n.gpu_type;
    if (!n.topology.leaf.empty()) p.labels["leaf"] = n.topology.leaf;
    if (!n.topology.spine.empty()) p.labels["spine"] = n.topology.spine;
    nodes.push_back(std::move(p));
  }
  const std::string admin_token = IssueFleetCredentials(dir + "/muster.db", nodes);
  if (admin_token.empty()) return 1;
  ServerProcess server =
      StartServer(o.muster, dir,
                  "store: " + dir + "/muster.db\nlisten: 127.0.0.1:0\nauth: {rootJobs: [root]}\n" +
                      "agents: {syncWait: 500ms, defaultGrace: 0s, lease: " + o.lease +
                      ", unreachableAfter: " + o.unreachable_after + ", lostAfter: " + o.lost_after + "}\n");
  if (server.port == 0) return Usage("the server did not start; see " + dir + "/server.log");

  const int node_count = static_cast<int>(nodes.size());
  FleetOptions fo;
  fo.wait_ms = 500;
  fo.probe_every = 0;
  fo.in_order = true;
  Shared shared;
  Fleet fleet(fo, server.port, std::move(nodes), shared);
  std::thread loop([&] { fleet.Run(); });
  int rc = 0;
  auto finish = [&](const std::string& why) {
    if (!why.empty()) {
      std::fprintf(stderr, "muster_fleet_scenario: %s (server log: %s/server.log)\n", why.c_str(), dir.c_str());
      rc = 1;
    }
    shared.stop = true;
    loop.join();
    StopServer(server);
    if (rc == 0) std::filesystem::remove_all(dir);
    return rc;
  };
  if (!WaitFor([&] { return shared.registered.load() == node_count; }, 60)) return finish("not every agent registered");

  httplib::Client api("127.0.0.1", server.port);
  api.set_read_timeout(30, 0);
  const httplib::Headers user{{"Authorization", "Bearer " + admin_token}};
  const int64_t node_gpus = cluster->max_gpus_per_node();
  // Submits and failures in time order (a failure after a submit of the same second).
  std::vector<std::pair<int64_t, int>> steps;  // (second, index: submit >= 0, failure -1 - k)
  for (int i = 0; i < static_cast<int>(trace->size()); ++i) steps.emplace_back((*trace)[i].submit_s, i);
  for (int k = 0; k < static_cast<int>(o.failures.size()); ++k) steps.emplace_back(o.failures[k].second, -1 - k);
  std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  std::vector<std::pair<std::string, int64_t>> jobs;  // (name, id) in submit order
  int64_t last_end_s = 0;
  const int64_t t0 = NowUs();
  for (const auto& [second, index] : steps) {
    std::this_thread::sleep_until(
        std::chrono::steady_clock::time_point(std::chrono::microseconds(t0 + second * 1'000'000)));
    if (index < 0) {
      fleet.Silence(o.failures[static_cast<size_t>(-1 - index)].first);
      continue;
    }
    const sim::TraceJob& t = (*trace)[static_cast<size_t>(index)];
    const auto [replicas, per] = sim::GangShape(t.num_gpus, node_gpus);
    const int64_t limit = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(t.duration_s * o.time_limit_factor)));
    last_end_s = std::max(last_end_s, t.submit_s + limit);
    std::string spec = "name: " + t.id + "\nreplicas: " + std::to_string(replicas) +
                       "\nresources: {gpus: " + std::to_string(per) + "}\ntimeLimit: " + std::to_string(limit) +
                       "s\nretry: {limit: 0}\ncommand: [sleep, '" + std::to_string(t.duration_s) + "']\n";
    if (!t.tenant.empty()) spec += "queue: " + t.tenant + "\n";
    auto r = api.Post("/v1/jobs", user, spec, "application/yaml");
    if (!r || r->status != 201) return finish("submit of " + t.id + " failed: " + (r ? r->body : "no answer"));
    jobs.emplace_back(t.id, json::parse(r->body).at("id").get<int64_t>());
  }

  // Every job ends (its reruns included) well within the sum of their limits.
  int64_t bound_s = 30;
  for (const sim::TraceJob& t : *trace) bound_s += static_cast<int64_t>(std::ceil(t.duration_s * o.time_limit_factor));
  std::vector<json> shown(jobs.size());
  const bool ended = WaitFor(
      [&] {
        for (size_t i = 0; i < jobs.size(); ++i) {
          auto r = api.Get("/v1/jobs/" + std::to_string(jobs[i].second), user);
          if (!r || r->status != 200) return false;
          shown[i] = json::parse(r->body, nullptr, false);
          const std::optional<core::JobState> state = core::JobStateFromName(shown[i].value("state", ""));
          if (!state || !core::IsTerminal(*state)) return false;
        }
        return true;
      },
      static_cast<int>(bound_s));
  if (!ended) return finish("not every job ended within " + std::to_string(bound_s) + " s");

  std::vector<sim::JobStory> stories;
  for (size_t i = 0; i < jobs.size(); ++i) {
    sim::JobStory s;
    s.job = jobs[i].first;
    auto r = api.Get("/v1/jobs/" + std::to_string(jobs[i].second) + "/events?limit=1000", user);
    if (!r || r->status != 200) return finish("the events of " + s.job + " could not be read");
    const json events = json::parse(r->body, nullptr, false);
    for (const json& e : events.value("items", json::array())) {
      s.events.push_back(sim::EventLine(e.value("type", ""), e.value("reason", "")));
    }
    for (const json& a : shown[i].value("attemptHistory", json::array())) {
      std::vector<std::pair<std::string, std::string>> replicas;
      for (const json& rep : a.value("replicas", json::array())) {
        replicas.emplace_back(rep.value("node", ""), rep.value("result", ""));
      }
      s.attempts.push_back(
          sim::AttemptLine(a.value("attempt", 0), a.value("result", ""), a.value("reason", ""), replicas));
    }
    s.state = shown[i].value("state", "");
    stories.push_back(std::move(s));
  }
  std::ofstream(o.stories) << sim::FormatStories(stories);
  return finish("");
}
