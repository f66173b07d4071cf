#include "fleet_agents.h"
#include "auth/token.h"
#include "store/open_store.h"

#include "agent/start_delay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <tuple>

namespace muster::fleet {

using SteadyClock = std::chrono::steady_clock;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now().time_since_epoch()).count();
}
int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t Percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

Sample Shared::Take(Sample& which) {
  std::lock_guard<std::mutex> lock(mu);
  Sample s = std::move(which);
  which.Clear();
  return s;
}

struct Task {
  proto::TaskReport report;
  int64_t ends_ms = 0;  // wall clock; 0: runs until stopped
};

struct Agent {
  int fd = -1;
  std::string name;
  std::string token;        // its node's credential
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
  bool silenced = false;   // its node failed: it never syncs again
  int64_t back_at_us = 0;  // restarting: when it connects again
  bool down = false;       // restarting: its connection is closed
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

Fleet::Fleet(const FleetOptions& o, int port, std::vector<PlayedNode> nodes, Shared& shared)
    : o_(o), port_(port), shared_(shared), trace_(std::getenv("MUSTER_FLEET_TRACE") != nullptr) {
  ep_ = epoll_create1(0);
  for (PlayedNode& n : nodes) {
    Agent a;
    a.name = n.name;
    a.token = n.token;
    a.base.node = a.name;
    a.base.agent_id = "fleet:" + a.name;
    a.base.agent_version = "fleet";
    a.base.address = "127.0.0.1";
    a.base.gpu_type = n.gpu_type;
    a.base.gpu_source = "fake";
    for (int g = 0; g < n.gpus; ++g) {
      proto::GpuReport r;
      r.index = g;
      r.uuid = "GPU-fleet-" + a.name + "-" + std::to_string(g);
      r.name = n.gpu_type;
      a.base.gpus.push_back(r);
    }
    a.base.cpu_milli = 128'000;
    a.base.memory_bytes = int64_t{1} << 40;
    a.base.labels = std::move(n.labels);
    a.base.cgroups = "none";
    a.report_seq = NowUs();
    agents_.push_back(std::move(a));
  }
}

Fleet::~Fleet() {
  for (Agent& a : agents_) {
    if (a.fd >= 0) close(a.fd);
  }
  if (ep_ >= 0) close(ep_);
}

void Fleet::Silence(const std::string& node) {
  std::lock_guard<std::mutex> lock(silence_mu_);
  silence_.push_back(node);
}

// The event loop; returns when the shared stop is set.
void Fleet::Run() {
  size_t next_connect = 0;
  std::vector<epoll_event> events(1024);
  int64_t last_batch = 0;
  while (!shared_.stop) {
    const int64_t now = NowUs();
    if (o_.in_order) {
      if (next_connect < agents_.size() && (next_connect == 0 || agents_[next_connect - 1].registered)) {
        Connect(next_connect++);
      }
    } else if (next_connect < agents_.size() && now - last_batch >= 20'000) {
      for (int k = 0; k < o_.connect_batch && next_connect < agents_.size(); ++k) Connect(next_connect++);
      last_batch = now;
    }
    if (restart_.exchange(false)) Restart();
    if (!restarting_.empty() || !closing_.empty()) RestartSome();
    {
      std::lock_guard<std::mutex> lock(silence_mu_);
      for (const std::string& node : silence_) {
        for (size_t idx = 0; idx < agents_.size(); ++idx) {
          if (agents_[idx].name != node) continue;
          Drop(idx);
          agents_[idx].silenced = true;
        }
      }
      silence_.clear();
    }
    int timeout_ms = 5;
    if (!closing_.empty()) {
      timeout_ms = 0;
    } else if (!restarting_.empty()) {
      timeout_ms =
          static_cast<int>(std::clamp<int64_t>((agents_[restarting_.front()].back_at_us - NowUs()) / 1000, 0, 5));
    }
    const int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()), timeout_ms);
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

void Fleet::Connect(size_t idx) {
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

void Fleet::Drop(size_t idx) {
  Agent& a = agents_[idx];
  if (a.fd >= 0) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, a.fd, nullptr);
    close(a.fd);
    a.fd = -1;
  }
}

void Fleet::Reconnect(size_t idx, const char* why) {
  Agent& a = agents_[idx];
  Drop(idx);
  if (a.silenced) return;
  if (shared_.errors.fetch_add(1) < 5) std::fprintf(stderr, "fleet: %s: %s; reconnecting\n", a.name.c_str(), why);
  Connect(idx);
}

// A tenth (restart_fraction) of the agents restart: their connections
// close and each comes back, after its start delay as the real agent's,
// with a new report sequence and version 0, reporting every task it runs (a
// restarted agent adopts its tasks). The harness's own work is kept out of
// the latencies it measures: the loop closes kRestartChunk connections, or
// reconnects as many agents whose time has come, between rounds of reading
// answers (a connection and a request take it ~0.1 ms: 625 in one go would
// delay every answer meanwhile by ~60 ms).
void Fleet::Restart() {
  restart_began_us_ = NowUs();
  const size_t every = static_cast<size_t>(std::max(1.0, 1.0 / o_.restart_fraction));
  for (size_t idx = 0; idx < agents_.size(); idx += every) {
    Agent& a = agents_[idx];
    if (a.silenced) continue;
    a.back_at_us = restart_began_us_ + StartDelayUs(a.name);
    closing_.push_back(idx);
    restarting_.push_back(idx);
  }
  std::stable_sort(restarting_.begin(), restarting_.end(),
                   [&](size_t x, size_t y) { return agents_[x].back_at_us < agents_[y].back_at_us; });
  if (trace_) std::fprintf(stderr, "fleet: restart began at %.6f s (steady clock)\n", restart_began_us_ / 1e6);
}

void Fleet::RestartSome() {
  constexpr size_t kRestartChunk = 25;
  // The agents stop: the server sees their connections close.
  for (size_t k = 0; k < kRestartChunk && !closing_.empty(); ++k) {
    Agent& a = agents_[closing_.front()];
    Drop(closing_.front());
    a.down = true;
    closing_.pop_front();
  }
  const int64_t now = NowUs();
  for (size_t k = 0; k < kRestartChunk && !restarting_.empty(); ++k) {
    const size_t idx = restarting_.front();
    Agent& a = agents_[idx];
    if (!a.down || a.back_at_us > now) break;
    restarting_.pop_front();
    a.down = false;
    a.version = 0;
    a.report_seq = NowUs();
    a.restarted = true;
    Connect(idx);
  }
  if (restarting_.empty() && trace_) {
    std::fprintf(stderr, "fleet: restarts spread over %.1f ms\n", (NowUs() - restart_began_us_) / 1000.0);
  }
}

int64_t Fleet::StartDelayUs(const std::string& node) const {
  if (o_.start_jitter_ms <= 0) return 0;
  return static_cast<int64_t>(agent::StartDelay(node, Duration::Millis(o_.start_jitter_ms)).millis()) * 1000;
}

void Fleet::Send(size_t idx) {
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
  a.out =
      "POST /v1/agent/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer " +
      a.token + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  a.out_off = 0;
  a.sent_us = NowUs();
  Write(idx);
}

void Fleet::Write(size_t idx) {
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

void Fleet::Read(size_t idx) {
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
    if (shared_.errors.fetch_add(1) < 5)
      std::fprintf(stderr, "fleet: %s: %d %s\n", a.name.c_str(), status, body.c_str());
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

void Fleet::Apply(Agent& a, const proto::SyncResponse& r) {
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
    // The benchmark's gang is the job named "gang" (bench/fleet.cc).
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

std::string IssueFleetCredentials(const std::string& store_path, std::vector<PlayedNode>& nodes) {
  auto opened = store::OpenStore(store_path);
  if (!opened.ok()) {
    std::fprintf(stderr, "fleet: %s\n", opened.status().ToString().c_str());
    return "";
  }
  store::WriteBatch b;
  auto issue = [&](const std::string& user, const std::string& node) {
    const auth::Token t = auth::NewToken();
    b.tokens.push_back({t.id, auth::Sha256Hex(t.secret), user, node, "fleet benchmark", "fleet", 1, 0, 0});
    return auth::FormatToken(t);
  };
  for (PlayedNode& n : nodes) n.token = issue("", n.name);
  const std::string admin = issue("root", "");
  if (Status s = opened->store->Commit({&b}); !s.ok()) {
    std::fprintf(stderr, "fleet: %s\n", s.ToString().c_str());
    return "";
  }
  return admin;
}

ServerProcess StartServer(const std::string& muster, const std::string& dir, const std::string& config) {
  ServerProcess s;
  std::ofstream(dir + "/server.yaml") << config;
  s.pid = fork();
  if (s.pid == 0) {
    const std::string log = dir + "/server.log";
    std::freopen(log.c_str(), "w", stdout);
    dup2(fileno(stdout), 2);
    execl(muster.c_str(), muster.c_str(), "server", "-c", (dir + "/server.yaml").c_str(), "--port-file",
          (dir + "/port").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  WaitFor([&] { return static_cast<bool>(std::ifstream(dir + "/port") >> s.port); }, 60);
  return s;
}

void StopServer(ServerProcess& server) {
  if (server.pid <= 0) return;
  kill(server.pid, SIGTERM);
  waitpid(server.pid, nullptr, 0);
  server.pid = -1;
}

bool WaitFor(const std::function<bool()>& done, int seconds) {
  const auto end = SteadyClock::now() + std::chrono::seconds(seconds);
  while (SteadyClock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace muster::fleet
