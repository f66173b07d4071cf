// The fixture of the end-to-end tests: a real server and real agents running
// real processes (as root, in real cgroups). Each test gets its own server,
// store, agents and node names.
#pragma once

#include <httplib.h>
#include <unistd.h>

#include <cstdlib>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../server/server_process.h"
#include "../wait_for.h"
#include "agent/executor.h"
#include "agent_process.h"
#include "common/rfc3339.h"

namespace muster::testing {

// A time the API wrote (RFC 3339, to the millisecond) in ms since the epoch,
// -1 when it is not one. Compare times so, not as text: "12:00:00.006Z" is
// after "12:00:00Z" but sorts before it.
inline int64_t Millis(const nlohmann::json& t) {
  const auto parsed = t.is_string() ? ParseRfc3339Utc(t.get<std::string>()) : std::nullopt;
  return parsed ? parsed->millis() : -1;
}

// Waits until `last_seen` (a node's lastSeen, ms) has moved twice past
// `after_ms`: the server heard two syncs of its agent sent after then, so
// the first one's report is applied and the agent acted on its answer
// before it sent the second.
inline bool WaitSeenTwiceAfter(const std::function<int64_t()>& last_seen, int64_t after_ms,
                               std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  int64_t first = -1;
  return WaitFor(
      [&] {
        const int64_t seen = last_seen();
        if (first < 0 && seen > after_ms) first = seen;
        return first >= 0 && seen > first;
      },
      timeout);
}

// Now, as the API writes times: ms since the epoch.
inline int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A test host: a network namespace joined to this one by a veth pair, each
// end with its own address. Cut() takes the link down (a network partition
// between the host's agent and the server); Heal() brings it back.
class NetnsHost {
 public:
  // Whether this machine lets us (root, `ip netns`).
  static bool Supported() { return ::geteuid() == 0 && std::system("/usr/sbin/ip netns list >/dev/null 2>&1") == 0; }
  explicit NetnsHost(int index) {
    const std::string id = std::to_string(::getpid() % 100000) + "x" + std::to_string(index);
    ns_ = "mt" + id;
    host_if_ = "mh" + id;
    const std::string net = "10." + std::to_string(200 + index) + "." + std::to_string(::getpid() % 250) + ".";
    host_ip_ = net + "1";
    ns_ip_ = net + "2";
    ok_ = Run("/usr/sbin/ip netns add " + ns_) &&
          Run("/usr/sbin/ip link add " + host_if_ + " type veth peer name ma" + id) &&
          Run("/usr/sbin/ip link set ma" + id + " netns " + ns_) &&
          Run("/usr/sbin/ip addr add " + host_ip_ + "/24 dev " + host_if_) &&
          Run("/usr/sbin/ip link set " + host_if_ + " up") && Exec("ip addr add " + ns_ip_ + "/24 dev ma" + id) &&
          Exec("ip link set ma" + id + " up") && Exec("ip link set lo up");
  }
  ~NetnsHost() {
    Run("/usr/sbin/ip link del " + host_if_);
    Run("/usr/sbin/ip netns del " + ns_);
  }
  bool ok() const { return ok_; }
  // The server as the host sees it (the server must listen on 0.0.0.0).
  std::string ServerUrl(int port) const { return "http://" + host_ip_ + ":" + std::to_string(port); }
  // Runs a command in the host's network namespace only (`ip netns exec`
  // would also remount /sys and hide the cgroup hierarchies).
  std::vector<std::string> Wrapper() const { return {"/usr/bin/nsenter", "--net=/run/netns/" + ns_}; }
  bool Cut() { return Run("/usr/sbin/ip link set " + host_if_ + " down"); }
  bool Heal() { return Run("/usr/sbin/ip link set " + host_if_ + " up"); }

 private:
  static bool Run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }
  bool Exec(const std::string& cmd) { return Run("/usr/sbin/ip netns exec " + ns_ + " /usr/sbin/" + cmd); }
  std::string ns_, host_if_, host_ip_, ns_ip_;
  bool ok_ = false;
};

inline const char* kConfig = R"(
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s}
)";

class ClusterFixture : public ::testing::Test {
 protected:
  explicit ClusterFixture(const char* config, const std::string& listen_host = "127.0.0.1") : server_(config) {
    server_.listen_host = listen_host;
  }
  void SetUp() override {
    ASSERT_TRUE(server_.Start()) << server_.log();
    cli_ = std::make_unique<httplib::Client>(server_.url());
    cli_->set_read_timeout(30, 0);
  }
  void TearDown() override {
    for (auto& a : agents_) a->Stop();
    if (HasFailure()) {
      std::cerr << "--- server log\n" << server_.log();
      for (auto& a : agents_) std::cerr << "--- agent " << a->name() << " log\n" << a->log();
    }
  }

  std::string Name(int i) { return "t" + std::to_string(getpid()) + "-" + std::to_string(i); }

  AgentProcess& AddAgent(std::vector<std::string> flags = {"--fake-gpus", "8xH100"},
                         std::map<std::string, std::string> env = {}) {
    const int i = static_cast<int>(agents_.size());
    agents_.push_back(
        std::make_unique<AgentProcess>(server_.url(), Name(i), server_.dir() + "/agent" + std::to_string(i)));
    agents_.back()->flags = std::move(flags);
    agents_.back()->flags.push_back("--stop-tasks-on-exit");
    agents_.back()->env = std::move(env);
    agents_.back()->Start();
    return *agents_.back();
  }

  nlohmann::json Events(int64_t id) { return Get("/v1/jobs/" + std::to_string(id) + "/events")["items"]; }
  static bool HasEvent(const nlohmann::json& events, const std::string& type, const std::string& text) {
    for (const nlohmann::json& e : events) {
      if (e["type"] == type && e["message"].get<std::string>().find(text) != std::string::npos) return true;
    }
    return false;
  }

  // A gang of two 8-GPU replicas that never retries; each of its processes
  // appends its pid to `dir`/a<attempt>. Returns its id once it runs.
  int64_t SubmitRecordedGang(const std::string& dir) {
    std::filesystem::create_directories(dir);
    const int64_t id = Submit(
        "name: gang\nreplicas: 2\nresources: {gpus: 8}\nretry: {limit: 0}\n"
        "command: [/bin/sh, -c, 'echo $$ >> " +
        dir + "/a$MUSTER_ATTEMPT; exec sleep 300']\n");
    WaitState(id, "RUNNING");
    return id;
  }

  // Waits until `n` nodes are registered.
  void WaitNodes(size_t n) {
    for (int i = 0; i < 1000; ++i) {
      if (Get("/v1/nodes")["items"].size() >= n) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "agents did not register";
  }

  // When the server last heard node `name`'s agent (ms since the epoch),
  // -1 if never.
  int64_t LastSeen(const std::string& name) {
    const nlohmann::json nodes = Get("/v1/nodes");  // kept: a loop over a temporary's member dangles
    for (const nlohmann::json& n : nodes.value("items", nlohmann::json::array())) {
      if (n.value("name", "") == name) return Millis(n.value("lastSeen", nlohmann::json()));
    }
    return -1;
  }
  // Waits until the server has heard node `name`'s agent in two syncs
  // after `after_ms` (WaitSeenTwiceAfter).
  bool WaitHeardTwiceAfter(const std::string& name, int64_t after_ms) {
    return WaitSeenTwiceAfter([&] { return LastSeen(name); }, after_ms);
  }

  nlohmann::json Get(const std::string& path) {
    auto r = cli_->Get(path, httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}});
    EXPECT_TRUE(r) << path;
    return r ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json();
  }
  std::string Text(const std::string& path) {
    auto r = cli_->Get(path, httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}});
    return r && r->status == 200 ? r->body : std::string();
  }
  // A GET that is refused: its status and the error's message ("" if none).
  std::pair<int, std::string> GetError(const std::string& path) {
    auto r = cli_->Get(path, httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}});
    EXPECT_TRUE(r) << path;
    if (!r) return {0, ""};
    const nlohmann::json e = nlohmann::json::parse(r->body, nullptr, false);
    const bool has = e.is_object() && e.contains("error") && e["error"].is_object();
    return {r->status, has ? e["error"].value("message", "") : ""};
  }
  nlohmann::json Post(const std::string& path, const std::string& body, const std::string& type = "application/yaml") {
    auto r = cli_->Post(path, httplib::Headers{{"Authorization", "Bearer " + server_.admin_token()}}, body, type);
    EXPECT_TRUE(r) << path;
    return r ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json();
  }
  int64_t Submit(const std::string& yaml) {
    const nlohmann::json j = Post("/v1/jobs", yaml);
    EXPECT_TRUE(j.contains("id")) << j.dump();
    return j.value("id", int64_t{0});
  }
  // Waits until the job is in a state not in `transient`; returns the job.
  nlohmann::json WaitEnd(int64_t id, int seconds = 60) {
    nlohmann::json j;
    for (int i = 0; i < seconds * 50; ++i) {
      j = Get("/v1/jobs/" + std::to_string(id));
      const std::string s = j.value("state", "");
      if (s != "PENDING" && s != "RUNNING" && s != "COMPLETING") return j;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "job " << id << " did not end: " << j.dump();
    return j;
  }
  nlohmann::json WaitState(int64_t id, const std::string& state, int seconds = 30) {
    nlohmann::json j;
    for (int i = 0; i < seconds * 50; ++i) {
      j = Get("/v1/jobs/" + std::to_string(id));
      if (j.value("state", "") == state) return j;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "job " << id << " never reached " << state << ": " << j.dump();
    return j;
  }
  // Cancels the job and waits for its end.
  nlohmann::json CancelAndWait(int64_t id, int seconds = 60) {
    Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json");
    return WaitEnd(id, seconds);
  }
  // Whether the job runs and its process has started (written `file`), not
  // only been bound.
  bool WaitProcessStarted(int64_t id, const std::string& file) {
    return WaitState(id, "RUNNING").value("state", "") == "RUNNING" && !WaitFile(file).empty();
  }
  // The job once attempt `attempt` runs, or as it is after 30 s (the
  // caller's expectations then say what is wrong).
  nlohmann::json WaitAttemptRunning(int64_t id, int attempt) {
    nlohmann::json j;
    for (int i = 0; i < 1500; ++i) {
      j = Get("/v1/jobs/" + std::to_string(id));
      if (j["attempts"] == attempt && j["state"] == "RUNNING") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return j;
  }
  std::string Logs(int64_t id, int replica = 0) {
    return Text("/v1/jobs/" + std::to_string(id) + "/logs?replica=" + std::to_string(replica));
  }
  // Waits until a file exists and has content.
  static std::string WaitFile(const std::string& path, int seconds = 30) {
    for (int i = 0; i < seconds * 50; ++i) {
      std::ifstream in(path);
      std::string s((std::istreambuf_iterator<char>(in)), {});
      if (!s.empty() && s.back() == '\n') return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return {};
  }
  static std::map<std::string, std::string> EnvOf(const std::string& text) {
    std::map<std::string, std::string> env;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return env;
  }
  // Whom the fixture's requests are from: root, an admin (the server's
  // admin token).
  static std::string User() { return "root"; }
  std::string Tmp(const std::string& name) { return server_.dir() + "/" + name; }

  // ---- The fault matrix's invariants ----
  //
  // A guarded workload: each attempt appends its shell's pid to DIR/a<N>,
  // and first checks that no process of attempt N-1 is alive; if one is, it
  // writes DIR/overlap (two attempts of one job running at once).
  static std::string Guarded(const std::string& dir, const std::string& then = "exec sleep 300") {
    return "p=$((MUSTER_ATTEMPT-1)); for q in $(cat " + dir +
           "/a$p 2>/dev/null); do kill -0 $q 2>/dev/null && "
           "echo \"attempt $MUSTER_ATTEMPT began while $q of attempt $p ran\" >> " +
           dir +
           "/overlap; done; "
           "echo $$ >> " +
           dir + "/a$MUSTER_ATTEMPT; " + then;
  }
  static void ExpectNoOverlap(const std::string& dir) {
    std::ifstream in(dir + "/overlap");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_TRUE(text.empty()) << "two attempts of a job ran at once: " << text;
  }
  // No GPU is held by two jobs: the allocations of running and completing
  // jobs are disjoint.
  void ExpectNoGpuHeldTwice() {
    const nlohmann::json jobs = Get("/v1/jobs?state=RUNNING,COMPLETING&limit=1000");
    std::map<std::pair<std::string, int>, int64_t> holder;
    for (const nlohmann::json& j : jobs["items"]) {
      for (const nlohmann::json& a : j.value("allocations", nlohmann::json::array())) {
        for (const nlohmann::json& g : a["gpus"]) {
          auto [it, fresh] =
              holder.emplace(std::make_pair(a["node"].get<std::string>(), g.get<int>()), j["id"].get<int64_t>());
          EXPECT_TRUE(fresh) << "GPU " << g << " of " << a["node"] << " held by jobs " << it->second << " and "
                             << j["id"];
        }
      }
    }
  }
  // Every acknowledged job is still there, exactly once.
  void ExpectJobsPresent(const std::vector<int64_t>& ids) {
    for (int64_t id : ids) {
      const nlohmann::json j = Get("/v1/jobs/" + std::to_string(id));
      EXPECT_EQ(j.value("id", int64_t{0}), id) << "acknowledged job " << id << " is gone: " << j.dump();
    }
  }
  // Once the cluster is quiet every job is terminal and none of its
  // processes (listed under `dirs`) is left.
  void ExpectQuiet(const std::vector<int64_t>& ids, const std::vector<std::string>& pid_dirs, int seconds = 60) {
    for (int64_t id : ids) {
      const nlohmann::json j = WaitEnd(id, seconds);
      const std::string st = j.value("state", "");
      EXPECT_TRUE(st != "PENDING" && st != "RUNNING" && st != "COMPLETING" && st != "HELD") << j.dump();
    }
    for (const std::string& dir : pid_dirs) {
      for (const auto& f : std::filesystem::directory_iterator(dir)) {
        if (f.path().filename().string().rfind('a', 0) != 0) continue;
        std::ifstream in(f.path());
        for (pid_t p = 0; in >> p;) {
          EXPECT_EQ(agent::ProcessStartTime(p), 0) << "process " << p << " of " << f.path() << " outlived its job";
        }
      }
    }
  }

  ServerProcess server_;
  std::unique_ptr<httplib::Client> cli_;
  std::vector<std::unique_ptr<AgentProcess>> agents_;
};

class ClusterTest : public ClusterFixture {
 protected:
  ClusterTest() : ClusterFixture(kConfig) {}
};

// Failure timings shrunk so node loss plays out in seconds.
inline const char* kFastFailures = R"(
rateLimit: {perSecond: 100000, burst: 100000}
agents: {defaultGrace: 1s, unreachableAfter: 1s, lease: 2s, lostAfter: 3s}
)";

}  // namespace muster::testing
