// LoopHarness: the server's control loop run in process, for tests of its
// logic: no thread, no HTTP, no sleeping.
//
// The loop runs in LoopExecutor's manual mode (ControlLoop::RunManually)
// on a simulated clock (common/clock.h SimClock), over a real SQLite store
// in a temporary directory (on /dev/shm where there is one, so its fsyncs
// cost nothing). A test calls the loop as the API would, settles it
// (everything posted, the cycle when due, the store's commits and their
// answers), and reads the answers, the loop's views and the durable rows.
//
// PlayedAgent speaks the agent protocol to the loop as a real agent does,
// through the protocol's own encoding: it reports its tasks, starts what
// the desired state lists, reports a task no longer listed as stopped
// (signal 15) unless told to hold it, ends a task past its time limit as
// timed out, and ends tasks when the test says.
// Nothing is forked.
//
// Thread-safety: one test thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "proto/agent_protocol.h"
#include "server/control_loop.h"
#include "server/identity.h"
#include "server/options.h"
#include "server/server_metrics.h"
#include "store/store.h"

namespace muster::server::testing {

class LoopHarness {
 public:
  // `config`: the server's YAML configuration (server/options.h), as its
  // file would say it (admins: [root] by default). Scheduling cycles run
  // as soon as something changed (no cycle delay), and every
  // cycleInterval. The clock starts at 2026-01-01T00:00:00Z.
  explicit LoopHarness(const std::string& config = "");
  ~LoopHarness();
  LoopHarness(const LoopHarness&) = delete;
  LoopHarness& operator=(const LoopHarness&) = delete;

  // Whether the loop started (a bad configuration or store: the status).
  const Status& started() const { return started_; }
  ControlLoop& loop() { return *loop_; }
  SimClock& clock() { return clock_; }
  store::Store& store() { return *store_; }
  // The metrics the loop counts into (cycles, commits, GPU time by queue).
  ServerMetrics& metrics() { return metrics_; }
  const ServerOptions& options() const { return options_; }

  // Runs the loop until nothing is left to do.
  void Settle() { loop_->Settle(); }
  // Moves the clock `d` forward in steps of at most `step`; after each, the
  // loop settles (its timers fire in order) and every played agent that is
  // not silenced syncs, as real agents keep doing.
  void Advance(Duration d, Duration step = Duration::Seconds(1));
  // A server restart: the loop stops (its writes durable) and a new one
  // starts on the same store with `config` (empty: the same configuration).
  Status Restart(const std::string& config = "");

  // Calls `fn` with a `done`, settles, and returns what `done` was given;
  // a call never answered fails the test and returns the error.
  template <typename T>
  StatusOr<T> Await(const std::function<void(ControlLoop::Done<StatusOr<T>>)>& fn);

  static Identity User(const std::string& name);
  // An admin of the harness's configuration ("root").
  static Identity Admin() { return User("root"); }

  // Submits a job (a YAML spec) as `user`; its row, or the refusal.
  StatusOr<store::JobRow> Submit(const std::string& spec, const std::string& user = "alice",
                                 const std::string& idempotency_key = "");
  StatusOr<store::JobRow> Act(int64_t id, ControlLoop::Action action, const Identity& who = User("alice"));
  StatusOr<ControlLoop::Explanation> Explain(int64_t id);
  StatusOr<std::vector<ControlLoop::NodeView>> Nodes();
  StatusOr<ControlLoop::NodeView> Node(const std::string& name);
  StatusOr<std::vector<ControlLoop::QueueView>> Queues();

  // What is durable: the job's row in the store (a missing job fails the test).
  store::JobRow Stored(int64_t id);
  // Its state as stored ("PENDING", "RUNNING", ...).
  std::string State(int64_t id) { return Stored(id).state; }
  // Its pending reason as stored ("Resources", "Priority", ...).
  std::string Reason(int64_t id) { return Stored(id).reason; }
  // The job's events, as stored: "Type" or, with `with_reason`, "Type/Reason".
  std::vector<std::string> Events(int64_t id, bool with_reason = false);
  // Whether the job has an event `type` (or "Type/Reason"), and how many.
  bool HasEvent(int64_t id, const std::string& type);
  int CountEvents(int64_t id, const std::string& type);
  // The message of the job's last event `type` ("" when it has none).
  std::string EventMessage(int64_t id, const std::string& type);

 private:
  friend class PlayedAgent;
  Status StartLoop();

  SimClock clock_;
  std::vector<class PlayedAgent*> agents_;  // those alive, in the order made
  std::string dir_;
  std::string config_;
  ServerOptions options_;
  std::unique_ptr<store::Store> store_;
  ServerMetrics metrics_;
  std::unique_ptr<ControlLoop> loop_;
  Status started_;
};

class PlayedAgent {
 public:
  struct Options {
    int gpus = 8;
    std::string gpu_type = "H100";
    int64_t cpu_milli = 64'000;
    int64_t memory_bytes = int64_t{512} << 30;
    std::map<std::string, std::string> labels;  // leaf, spine, zone
    std::vector<std::string> features;
  };
  PlayedAgent(LoopHarness& h, std::string node, Options o);
  ~PlayedAgent();
  PlayedAgent(const PlayedAgent&) = delete;
  PlayedAgent& operator=(const PlayedAgent&) = delete;
  PlayedAgent(LoopHarness& h, std::string node, int gpus = 8) : PlayedAgent(h, std::move(node), WithGpus(gpus)) {}
  static Options WithGpus(int gpus) {
    Options o;
    o.gpus = gpus;
    return o;
  }

  // One sync, settled: reports, then applies the answer (new tasks run,
  // tasks no longer listed stop). The answer, or the refusal.
  StatusOr<proto::SyncResponse> Sync();
  // The last answer the loop gave.
  const proto::SyncResponse& last() const { return last_; }

  // The tasks running here.
  std::vector<proto::TaskRef> Running() const;
  bool Runs(int64_t job) const;
  // The assignment of job `job`'s task here (the first replica, or `replica`).
  const proto::TaskAssignment* Assignment(int64_t job, int32_t replica = -1) const;
  // Job `job`'s running tasks here end with `exit_code` (reported at the next Sync).
  void Exit(int64_t job, int32_t exit_code);
  // ... end killed by the kernel for memory.
  void OutOfMemory(int64_t job);
  // Tasks no longer listed are not stopped yet (a checkpoint in its grace),
  // until Release: then they end as stopped.
  void HoldStops(bool hold) { hold_stops_ = hold; }
  // A health event (an XID) to report at the next Sync, for GPU `index`.
  void ReportXid(int32_t index, int64_t xid, bool fatal = true);
  // A reclaim notice to report at the next Sync: the node goes in `in`.
  void ReportReclaim(Duration in) { reclaim_in_ = in; }
  // A silenced agent does not sync while the harness advances the clock
  // (its node went dark); its tasks run on as it last knew them.
  void Silence(bool silent) { silent_ = silent; }
  bool silent() const { return silent_; }
  const std::string& node() const { return node_; }

 private:
  struct Task {
    proto::TaskAssignment assignment;
    proto::TaskReport report;
  };
  void End(Task& t, int32_t exit_code, int32_t signal, bool oom, const std::string& why);
  void Apply(const proto::SyncResponse& r);

  LoopHarness& h_;
  const std::string node_;
  const Options o_;
  std::map<std::string, Task> tasks_;  // by proto::TaskKey
  proto::SyncResponse last_;
  int64_t version_ = 0, epoch_ = 0, report_seq_ = 1;
  bool hold_stops_ = false;
  bool silent_ = false;
  std::vector<proto::HealthEventReport> health_;
  Duration reclaim_in_ = Duration::Zero();
};

template <typename T>
StatusOr<T> LoopHarness::Await(const std::function<void(ControlLoop::Done<StatusOr<T>>)>& fn) {
  // Shared: a call answered only later (never, in a sound test) still has
  // somewhere to put its answer.
  auto answer = std::make_shared<std::optional<StatusOr<T>>>();
  fn([answer](StatusOr<T> v) { answer->emplace(std::move(v)); });
  Settle();
  if (!*answer) return Status(StatusCode::kInternal, "the loop never answered");
  return std::move(**answer);
}

}  // namespace muster::server::testing
