// muster_bench_fleet: one `muster server` against a fleet of N node agents
// played from one process, over the real agent protocol and real HTTP.
//
// Each played agent holds one keep-alive connection and syncs as the real
// agents do: a long poll (waitMs, held by the server until its node's
// desired state changes) carrying its whole observed state, again as soon as
// the answer arrives. Every `--probe-every`th sync is sent with waitMs 0 (as
// a real agent's report of an ended task is): the server answers those at
// once, so their round trip is the sync latency reported. "Tasks" are
// records: a task the desired state lists starts at once and ends after the
// seconds its command sleeps (`sleep N`); one no longer listed ends as
// stopped. Nothing is forked.
//
// Phases (each measured over --window seconds):
//   1. register every agent (connections opened in batches), then steady state
//   2. submit --jobs jobs of 8 GPUs (one array), wait until every task runs
//   3. steady state with those tasks reported by every sync
//   4. submit a gang of --gang replicas x 8 GPUs: the time from its submit to
//      the last of its agents receiving its task
//   5. a tenth of the fleet restarts at once (connections closed, agents
//      come back re-registering and reporting every task): their first syncs
//      and the steady state after
// Reported per phase: syncs per second, sync latency (p50, p99, max of the
// waitMs 0 syncs), the server's CPU per sync and RSS. It starts the server
// itself (port 0, --port-file) with a configuration for the fleet.
//
// Usage: muster_bench_fleet --muster build/cmd/muster/muster [--agents 12500]
//        [--jobs 10000] [--gang 512] [--wait-ms 5000] [--probe-every 5]
//        [--window 20] [--restart-fraction 0.1]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "proto/agent_protocol.h"

namespace {

namespace proto = muster::proto;

using Clock = std::chrono::steady_clock;
using nlohmann::json;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch()).count();
}
int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Options {
  std::string muster;
  int agents = 12'500;
  int jobs = 10'000;
  int gang = 512;
  int wait_ms = 5'000;
  int probe_every = 5;
  int window_s = 20;
  double restart_fraction = 0.1;
  int connect_batch = 250;  // new connections per 20 ms and thread
  int threads = 2;
};

struct Task {
  proto::TaskReport report;
  int64_t ends_ms = 0;  // wall clock; 0: runs until stopped
};

struct Agent {
  int fd = -1;
  std::string name;
  proto::SyncRequest base;  // node, GPUs, labels: the same in every sync
  std::map<std::string, Task> tasks;
  int64_t version = 0, epoch = 0, report_seq = 0;
  std::string out;
  size_t out_off = 0;
  std::string in;
  int64_t sent_us = 0;
  bool probe = false;
  bool registered = false;
  bool restarted = false;  // its next answer is the first after a restart
  uint64_t syncs = 0;
  bool got_gang = false;
  // The last request body and what it was built from, sent again while
  // nothing changed (as a real agent's would be the same bytes), and the
  // last answer (one equal to it changes nothing): the fleet's own cost per
  // sync must stay well below the server's.
  struct Body {
    std::tuple<int64_t, int64_t, int64_t> of{-1, -1, -1};  // version, epoch, report_seq
    std::string text;
  };
  Body bodies[2];  // waitMs 0, and the long poll's
  std::string last_answer;
};

// Latencies of one phase, in microseconds.
struct Sample {
  std::vector<int64_t> probe_us;
  uint64_t syncs = 0;
  void Clear() {
    probe_us.clear();
    syncs = 0;
  }
};

int64_t Percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

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

// What the shards count together, read by the main thread.
struct Shared {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> gang_submit_us{0};
  std::atomic<int64_t> gang_last_us{0};
  std::atomic<int> gang_agents{0};
  std::atomic<int> registered{0};
  std::atomic<int64_t> running_tasks{0};
  std::atomic<int> errors{0};
  std::mutex mu;
  Sample sample, restart_sample;  // guarded by mu

  // Takes the phase's sample (and starts a new one).
  Sample Take(Sample& which) {
    std::lock_guard<std::mutex> lock(mu);
    Sample s = std::move(which);
    which.Clear();
    return s;
  }
};

// One thread's share of the agents, with its own epoll.
class Fleet {
 public:
  Fleet(const Options& o, int port, int first, int last, Shared& shared) : o_(o), port_(port), shared_(shared) {
    ep_ = epoll_create1(0);
    for (int i = first; i < last; ++i) {
      Agent a;
      a.name = "fleet-" + std::to_string(i);
      a.base.node = a.name;
      a.base.agent_id = "fleet:" + a.name;
      a.base.agent_version = "fleet";
      a.base.address = "127.0.0.1";
      a.base.gpu_type = "H100";
      a.base.gpu_source = "fake";
      for (int g = 0; g < 8; ++g) {
        proto::GpuReport r;
        r.index = g;
        r.uuid = "GPU-fleet-" + std::to_string(i) + "-" + std::to_string(g);
        r.name = "H100";
        a.base.gpus.push_back(r);
      }
      a.base.cpu_milli = 128'000;
      a.base.memory_bytes = int64_t{1} << 40;
      a.base.labels = {{"leaf", "leaf-" + std::to_string(i / 32)}, {"spine", "spine-" + std::to_string(i / 512)}};
      a.base.cgroups = "none";
      a.report_seq = NowUs();
      agents_.push_back(std::move(a));
    }
  }

  // The event loop; returns when the shared stop is set.
  void Run() {
    size_t next_connect = 0;
    std::vector<epoll_event> events(1024);
    int64_t last_batch = 0;
    while (!shared_.stop) {
      const int64_t now = NowUs();
      if (next_connect < agents_.size() && now - last_batch >= 20'000) {
        for (int k = 0; k < o_.connect_batch && next_connect < agents_.size(); ++k) Connect(next_connect++);
        last_batch = now;
      }
      if (restart_.exchange(false)) Restart();
      const int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 5);
      for (int i = 0; i < n; ++i) {
        const size_t idx = events[i].data.u64;
        if (events[i].events & (EPOLLERR | EPOLLHUP)) {
          Reconnect(idx, "connection closed");
          continue;
        }
        if (events[i].events & EPOLLOUT) Write(idx);
        if (events[i].events & EPOLLIN) Read(idx);
      }
    }
  }

  std::atomic<bool> restart_{false};

 private:
  void Connect(size_t idx) {
    Agent& a = agents_[idx];
    a.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(a.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connect(a.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET;  // edge-triggered: a writable socket does not wake the loop again
    ev.data.u64 = idx;
    epoll_ctl(ep_, EPOLL_CTL_ADD, a.fd, &ev);
    a.in.clear();
    a.last_answer.clear();  // a new connection's first answer is applied whatever it says
    Send(idx);
  }

  void Reconnect(size_t idx, const char* why) {
    Agent& a = agents_[idx];
    if (a.fd >= 0) {
      epoll_ctl(ep_, EPOLL_CTL_DEL, a.fd, nullptr);
      close(a.fd);
      a.fd = -1;
    }
    if (shared_.errors.fetch_add(1) < 5) std::fprintf(stderr, "fleet: %s: %s; reconnecting\n", a.name.c_str(), why);
    Connect(idx);
  }

  // A tenth (restart_fraction) of the agents restart: their connections
  // close and each comes back with a new report sequence and version 0,
  // reporting every task it runs (a restarted agent adopts its tasks).
  void Restart() {
    const size_t every = static_cast<size_t>(std::max(1.0, 1.0 / o_.restart_fraction));
    for (size_t idx = 0; idx < agents_.size(); idx += every) {
      Agent& a = agents_[idx];
      if (a.fd >= 0) {
        epoll_ctl(ep_, EPOLL_CTL_DEL, a.fd, nullptr);
        close(a.fd);
        a.fd = -1;
      }
      a.version = 0;
      a.report_seq = NowUs();
      a.restarted = true;
      Connect(idx);
    }
  }

  void Send(size_t idx) {
    Agent& a = agents_[idx];
    ++a.syncs;
    // One sync in probe_every, spread over the agents (a fixed hash, no chance).
    a.probe = a.registered && o_.probe_every > 0 &&
              (a.syncs * 2654435761u + idx * 40503u) % static_cast<uint64_t>(o_.probe_every) == 0;
    proto::SyncRequest r;
    r.node = a.base.node;
    r.epoch = a.epoch;
    r.version = a.version;
    r.reports_version = a.version;
    r.report_seq = a.report_seq;
    r.wait_ms = a.probe || !a.registered ? 0 : o_.wait_ms;
    const int64_t wall = WallMs();
    for (auto& [key, t] : a.tasks) {
      if (t.report.running && t.ends_ms > 0 && wall >= t.ends_ms) {
        t.report.running = false;
        t.report.exit_code = 0;
        t.report.end_ms = wall;
        ++a.report_seq;
        r.report_seq = a.report_seq;
        r.wait_ms = 0;  // an end is reported at once
      }
      r.tasks.push_back(t.report);
    }
    const auto key = std::make_tuple(r.version, r.epoch, r.report_seq);
    Agent::Body& cached = a.bodies[r.wait_ms > 0 ? 1 : 0];
    if (key != cached.of) {
      proto::SyncRequest full = a.base;
      full.epoch = r.epoch;
      full.version = r.version;
      full.reports_version = r.reports_version;
      full.report_seq = r.report_seq;
      full.wait_ms = r.wait_ms;
      full.tasks = std::move(r.tasks);
      cached.text = proto::ToJson(full);
      cached.of = key;
    }
    const std::string& body = cached.text;
    a.out = "POST /v1/agent/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body;
    a.out_off = 0;
    a.sent_us = NowUs();
    Write(idx);
  }

  void Write(size_t idx) {
    Agent& a = agents_[idx];
    while (a.out_off < a.out.size()) {
      const ssize_t n = send(a.fd, a.out.data() + a.out_off, a.out.size() - a.out_off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == ENOTCONN || errno == EINPROGRESS) return;
        return Reconnect(idx, std::strerror(errno));
      }
      a.out_off += static_cast<size_t>(n);
    }
  }

  void Read(size_t idx) {
    Agent& a = agents_[idx];
    char buf[65536];
    while (true) {
      const ssize_t n = recv(a.fd, buf, sizeof buf, 0);
      if (n == 0) return Reconnect(idx, "closed by the server");
      if (n < 0) {
        if (errno == EAGAIN) break;
        return Reconnect(idx, std::strerror(errno));
      }
      a.in.append(buf, static_cast<size_t>(n));
    }
    const size_t head_end = a.in.find("\r\n\r\n");
    if (head_end == std::string::npos) return;
    const size_t cl = a.in.find("Content-Length: ");
    if (cl == std::string::npos || cl > head_end) return Reconnect(idx, "an answer without Content-Length");
    const size_t length = std::stoul(a.in.substr(cl + 16));
    if (a.in.size() < head_end + 4 + length) return;
    const int status = std::atoi(a.in.c_str() + 9);
    const std::string body = a.in.substr(head_end + 4, length);
    a.in.erase(0, head_end + 4 + length);
    const int64_t took = NowUs() - a.sent_us;
    if (status != 200) {
      if (shared_.errors.fetch_add(1) < 5) std::fprintf(stderr, "fleet: %s: %d %s\n", a.name.c_str(), status, body.c_str());
      return Send(idx);
    }
    const bool same = body == a.last_answer;
    {
      std::lock_guard<std::mutex> lock(shared_.mu);
      ++shared_.sample.syncs;
      if (a.probe) shared_.sample.probe_us.push_back(took);
      if (a.probe && trace_ && took > 20'000) {
        std::fprintf(stderr, "fleet: slow sync %s: %.1f ms, answered at +%.3f s\n", a.name.c_str(), took / 1000.0,
                     static_cast<double>(NowUs() % 100'000'000) / 1e6);
      }
      if (a.restarted) {  // answered at once (its version is 0), reported apart
        ++shared_.restart_sample.syncs;
        shared_.restart_sample.probe_us.push_back(took);
      }
    }
    a.restarted = false;
    if (!a.registered) {
      a.registered = true;
      shared_.registered.fetch_add(1);
    }
    if (!same) {
      auto r = proto::ParseSyncResponse(body);
      if (!r.ok()) return Reconnect(idx, "an answer that does not parse");
      Apply(a, *r);
      a.last_answer = body;
    }
    Send(idx);
  }

  void Apply(Agent& a, const proto::SyncResponse& r) {
    if (r.epoch < a.epoch) return;
    a.epoch = r.epoch;
    a.version = r.version;
    for (const proto::TaskRef& done : r.recorded) {
      auto it = a.tasks.find(proto::TaskKey(done.job, done.attempt, done.replica));
      if (it != a.tasks.end() && !it->second.report.running) a.tasks.erase(it);
    }
    std::map<std::string, bool> desired;
    const int64_t wall = WallMs();
    for (const proto::TaskAssignment& t : r.tasks) {
      const int64_t job = t.job;
      const int32_t attempt = t.attempt, replica = t.replica;
      const std::string key = proto::TaskKey(job, attempt, replica);
      desired[key] = true;
      if (a.tasks.count(key)) continue;
      Task task;
      task.report.job = job;
      task.report.attempt = attempt;
      task.report.replica = replica;
      task.report.start_ms = wall;
      if (t.argv.size() == 2 && t.argv[0].find("sleep") != std::string::npos) {
        task.ends_ms = wall + std::atoll(t.argv[1].c_str()) * 1000;
      }
      a.tasks[key] = task;
      ++a.report_seq;
      shared_.running_tasks.fetch_add(1);
      auto name = t.env.find("SLURM_JOB_NAME");
      if (name != t.env.end() && name->second == "gang" && !a.got_gang) {
        a.got_gang = true;
        shared_.gang_last_us.store(NowUs());
        shared_.gang_agents.fetch_add(1);
      }
    }
    for (auto& [key, t] : a.tasks) {
      if (t.report.running && !desired.count(key)) {
        t.report.running = false;
        t.report.signal = 15;
        t.report.stop_reason = "stop";
        t.report.end_ms = wall;
        ++a.report_seq;
        shared_.running_tasks.fetch_sub(1);
      }
    }
  }

  const Options& o_;
  const int port_;
  Shared& shared_;
  const bool trace_ = std::getenv("MUSTER_FLEET_TRACE") != nullptr;  // print each slow probe
  int ep_ = -1;
  std::vector<Agent> agents_;
};

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
  std::printf("%-26s %6.0f syncs/s  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  server %5.1f us/sync, %.2f cores, "
              "%lld MiB; fleet %.2f cores\n",
              name, j["syncsPerSecond"].get<double>(), j["p50Ms"].get<double>(), j["p99Ms"].get<double>(),
              j["maxMs"].get<double>(), j["serverCpuPerSyncUs"].get<double>(), j["serverCores"].get<double>(),
              static_cast<long long>(rss1 / 1024), j["fleetCores"].get<double>());
  std::fflush(stdout);
  return j;
}

bool WaitFor(const std::function<bool()>& done, int seconds) {
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--muster") o.muster = v;
    else if (k == "--agents") o.agents = std::stoi(v);
    else if (k == "--jobs") o.jobs = std::stoi(v);
    else if (k == "--gang") o.gang = std::stoi(v);
    else if (k == "--wait-ms") o.wait_ms = std::stoi(v);
    else if (k == "--probe-every") o.probe_every = std::stoi(v);
    else if (k == "--window") o.window_s = std::stoi(v);
    else if (k == "--restart-fraction") o.restart_fraction = std::stod(v);
    else if (k == "--threads") o.threads = std::max(1, std::stoi(v));
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
  {
    std::ofstream cfg(dir + "/server.yaml");
    cfg << "store: " << dir << "/muster.db\nlisten: 127.0.0.1:0\n"
        << "rateLimit: {perSecond: 1000000, burst: 1000000}\n"
        << "maxConnections: " << std::min<int64_t>(2 * o.agents + 100, files.rlim_max - 500)
        << "\nmaxConnectionsPerClient: 0\n"
        << "agents: {syncWait: " << o.wait_ms << "ms, unreachableAfter: 30s, lostAfter: 120s}\n";
  }
  const pid_t server = fork();
  if (server == 0) {
    const std::string log = dir + "/server.log";
    std::freopen(log.c_str(), "w", stdout);
    dup2(fileno(stdout), 2);
    execl(o.muster.c_str(), o.muster.c_str(), "server", "-c", (dir + "/server.yaml").c_str(), "--port-file",
          (dir + "/port").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int port = 0;
  WaitFor([&] { return static_cast<bool>(std::ifstream(dir + "/port") >> port); }, 60);
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
  for (int t = 0; t < o.threads; ++t) {
    shards.push_back(std::make_unique<Fleet>(o, port, o.agents * t / o.threads, o.agents * (t + 1) / o.threads, fleet));
  }
  for (auto& shard : shards) threads.emplace_back([&shard] { shard->Run(); });
  auto join = [&] {
    fleet.stop = true;
    for (std::thread& t : threads) t.join();
  };
  httplib::Client api("127.0.0.1", port);
  api.set_read_timeout(120, 0);
  const httplib::Headers user{{"X-Muster-User", "root"}};
  json report = {{"agents", o.agents}, {"jobs", o.jobs}, {"gang", o.gang}, {"waitMs", o.wait_ms}, {"phases", json::array()}};
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "muster_bench_fleet: %s\n", why.c_str());
    join();
    kill(server, SIGTERM);
    waitpid(server, nullptr, 0);
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
    // runs), and those first syncs apart.
    const int restarting = static_cast<int>(o.agents * o.restart_fraction);
    fleet.Take(fleet.restart_sample);
    report["phases"].push_back(Measure(fleet, server, o.window_s, -2000, "while a tenth restarts", [&] {
      for (auto& shard : shards) shard->restart_ = true;
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
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  std::filesystem::remove_all(dir);
  // An error (an answer other than 200, a connection the server closed) is
  // a defect at any scale: the run fails (the fleet_smoke test relies on it).
  if (fleet.errors.load() > 0) {
    std::fprintf(stderr, "muster_bench_fleet: %d errors (the first are printed above)\n", fleet.errors.load());
    return 1;
  }
  return 0;
}
