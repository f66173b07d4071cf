// muster_bench_fleet: one `muster server` against a fleet of N node agents
// played from one process (fleet_agents.h: real HTTP, the real agent
// protocol, long polls; tasks are records, not processes).
//
// Phases (each measured over --window seconds):
//   1. register every agent (connections opened in batches), then steady state
//   2. submit --jobs jobs of 8 GPUs (one array), wait until every task runs
//   3. steady state with those tasks reported by every sync
//   4. submit a gang of --gang replicas x 8 GPUs: the time from its submit to
//      the last of its agents receiving its task
//   5. a tenth of the fleet restarts at once (connections closed, agents
//      come back re-registering and reporting every task, each after its
//      start delay as the real agent's, --start-jitter-ms): their first
//      syncs and the steady state after
// Reported per phase: syncs per second, sync latency (p50, p99, max of the
// waitMs 0 syncs), the server's CPU per sync and RSS. It starts the server
// itself (port 0, --port-file) with a configuration for the fleet.
//
// Usage: muster_bench_fleet --muster build/cmd/muster/muster [--agents 12500]
//        [--jobs 10000] [--gang 512] [--wait-ms 5000] [--probe-every 5]
//        [--window 20] [--restart-fraction 0.1] [--start-jitter-ms 1000]
// MUSTER_FLEET_TRACE=1 prints each slow probe and the restart's timing, and
// keeps the server's directory (its log) for reading.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "fleet_agents.h"

namespace {

using nlohmann::json;
using namespace muster::fleet;

struct Options {
  std::string muster;
  int agents = 12'500;
  int jobs = 10'000;
  int gang = 512;
  int wait_ms = 5'000;
  int probe_every = 5;
  int window_s = 20;
  double restart_fraction = 0.1;
  // As the real agent (its --start-jitter): a restarted agent's first sync
  // waits a part of this fixed by its node name. 0: all at once.
  int start_jitter_ms = static_cast<int>(muster::agent::AgentOptions().start_jitter.millis());
  int threads = 2;
};

// The server's CPU time (user + system) in microseconds and RSS in KiB.
std::pair<int64_t, int64_t> ServerUsage(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), {});
  const size_t close = s.rfind(')');
  std::istringstream fields(s.substr(close + 2));
  std::string f;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoll(f);
    if (i == 15) stime = std::stoll(f);
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  int64_t rss = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stoll(line.substr(6));
  }
  return {(utime + stime) * 1'000'000 / sysconf(_SC_CLK_TCK), rss};
}

// This process's CPU time (all threads), microseconds.
int64_t OwnCpuUs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

// Waits for the fleet to settle (one long poll and 2 s: the burst of a
// phase's start, registration or binds, is over; `wait_ms` -2000: not at
// all), calls `start`, then measures.
json Measure(Shared& fleet, pid_t server, int seconds, int wait_ms, const char* name,
             const std::function<void()>& start = nullptr) {
  std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms + 2000));
  fleet.Take(fleet.sample);
  if (start) start();
  const int64_t own0 = OwnCpuUs();
  const auto [cpu0, rss0] = ServerUsage(server);
  const int64_t t0 = NowUs();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const Sample s = fleet.Take(fleet.sample);
  const auto [cpu1, rss1] = ServerUsage(server);
  const int64_t own1 = OwnCpuUs();
  const double secs = static_cast<double>(NowUs() - t0) / 1e6;
  json j = {{"phase", name},
            {"syncsPerSecond", static_cast<double>(s.syncs) / secs},
            {"probes", s.probe_us.size()},
            {"p50Ms", Percentile(s.probe_us, 0.50) / 1000.0},
            {"p99Ms", Percentile(s.probe_us, 0.99) / 1000.0},
            {"maxMs", Percentile(s.probe_us, 1.0) / 1000.0},
            {"serverCpuPerSyncUs", s.syncs ? static_cast<double>(cpu1 - cpu0) / static_cast<double>(s.syncs) : 0},
            {"serverCores", static_cast<double>(cpu1 - cpu0) / 1e6 / secs},
            {"serverRssMiB", rss1 / 1024},
            {"fleetCores", static_cast<double>(own1 - own0) / 1e6 / secs}};
  std::printf(
      "%-26s %6.0f syncs/s  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  server %5.1f us/sync, %.2f cores, "
      "%lld MiB; fleet %.2f cores\n",
      name, j["syncsPerSecond"].get<double>(), j["p50Ms"].get<double>(), j["p99Ms"].get<double>(),
      j["maxMs"].get<double>(), j["serverCpuPerSyncUs"].get<double>(), j["serverCores"].get<double>(),
      static_cast<long long>(rss1 / 1024), j["fleetCores"].get<double>());
  std::fflush(stdout);
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--muster")
      o.muster = v;
    else if (k == "--agents")
      o.agents = std::stoi(v);
    else if (k == "--jobs")
      o.jobs = std::stoi(v);
    else if (k == "--gang")
      o.gang = std::stoi(v);
    else if (k == "--wait-ms")
      o.wait_ms = std::stoi(v);
    else if (k == "--probe-every")
      o.probe_every = std::stoi(v);
    else if (k == "--window")
      o.window_s = std::stoi(v);
    else if (k == "--restart-fraction")
      o.restart_fraction = std::stod(v);
    else if (k == "--start-jitter-ms")
      o.start_jitter_ms = std::stoi(v);
    else if (k == "--threads")
      o.threads = std::max(1, std::stoi(v));
    else {
      std::fprintf(stderr, "muster_bench_fleet: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (o.muster.empty()) {
    std::fprintf(stderr, "usage: muster_bench_fleet --muster PATH/muster [--agents N] [--jobs N] [--gang N] ...\n");
    return 2;
  }
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
  if (static_cast<rlim_t>(o.agents) + 64 > files.rlim_max) {
    std::fprintf(stderr, "muster_bench_fleet: %d agents need as many open files; the limit is %llu\n", o.agents,
                 static_cast<unsigned long long>(files.rlim_max));
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  const std::string dir = std::filesystem::temp_directory_path() / ("muster-fleet-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ostringstream cfg;
  cfg << "store: " << dir << "/muster.db\nlisten: 127.0.0.1:0\n"
      << "rateLimit: {perSecond: 1000000, burst: 1000000}\n"
      << "limits: {pendingJobsPerUser: 100000000}\n"
      << "auth: {rootJobs: [root]}\n"  // its jobs never run: played agents
      << "maxConnections: " << std::min<int64_t>(2 * o.agents + 100, files.rlim_max - 500)
      << "\nmaxConnectionsPerClient: 0\n"
      << "agents: {syncWait: " << o.wait_ms << "ms, unreachableAfter: 30s, lostAfter: 120s}\n";
  // The played nodes, with their credentials in the store before it serves.
  std::vector<PlayedNode> all;
  for (int i = 0; i < o.agents; ++i) {
    all.push_back({"fleet-" + std::to_string(i),
                   8,
                   "H100",
                   {{"leaf", "leaf-" + std::to_string(i / 32)}, {"spine", "spine-" + std::to_string(i / 512)}},
                   ""});
  }
  const std::string admin_token = IssueFleetCredentials(dir + "/muster.db", all);
  if (admin_token.empty()) return 1;
  ServerProcess server_process = StartServer(o.muster, dir, cfg.str());
  const pid_t server = server_process.pid;
  const int port = server_process.port;
  if (port == 0) {
    std::fprintf(stderr, "muster_bench_fleet: the server did not start; see %s/server.log\n", dir.c_str());
    return 1;
  }
  std::printf("fleet: %d agents x 8 GPUs against %s (server pid %d, %s)\n", o.agents, o.muster.c_str(), server,
              dir.c_str());
  Shared fleet;
  // Shards of the agents, one thread each: one thread alone cannot play
  // 12,500 agents at 2,500 syncs a second (its queueing would be measured).
  std::vector<std::unique_ptr<Fleet>> shards;
  std::vector<std::thread> threads;
  FleetOptions fo;
  fo.wait_ms = o.wait_ms;
  fo.probe_every = o.probe_every;
  fo.restart_fraction = o.restart_fraction;
  fo.start_jitter_ms = o.start_jitter_ms;
  for (int t = 0; t < o.threads; ++t) {
    std::vector<PlayedNode> nodes(all.begin() + o.agents * t / o.threads, all.begin() + o.agents * (t + 1) / o.threads);
    shards.push_back(std::make_unique<Fleet>(fo, port, std::move(nodes), fleet));
  }
  for (auto& shard : shards) threads.emplace_back([&shard] { shard->Run(); });
  auto join = [&] {
    fleet.stop = true;
    for (std::thread& t : threads) t.join();
  };
  httplib::Client api("127.0.0.1", port);
  api.set_read_timeout(120, 0);
  const httplib::Headers user{{"Authorization", "Bearer " + admin_token}};
  json report = {{"agents", o.agents},
                 {"jobs", o.jobs},
                 {"gang", o.gang},
                 {"waitMs", o.wait_ms},
                 {"startJitterMs", o.start_jitter_ms},
                 {"phases", json::array()}};
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "muster_bench_fleet: %s\n", why.c_str());
    join();
    StopServer(server_process);
    return 1;
  };

  const int64_t t_reg = NowUs();
  if (!WaitFor([&] { return fleet.registered.load() == o.agents; }, 600)) return fail("not every agent registered");
  std::printf("registered %d agents in %.1f s\n", o.agents, static_cast<double>(NowUs() - t_reg) / 1e6);
  report["phases"].push_back(Measure(fleet, server, o.window_s, o.wait_ms, "idle fleet"));

  if (o.jobs > 0) {
    const int64_t t_sub = NowUs();
    auto r = api.Post("/v1/jobs", user,
                      "name: load\narray: " + std::to_string(o.jobs) +
                          "\nresources: {gpus: 8}\nretry: {limit: 0}\ncommand: [sleep, '100000']\n",
                      "application/yaml");
    if (!r || r->status != 201) return fail("the array submit failed: " + (r ? r->body : std::string("no answer")));
    if (!WaitFor([&] { return fleet.running_tasks.load() >= o.jobs; }, 600)) return fail("the jobs did not all start");
    std::printf("%d jobs submitted and running on the fleet in %.1f s\n", o.jobs,
                static_cast<double>(NowUs() - t_sub) / 1e6);
    report["jobsRunningAfterS"] = static_cast<double>(NowUs() - t_sub) / 1e6;
    report["phases"].push_back(Measure(fleet, server, o.window_s, o.wait_ms, "fleet running the jobs"));
  }

  if (o.gang > 0) {
    // Its agents know its tasks by the job's name (SLURM_JOB_NAME).
    fleet.gang_submit_us = NowUs();
    auto r = api.Post("/v1/jobs", user,
                      "name: gang\nreplicas: " + std::to_string(o.gang) +
                          "\nresources: {gpus: 8}\nretry: {limit: 0}\ncommand: [sleep, '100000']\n",
                      "application/yaml");
    if (!r || r->status != 201) return fail("the gang submit failed: " + (r ? r->body : std::string("no answer")));
    if (!WaitFor([&] { return fleet.gang_agents.load() == o.gang; }, 120)) return fail("the gang did not start");
    const double ms = static_cast<double>(fleet.gang_last_us - fleet.gang_submit_us) / 1000.0;
    std::printf("gang of %d x 8 GPUs: submit to the last agent told to start: %.1f ms\n", o.gang, ms);
    report["gangStartMs"] = ms;
  }

  if (o.restart_fraction > 0) {
    // Measured from the moment they restart: the rest of the fleet's syncs
    // during the storm of their first syncs (each reporting every task it
    // runs), and those first syncs apart. The fleet settles first (the
    // gang's 512 answers are large: their writing and reading must not be
    // counted as the restart's).
    const int restarting = static_cast<int>(o.agents * o.restart_fraction);
    std::this_thread::sleep_for(std::chrono::milliseconds(o.wait_ms + 2000));
    fleet.Take(fleet.restart_sample);
    report["phases"].push_back(Measure(fleet, server, o.window_s, -2000, "while a tenth restarts", [&] {
      for (auto& shard : shards) shard->RequestRestart();
    }));
    const Sample s = fleet.Take(fleet.restart_sample);
    std::printf("  the %d restarted agents' first syncs: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%zu answered)\n",
                restarting, Percentile(s.probe_us, 0.5) / 1000.0, Percentile(s.probe_us, 0.99) / 1000.0,
                Percentile(s.probe_us, 1.0) / 1000.0, s.probe_us.size());
    report["restart"] = {{"agents", restarting},
                         {"answered", s.probe_us.size()},
                         {"p50Ms", Percentile(s.probe_us, 0.5) / 1000.0},
                         {"p99Ms", Percentile(s.probe_us, 0.99) / 1000.0},
                         {"maxMs", Percentile(s.probe_us, 1.0) / 1000.0}};
    report["phases"].push_back(Measure(fleet, server, o.window_s, o.wait_ms, "after a tenth restarted"));
  }
  report["errors"] = fleet.errors.load();
  std::printf("%s\n", report.dump().c_str());
  join();
  StopServer(server_process);
  if (!std::getenv("MUSTER_FLEET_TRACE")) std::filesystem::remove_all(dir);  // kept to read the server log
  // An error (an answer other than 200, a connection the server closed) is
  // a defect at any scale: the run fails (the fleet_smoke test relies on it).
  if (fleet.errors.load() > 0) {
    std::fprintf(stderr, "muster_bench_fleet: %d errors (the first are printed above)\n", fleet.errors.load());
    return 1;
  }
  return 0;
}
