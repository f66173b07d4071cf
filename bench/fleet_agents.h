// Played agents: many node agents from one process, over the real agent
// protocol and real HTTP, for the fleet benchmark (fleet.cc) and the
// scenario replay (fleet_scenario.cc).
//
// Each played agent holds one keep-alive connection and syncs as the real
// agents do: a long poll (waitMs, held by the server until its node's
// desired state changes) carrying its whole observed state, again as soon as
// the answer arrives. Every `probe_every`th sync is sent with waitMs 0 (as
// a real agent's report of an ended task is): the server answers those at
// once, so their round trip is the sync latency the benchmark reports.
// "Tasks" are records: a task the desired state lists starts at once and
// ends (exit 0) after the seconds its command sleeps (`sleep N`); one no
// longer listed ends as stopped (signal 15), as a real agent reports a task
// it stopped. Nothing is forked.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proto/agent_protocol.h"

namespace muster::fleet {

int64_t NowUs();   // steady clock
int64_t WallMs();  // system clock

// Sync latencies of one phase, in microseconds.
struct Sample {
  std::vector<int64_t> probe_us;
  uint64_t syncs = 0;
  void Clear() {
    probe_us.clear();
    syncs = 0;
  }
};
int64_t Percentile(std::vector<int64_t> v, double p);

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
  Sample Take(Sample& which);
};

// One played node.
struct PlayedNode {
  std::string name;
  int gpus = 8;
  std::string gpu_type = "H100";
  std::map<std::string, std::string> labels;  // "leaf", "spine"
  std::string token;                          // its node's credential (IssueFleetCredentials)
};

// Writes a node token for each of `nodes` (setting its `token`) and an
// admin token for root into the store at `store` (a SQLite file no server
// runs on yet), as `muster token create --store` does, in one commit.
// Returns root's token, or "" on failure (said on stderr).
std::string IssueFleetCredentials(const std::string& store, std::vector<PlayedNode>& nodes);

struct FleetOptions {
  int wait_ms = 5'000;
  int probe_every = 5;
  int connect_batch = 250;  // new connections per 20 ms
  // Each agent connects only once the one before it has registered, so the
  // server knows the nodes in the order given (as a simulator does).
  bool in_order = false;
  double restart_fraction = 0.1;
  // A restarted agent's first sync waits agent::StartDelay(node, this), as
  // the real agent's does (its --start-jitter); 0: all at once.
  int start_jitter_ms = 0;
};

struct Agent;

// One thread's share of the agents, with its own epoll.
class Fleet {
 public:
  Fleet(const FleetOptions& o, int port, std::vector<PlayedNode> nodes, Shared& shared);
  ~Fleet();

  // The event loop; returns when the shared stop is set.
  void Run();
  // Asks the loop (from any thread) to restart restart_fraction of the
  // agents at once: their connections close and each comes back with a new
  // report sequence and version 0, reporting every task it runs.
  void RequestRestart() { restart_ = true; }
  // Asks the loop (from any thread) to silence the agent of `node` for good:
  // its connection closes and it never syncs again (its node failed).
  void Silence(const std::string& node);

 private:
  void Connect(size_t idx);
  void Reconnect(size_t idx, const char* why);
  void Restart();
  void RestartSome();
  int64_t StartDelayUs(const std::string& node) const;
  void Send(size_t idx);
  void Write(size_t idx);
  void Read(size_t idx);
  void Drop(size_t idx);
  void Apply(Agent& a, const proto::SyncResponse& r);

  const FleetOptions o_;
  const int port_;
  Shared& shared_;
  const bool trace_;  // MUSTER_FLEET_TRACE: print each slow probe
  int ep_ = -1;
  std::vector<Agent> agents_;
  std::atomic<bool> restart_{false};
  std::deque<size_t> closing_;     // agents whose connections are still to close (RestartSome)
  std::deque<size_t> restarting_;  // agents still to come back, by time
  int64_t restart_began_us_ = 0;
  std::mutex silence_mu_;
  std::vector<std::string> silence_;  // guarded by silence_mu_
};

// A `muster server` started for a run: its configuration written to
// `dir`/server.yaml, listening on a port of the kernel's choice (port 0,
// --port-file), its output in `dir`/server.log.
struct ServerProcess {
  pid_t pid = -1;
  int port = 0;  // 0: it did not start
};
ServerProcess StartServer(const std::string& muster, const std::string& dir, const std::string& config);
void StopServer(ServerProcess& server);

// Polls `done` every 5 ms for up to `seconds`.
bool WaitFor(const std::function<bool()>& done, int seconds);

}  // namespace muster::fleet
