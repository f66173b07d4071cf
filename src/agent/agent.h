// Agent: `muster agent`, the process on every node that runs what the
// server assigns there.
//
// At start it takes stock of the node (GPUs from NVML, fake GPUs, or none;
// CPUs and memory; labels), sets up the executor (recovering tasks an
// earlier agent left running) and a small HTTP server for logs. Then three
// threads work:
//   - the main thread owns the executor: it reaps ended tasks, applies the
//     newest desired state (start what is assigned and not known, stop what
//     runs and is not assigned, enforce time limits) and sends a sync at
//     once whenever its observed tasks change;
//   - the watcher keeps one sync waiting at the server (long poll), so a
//     bind reaches the node within milliseconds;
//   - with NVML, a health thread waits for XID/ECC events and marks GPUs
//     unhealthy; events travel in the next sync until the server has
//     stored them.
// Desired states are applied only in version order, so an answer that
// arrives late never undoes a newer one. If no sync succeeds for the lease
// the server gave, the agent stops its tasks itself ("fenced"): a cut-off
// node never keeps running a job the server may restart elsewhere.
//
// Tasks run as the submitting user when the agent runs as root
// (run_as_submitter), with CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES
// set to the UUIDs of the assigned GPUs.
//
// Thread-safety: Run() and Stop() from any threads; one Agent per process.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/container_support.h"
#include "agent/executor.h"
#include "agent/image_puller.h"
#include "agent/launcher.h"
#include "agent/log_server.h"
#include "agent/reclaim_state.h"
#include "agent/reclaim_watcher.h"
#include "agent/utilization_meter.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "gpu/gpu.h"
#include "gpu/nvml.h"
#include "proto/agent_protocol.h"

namespace muster::http {
class FailoverClient;
class Server;
}  // namespace muster::http

namespace muster::agent {

struct AgentOptions {
  std::string server = "http://127.0.0.1:8470";  // or several, comma-separated: whichever leads
  // CAs that vouch for an https:// server (PEM); "": the system's. Tasks
  // get it as MUSTER_CA. With an https:// server the log server speaks TLS
  // too, with a certificate the agent makes at start; its pin goes to the
  // server in each sync, so the server knows whom it reads logs from.
  std::string ca_file;
  std::string node;      // default: the host name
  std::string address;   // how other nodes reach this one (MASTER_ADDR); default: 127.0.0.1 for a loopback server, else
                         // the host name
  std::string log_host;  // where the log server listens; default: address
  int log_port = 0;      // 0: any free port
  // Where /metrics is served (agent/agent_metrics.h), "HOST:PORT" (port 0:
  // any free one); "": not served.
  std::string metrics_listen;
  std::string fake_gpus;     // "8xH100": fake GPUs instead of NVML
  std::string nvml_library;  // default "libnvidia-ml.so.1"
  std::string gpu_type;      // override the type derived from the GPU name
  int64_t cpu_milli = 0;     // 0: the machine's
  int64_t memory_bytes = 0;  // 0: the machine's
  // Processes per task; 0: an eighth of the kernel's pid_max, at most
  // 16,384. All tasks together get at most 90% of pid_max.
  int64_t pids_limit = 0;
  std::map<std::string, std::string> labels;  // leaf, spine, zone, rack
  std::string state_dir;                      // default /var/lib/muster/agent-<node>
  // The node's credential (muster token create --node NODE), in a file only
  // its owner may read; default <state_dir>/token.
  std::string token_file;
  bool use_cgroups = true;
  // Where task groups go (agent/cgroup.h ResolveCgroupRoot): "muster", a
  // path, or "self" (below the agent's own, delegated by systemd).
  std::string cgroup_root = "muster";
  bool run_as_submitter = true;  // effective only when running as root
  // Each task gets a /tmp of its own (<state_dir>/tmp/<task>, removed when
  // it ends), when running as root.
  bool private_tmp = true;
  bool stop_tasks_on_exit = false;  // `muster dev`: a stopped agent leaves nothing running
  // Container jobs (agent/container_support.h): the Podman binary ("":
  // "podman" on PATH; "none": no containers), the containers.conf it reads
  // (CONTAINERS_CONF; "": its own), and the OCI runtime it uses ("": its default).
  std::string podman;
  std::string containers_conf;
  std::string container_runtime;
  Duration sync_wait = Duration::Seconds(10);
  // The node is spot capacity (pool "spot"): only jobs that allow it run
  // here, and the cloud may reclaim it at short notice.
  bool spot = false;
  // Node features jobs may require (Slurm's node features, sbatch -C):
  // names of letters, digits and ._-.
  std::vector<std::string> features;
  // A cloud metadata endpoint that gives notice of a reclaim
  // (agent/reclaim_watcher.h), read every reclaim_poll; "": none. A notice
  // reaches the server at once; stops are cut to its deadline. Should no
  // answer of the server acknowledge it within a quarter of the notice
  // (at most 10 s), the agent stops every task itself, as the server
  // would: the checkpoint signal now, the grace cut to the deadline.
  std::string reclaim_notice_url;
  Duration reclaim_poll = Duration::Seconds(5);
  // Before its first sync the agent waits a part of this fixed by its node
  // name (agent/start_delay.h): agents started together reach the server
  // spread over it, not in one burst. 0: sync at once (`muster dev`, tests).
  Duration start_jitter = Duration::Seconds(1);
  // Logs of tasks that ended are deleted this long after their last write
  // (checked every 10 minutes); zero keeps them.
  Duration log_retention = Duration::Hours(int64_t{7} * 24);
  // The main loop's longest sleep: a task's exit, an answer from the
  // server or a health event wakes it at once.
  Duration poll_interval = Duration::Millis(100);
};

class Agent {
 public:
  Agent(AgentOptions options, const Clock& clock);
  ~Agent();

  // Takes stock of the node and starts the log server. Returns a summary
  // for the operator (GPUs, cgroups, state directory).
  // Runs before any of the agent's threads start: the fields it sets that
  // a lock guards later need none yet (no thread-safety analysis).
  StatusOr<std::string> Init() NO_THREAD_SAFETY_ANALYSIS;
  // Runs until Stop().
  void Run();
  void Stop();

  int log_port() const { return log_server_ ? log_server_->port() : 0; }
  int metrics_port() const { return metrics_port_; }

 private:
  proto::SyncRequest BuildRequest(int64_t wait_ms);
  // Sends a sync; on success applies its answer.
  bool Sync(int64_t wait_ms);
  void Apply(const proto::SyncResponse& r);
  void StartTask(const proto::TaskAssignment& t);
  // Rebuilds the report of observed tasks; true when the server should hear
  // at once: a task ended (or failed to start), or a task's shim verified
  // its checkpoints (a damaged one must be marked before others use it).
  bool RefreshReports();
  void WatchLoop();
  void HealthLoop();
  void SampleLoop();
  void ReclaimLoop();
  std::vector<gpu::GpuSample> nvml_samples_ GUARDED_BY(mu_);
  void FenceIfLeaseLost();
  // How task `key` is stopped: its assignment's stop signal and grace
  // (SIGTERM and `fallback_grace_ms` for a task adopted without one).
  struct StopOrder {
    int signal = 0;
    int64_t grace_ms = 0;
  };
  StopOrder StopOrderOf(const std::string& key, int64_t fallback_grace_ms) const;
  // Main thread: a reclaim notice the server has not acknowledged in time
  // (AgentOptions::reclaim_notice_url): every task stopped, once.
  void StopIfReclaimedAlone();

  AgentOptions options_;
  const Clock& clock_;
  std::unique_ptr<Launcher> launcher_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<gpu::Nvml> nvml_;
  gpu::GpuInventory inventory_ GUARDED_BY(mu_);  // once threads run
  std::string cgroups_;
  ContainerSupport containers_;
  std::string container_prefix_;           // the names of this agent's containers start so
  std::unique_ptr<LogServer> log_server_;  // serves tasks' logs, with the server's grants
  std::thread watch_thread_, health_thread_, sample_thread_, reclaim_thread_;
  std::unique_ptr<ReclaimWatcher> reclaim_watcher_;
  ReclaimState reclaim_;  // the cloud's notice and the server's deadline (thread-safe)
  std::unique_ptr<http::Server> metrics_server_;
  int metrics_port_ = 0;
  std::thread metrics_thread_;
  // What /metrics says now (any thread).
  std::string MetricsText();
  // Each GPU's sample: NVML's latest (SampleLoop takes one every
  // kUtilizationSampleMs), or fake GPUs' now (`busy`: by GPU index, which
  // run a task); empty where neither. Any thread.
  std::vector<gpu::GpuSample> SampleGpus(const std::vector<gpu::GpuDevice>& gpus, const std::vector<bool>& busy);
  // A round of samples into utilization_ for the running tasks, at most
  // every kUtilizationSampleMs (main loop).
  void SampleUtilization(int64_t now_ms);
  static constexpr int64_t kUtilizationSampleMs = 1000;
  UtilizationMeter utilization_;     // main thread
  int64_t last_utilization_ms_ = 0;  // main thread

  // Waits on cv_ until Stop() or `d` has passed (`lock` holds mu_).
  void WaitUnlessStopped(MutexLock& lock, Duration d) REQUIRES(mu_);
  // Wakes the main loop, which sleeps in poll() on it and on its tasks'
  // pidfds; every change the main loop waits for signals cv_ and this.
  void Wake();
  int wake_fd_ = -1;  // an eventfd

  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::optional<proto::SyncResponse> pending_ GUARDED_BY(mu_);        // from the watcher
  std::vector<proto::TaskReport> reports_ GUARDED_BY(mu_);            // the observed tasks
  std::vector<proto::ImagePullReport> pull_reports_ GUARDED_BY(mu_);  // the pre-pulls' states
  std::unique_ptr<ImagePuller> puller_;                               // pre-pulls, where the node runs containers
  std::vector<std::string> unpullable_;                               // pre-pulls asked of a node without containers
  int64_t report_seq_ GUARDED_BY(mu_) = 0;
  std::vector<std::pair<int64_t, proto::HealthEventReport>> events_ GUARDED_BY(mu_);  // (seq, event) not yet stored
  int64_t event_seq_ GUARDED_BY(mu_) = 0;
  int64_t version_ GUARDED_BY(mu_) = 0;          // applied desired-state version
  int64_t seen_version_ GUARDED_BY(mu_) = 0;     // newest version received
  int64_t reports_version_ GUARDED_BY(mu_) = 0;  // the applied version when reports_ was built
  bool events_dirty_ GUARDED_BY(mu_) = false;    // new health events to send
  std::map<int32_t, std::pair<int64_t, int32_t>> gpu_users_ GUARDED_BY(mu_);  // GPU index -> (job, replica) running
  int64_t tasks_running_ GUARDED_BY(mu_) = 0;
  int64_t syncs_failed_ GUARDED_BY(mu_) = 0;
  int64_t epoch_ GUARDED_BY(mu_) = 0;
  int64_t lease_ms_ GUARDED_BY(mu_) = 60'000;
  // guarded by mu_: when the last successful sync was sent. Its lease is
  // counted from then, not from the answer (which a long poll delays): the
  // server heard the request no earlier, so a task fences itself no later
  // than the server's last word + lease.
  int64_t last_success_ms_ GUARDED_BY(mu_) = 0;
  http::FailoverClient* watch_client_ GUARDED_BY(mu_) = nullptr;  // to interrupt its wait
  int lock_fd_ = -1;                                              // <state>/agent.lock, flock'ed while this agent lives
  std::string agent_id_;                                          // <state>/agent-id
  std::string authorization_;                                     // "Bearer <the node's token>"
  std::string muster_binary_;                                     // this binary, for tasks' MUSTER_BIN
  std::string slurm_bin_;              // <state>.slurm-bin: Slurm's commands (links to it), first on tasks' PATH
  std::string grant_key_;              // the token's digest: the server signs log grants with it
  int lease_fd_ GUARDED_BY(mu_) = -1;  // <state>/lease, read by task shims
  bool lease_write_failed_ GUARDED_BY(mu_) = false;  // the last renewal of lease_fd_ failed
  bool fenced_ = false;                              // main thread
  std::thread::id main_thread_;
  // Several server addresses (high availability): long polls wait at most
  // kHaSyncWaitMs and are given up 2 s after that.
  static constexpr int64_t kHaSyncWaitMs = 4'000;
  const bool several_servers_;

  // Main thread only.
  std::map<std::string, proto::TaskAssignment> assigned_;   // by task key, while known
  std::map<std::string, proto::TaskReport> failed_starts_;  // tasks that could not start, until recorded
  // Tasks sent their limit signal (TaskAssignment::limit_signal), and per
  // task the last user's signal delivered (SignalOrder::seq). In memory: an
  // agent restarted past a task's limit signal sends it again, and one
  // restarted within a minute of a user's signal delivers that again.
  std::set<std::string> limit_signalled_;
  std::map<std::string, int64_t> signal_seq_;
  std::string sent_signature_ GUARDED_BY(mu_);
  std::string urgent_signature_;  // what RefreshReports last found urgent
};

// The node's CPUs (milli) and memory (bytes) as the OS reports them.
int64_t MachineCpuMilli();
int64_t MachineMemoryBytes();

}  // namespace muster::agent
