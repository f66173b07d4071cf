#include "agent/agent.h"

#include "auth/client_credential.h"
#include "auth/grants.h"
#include "auth/token.h"

#include "agent/cgroup.h"
#include "agent/container_command.h"
#include "agent/log_server.h"
#include "agent/owned_directory.h"
#include "agent/start_delay.h"
#include "agent/task_beacon.h"
#include "common/log.h"
#include "common/message_text.h"
#include "common/signal_name.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "gpu/fake_gpus.h"
#include "http/failover_client.h"
#include "http/server.h"

namespace muster::agent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kVersion = "0.1.0";

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

json AssignmentJson(const proto::TaskAssignment& t) {
  return {{"job", t.job},
          {"attempt", t.attempt},
          {"replica", t.replica},
          {"epoch", t.epoch},
          {"timeLimitMs", t.time_limit_ms},
          {"stopSignal", t.stop_signal},
          {"graceMs", t.grace_ms},
          {"limitSignal", t.limit_signal},
          {"limitSignalBeforeMs", t.limit_signal_before_ms},
          {"limitSignalTo", t.limit_signal_to}};
}

}  // namespace

int64_t MachineCpuMilli() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return (n > 0 ? n : 1) * 1000;
}

int64_t MachineMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

// The report sequence starts at the agent's start time in microseconds: a
// restarted agent's reports then count as newer than every report of the
// one before it (which made far fewer than one change a microsecond), so
// the server, which keeps the newest sequence it processed for the node,
// never takes the new agent's reports for stale ones.
Agent::Agent(AgentOptions options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      report_seq_(clock.Now().millis() * 1000),
      several_servers_(http::SplitServers(options_.server).size() > 1) {}

Agent::~Agent() {
  Stop();
  if (lease_fd_ >= 0) ::close(lease_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (log_server_) log_server_->Stop();
  if (metrics_server_) metrics_server_->Stop();
  for (std::thread* t : {&watch_thread_, &health_thread_, &sample_thread_, &reclaim_thread_, &metrics_thread_}) {
    if (t->joinable()) t->join();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Agent::Wake() {
  cv_.NotifyAll();
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    // Fails only when the counter is full: then it is readable already.
    [[maybe_unused]] const ssize_t wrote = ::write(wake_fd_, &one, sizeof one);
  }
}

StatusOr<std::string> Agent::Init() {
  // First, while this process has one thread (NVML may start its own).
  ASSIGN_OR_RETURN(launcher_, Launcher::Start());
  // A write to a dead launcher or peer is an error to handle, not the
  // agent's death (it died silently, exit 141, when its launcher was gone).
  ::signal(SIGPIPE, SIG_IGN);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (options_.node.empty()) options_.node = HostName();
  if (options_.address.empty()) {
    const bool loopback = options_.server.find("://127.") != std::string::npos ||
                          options_.server.find("://localhost") != std::string::npos;
    options_.address = loopback ? "127.0.0.1" : HostName();
  }
  if (options_.log_host.empty()) options_.log_host = options_.address;
  if (options_.state_dir.empty()) options_.state_dir = "/var/lib/muster/agent-" + options_.node;
  if (options_.cpu_milli == 0) options_.cpu_milli = MachineCpuMilli();
  if (options_.memory_bytes == 0) options_.memory_bytes = MachineMemoryBytes();

  std::string gpus_line;
  if (!options_.fake_gpus.empty()) {
    ASSIGN_OR_RETURN(inventory_, gpu::FakeGpus(options_.fake_gpus, options_.node));
    gpus_line = inventory_.note;
  } else {
    auto nvml = gpu::Nvml::Load(options_.nvml_library);
    if (nvml.ok()) {
      nvml_ = std::move(*nvml);
      ASSIGN_OR_RETURN(inventory_, nvml_->Discover());
      gpus_line = std::to_string(inventory_.gpus.size()) + " GPUs from " + inventory_.note;
    } else {
      inventory_.source = "none";
      inventory_.note = nvml.status().message();
      gpus_line = "no GPUs: " + inventory_.note + " (use --fake-gpus 8xH100 for a development node)";
    }
  }
  if (!options_.gpu_type.empty()) {
    for (char c : options_.gpu_type) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
        return InvalidArgument(
            "--gpu-type: may use letters, digits, '.', '_' and '-', got \"" + options_.gpu_type + "\"", "gpu-type");
      }
    }
  }

  ExecutorOptions eo;
  eo.state_dir = options_.state_dir;
  {
    std::error_code dir_ec;
    // Task journals (with the jobs' environments), logs and the node's token
    // live here: the agent's alone, made by it or checked (owned_directory.h).
    RETURN_IF_ERROR(MakeOwnedDirectory(options_.state_dir, 0700, ::geteuid(), "the state directory"));
    // Slurm's commands (links to this binary, first on every task's PATH:
    // cli/srun_command.h) beside it, where a job's user reaches them; made
    // or checked as it is: a user's own would come first on everyone's PATH.
    slurm_bin_ = fs::path(options_.state_dir).lexically_normal().string();
    while (slurm_bin_.size() > 1 && slurm_bin_.back() == '/') slurm_bin_.pop_back();
    slurm_bin_ += ".slurm-bin";
    RETURN_IF_ERROR(MakeOwnedDirectory(slurm_bin_, 0755, ::geteuid(), "the Slurm commands' directory"));
    // One agent a state directory: two would adopt, end and report the same
    // tasks. The lock goes with the process (kill -9 included).
    const std::string lock = options_.state_dir + "/agent.lock";
    lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0) return FailedPrecondition("cannot open " + lock + ": " + std::strerror(errno));
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      char pid[32] = {};
      const ssize_t got = ::pread(lock_fd_, pid, sizeof pid - 1, 0);
      return FailedPrecondition("the state directory " + options_.state_dir + " is in use by another agent (pid " +
                                (got > 0 ? std::to_string(std::atoll(pid)) : std::string("unknown")) +
                                "); give each agent its own --state-dir");
    }
    const std::string me = std::to_string(::getpid()) + "\n";
    if (::ftruncate(lock_fd_, 0) != 0 ||
        ::pwrite(lock_fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
      // Only the message a second agent gives names the pid: go on.
      log::Warn("cannot write this agent's pid to {}: {}", lock, std::strerror(errno));
    }
    // This agent's identity, kept across its restarts: where it runs and
    // when its state directory was first used.
    const std::string id_file = options_.state_dir + "/agent-id";
    std::getline(std::ifstream(id_file), agent_id_);
    if (agent_id_.empty()) {
      std::error_code real_ec;
      const std::string where = fs::canonical(options_.state_dir, real_ec).string();
      agent_id_ =
          HostName() + ":" + (real_ec ? options_.state_dir : where) + ":" + std::to_string(clock_.Now().millis());
      // Whole or not at all: written aside, then renamed into place.
      const std::string tmp = id_file + ".tmp";
      std::ofstream(tmp, std::ios::trunc) << agent_id_ << "\n";
      ::chmod(tmp.c_str(), 0600);
      if (::rename(tmp.c_str(), id_file.c_str()) != 0) {
        return FailedPrecondition("cannot write " + id_file + ": " + std::strerror(errno));
      }
    }
    // Tasks' private /tmp directories live here; only root passes.
    fs::create_directories(options_.state_dir + "/tmp", dir_ec);
    ::chmod((options_.state_dir + "/tmp").c_str(), 0700);
    lease_fd_ = ::open((options_.state_dir + "/lease").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lease_fd_ < 0)
      return FailedPrecondition("cannot open " + options_.state_dir + "/lease: " + std::strerror(errno));
  }
  {
    // Without its node's credential the server hears nothing from it.
    if (options_.token_file.empty()) options_.token_file = options_.state_dir + "/token";
    auto text = auth::ReadTokenFile(options_.token_file, options_.server);
    if (!text.ok()) {
      return FailedPrecondition("no credential for node " + options_.node + ": " + text.status().message() +
                                "; an admin creates one with `muster token create --node " + options_.node +
                                "` (into a file of mode 600, given with --token-file)");
    }
    auto token = auth::ParseToken(*text);
    if (!token.ok()) return FailedPrecondition(options_.token_file + ": " + token.status().message());
    authorization_ = "Bearer " + auth::FormatToken(*token);
    grant_key_ = auth::Sha256Hex(token->secret);
  }
  std::error_code ec;
  eo.shim_binary = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) return FailedPrecondition("cannot find the muster binary (/proc/self/exe): " + ec.message());
  muster_binary_ = eo.shim_binary;
  // The Slurm commands' links, in slurm_bin_ (made above).
  for (const char* command : {"srun", "sbatch", "scontrol", "squeue", "scancel", "sacct", "sinfo"}) {
    const fs::path link = fs::path(slurm_bin_) / command;
    std::error_code ignored;
    if (fs::read_symlink(link, ignored) == fs::path(muster_binary_)) continue;
    fs::remove(link, ignored);
    fs::create_symlink(muster_binary_, link, ec);
    if (ec) return FailedPrecondition("cannot link " + link.string() + " to the muster binary: " + ec.message());
  }
  eo.use_cgroups = options_.use_cgroups;
  // One parent per state directory: two agents on one machine never share
  // task groups, even with one node name (two `muster dev` clusters, a twin
  // agent), where the task keys, and so the groups, would be the same.
  std::string cgroup_root = "muster";
  if (options_.use_cgroups) {
    auto resolved = ResolveCgroupRoot(options_.cgroup_root);
    if (!resolved.ok()) return resolved.status();
    cgroup_root = *resolved;
  }
  eo.cgroup_parent = cgroup_root + "/" + options_.node + "." + TaskBeaconScope(options_.state_dir).substr(0, 8);
  eo.launcher = launcher_.get();
  containers_ = DetectContainers(options_.podman, options_.containers_conf, options_.container_runtime, inventory_);
  if (containers_.available) {
    eo.podman = {containers_.podman};
    if (!options_.container_runtime.empty())
      eo.podman.insert(eo.podman.end(), {"--runtime", options_.container_runtime});
    if (options_.use_cgroups)
      eo.podman.insert(eo.podman.end(), {"--cgroup-manager", "cgroupfs"});  // as tasks' containers
    container_prefix_ = "muster-" + TaskBeaconScope(options_.state_dir).substr(0, 8) + "-";
    eo.container_prefix = container_prefix_;
    // Podman reads CONTAINERS_CONF; the executor's own calls inherit it.
    if (!options_.containers_conf.empty()) ::setenv("CONTAINERS_CONF", options_.containers_conf.c_str(), 1);
    puller_ = std::make_unique<ImagePuller>(eo.podman, options_.state_dir + "/pulls", clock_);
  }
  // Tasks leave the node a tenth of its process ids, and no task takes
  // more than an eighth (at most 16,384).
  int64_t pid_max = 32768;
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  eo.all_tasks_pids = pid_max * 9 / 10;
  if (options_.pids_limit == 0) options_.pids_limit = std::min<int64_t>(16384, pid_max / 8);
  executor_ = std::make_unique<Executor>(eo, clock_);
  ASSIGN_OR_RETURN(cgroups_, executor_->Init());
  for (const TaskStatus& t : executor_->Tasks()) {
    const json meta = json::parse(t.meta, nullptr, false);
    if (!meta.is_object()) continue;
    proto::TaskAssignment a;
    a.job = meta.value("job", int64_t{0});
    a.attempt = meta.value("attempt", 0);
    a.replica = meta.value("replica", 0);
    a.epoch = meta.value("epoch", int64_t{0});
    a.time_limit_ms = meta.value("timeLimitMs", int64_t{0});
    a.stop_signal = meta.value("stopSignal", SIGTERM);
    a.grace_ms = meta.value("graceMs", int64_t{30'000});
    a.limit_signal = meta.value("limitSignal", 0);
    a.limit_signal_before_ms = meta.value("limitSignalBeforeMs", int64_t{0});
    a.limit_signal_to = meta.value("limitSignalTo", std::string());
    assigned_[t.key] = a;
  }

  LogServer::Options log_options{options_.log_host, options_.log_port, ""};
  if (options_.server.find("https://") != std::string::npos) log_options.tls_name = options_.node;
  ASSIGN_OR_RETURN(log_server_, LogServer::Start(log_options, grant_key_, clock_,
                                                 [this](const std::string& key) { return executor_->LogPath(key); }));
  if (!options_.metrics_listen.empty()) {
    const std::string& listen = options_.metrics_listen;
    const size_t colon = listen.rfind(':');
    http::Server::Options m;
    m.host = colon == std::string::npos ? "" : listen.substr(0, colon);
    const char* port_end = listen.data() + listen.size();
    const bool numeric = colon != std::string::npos && colon + 1 < listen.size() &&
                         std::from_chars(listen.data() + colon + 1, port_end, m.port).ptr == port_end;
    if (m.host.empty() || !numeric || m.port < 0 || m.port > 65535) {
      return InvalidArgument(
          "must be HOST:PORT such as 127.0.0.1:9477, got " + QuoteForMessage(options_.metrics_listen),
          "--metrics-listen");
    }
    m.worker_threads = 1;
    metrics_server_ = std::make_unique<http::Server>(m);
    metrics_server_->Handle("GET", "/metrics", [this](const http::Request&, http::Response& res) {
      res.Set(200, MetricsText(), "text/plain; version=0.0.4; charset=utf-8");
    });
    if (Status bound = metrics_server_->Bind(); !bound.ok()) {
      return Status(StatusCode::kUnavailable, "--metrics-listen: " + bound.message());
    }
    metrics_port_ = metrics_server_->port();
    metrics_thread_ = std::thread([this] { metrics_server_->Serve(); });
  }

  std::ostringstream summary;
  summary << "node " << options_.node << ": " << gpus_line << "; " << options_.cpu_milli / 1000 << " CPUs, "
          << (options_.memory_bytes >> 30) << " GiB; " << cgroups_ << "; state in " << options_.state_dir
          << "; logs served on " << options_.log_host << ":" << log_server_->port()
          << (log_server_->tls_pin().empty() ? "" : " (TLS)");
  if (metrics_server_)
    summary << "; metrics on " << options_.metrics_listen.substr(0, options_.metrics_listen.rfind(':')) << ":"
            << metrics_port_;
  summary << "; containers: " << (containers_.available ? containers_.Describe() : "none");
  if (!containers_.note.empty()) summary << " (" << containers_.note << ")";
  if (!executor_->Tasks().empty()) summary << "; recovered " << executor_->Tasks().size() << " task(s)";
  return summary.str();
}

void Agent::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    if (watch_client_) watch_client_->Interrupt();  // ends the waiting sync now
  }
  Wake();
}

proto::SyncRequest Agent::BuildRequest(int64_t wait_ms) {
  proto::SyncRequest r;
  r.node = options_.node;
  r.agent_id = agent_id_;
  r.agent_version = kVersion;
  r.address = options_.address;
  if (log_server_) {
    r.log_port = log_server_->port();
    r.log_tls_pin = log_server_->tls_pin();
  }
  r.cpu_milli = options_.cpu_milli;
  r.memory_bytes = options_.memory_bytes;
  r.labels = options_.labels;
  r.cgroups = cgroups_;
  r.containers = containers_.Describe();
  r.containers_note = containers_.note;
  r.features = containers_.Features();
  r.features.insert(r.features.end(), options_.features.begin(), options_.features.end());
  if (options_.spot) r.features.emplace_back("spot");  // core::kSpotFeature, the pool the server places by
  r.wait_ms = wait_ms;
  MutexLock lock(mu_);
  if (const std::optional<ReclaimNotice> notice = reclaim_.cloud()) {
    r.reclaim_in_ms = std::max<int64_t>(1, (notice->deadline - clock_.Now()).millis());
    r.reclaim_source = notice->source;
  }
  r.gpu_type = options_.gpu_type.empty() ? inventory_.GpuType() : options_.gpu_type;
  r.gpu_source = inventory_.source;
  r.gpu_note = inventory_.note;
  for (const gpu::GpuDevice& g : inventory_.gpus) {
    r.gpus.push_back({g.index, g.uuid, g.name, g.memory_bytes, g.numa_node, g.nvlinks, g.healthy, g.health});
  }
  for (const auto& [seq, e] : events_) r.health_events.push_back(e);
  r.tasks = reports_;
  r.pulls = pull_reports_;
  r.report_seq = report_seq_;
  r.epoch = epoch_;
  r.version = std::max(version_, seen_version_);
  r.reports_version = reports_version_;
  return r;
}

bool Agent::Sync(int64_t wait_ms) {
  static thread_local std::unique_ptr<http::FailoverClient> client;
  if (!client) {
    http::Client::Options o;
    o.connect_timeout = std::chrono::milliseconds(2'000);  // the read timeout is set for each sync
    o.tls.ca_file = options_.ca_file;
    client = std::make_unique<http::FailoverClient>(options_.server, o);
    if (std::this_thread::get_id() != main_thread_) {
      MutexLock lock(mu_);
      if (stop_) return false;
      watch_client_ = client.get();
    }
  }
  int64_t last_event = 0;
  proto::SyncRequest req = BuildRequest(wait_ms);
  {
    MutexLock lock(mu_);
    last_event = events_.empty() ? 0 : events_.back().first;
  }
  // The server answers within the wait; 5 s more (2 s with several
  // servers: see WatchLoop) and the sync is given up (a partition then
  // costs no more than that before the next try, and the main loop keeps
  // its lease checks going). While a reclaim notice waits for the server's
  // acknowledgment, the main loop gives up after 1 s: it must see in time
  // that it is alone (StopIfReclaimedAlone).
  int64_t read_ms = wait_ms + (several_servers_ ? 2'000 : 5'000);
  if (std::this_thread::get_id() == main_thread_ && reclaim_.AwaitingServer()) {
    read_ms = std::min<int64_t>(read_ms, wait_ms + 1'000);
  }
  client->set_read_timeout(std::chrono::milliseconds(read_ms));
  const int64_t sent_ms = clock_.Now().millis();
  auto res =
      client->Post("/v1/agent/sync", proto::ToJson(req), "application/json", {{"Authorization", authorization_}});
  if (!res.ok() || res->status != 200) {
    if (!res.ok() && res.status().message() == "interrupted") {
      // Stopping, not failing.
    } else {
      MutexLock lock(mu_);
      ++syncs_failed_;
    }
    if (res.ok()) {
      log::Warn("the server refused a sync ({}): {}", res->status, res->body.substr(0, 300));
    } else if (static thread_local std::string last;
               res.status().message() != last && res.status().message() != "interrupted") {
      // Said once for each new reason (a server down, a certificate this
      // agent cannot verify), not at every retry.
      last = res.status().message();
      log::Warn("cannot sync with {}: {}", options_.server, last);
    }
    if (std::this_thread::get_id() != main_thread_) {
      MutexLock lock(mu_);
      watch_client_ = nullptr;
    }
    client.reset();
    return false;
  }
  auto parsed = proto::ParseSyncResponse(res->body);
  if (!parsed.ok()) {
    log::Warn("unreadable sync answer: {}", parsed.status().ToString());
    return false;
  }
  {
    MutexLock lock(mu_);
    last_success_ms_ = sent_ms;
    if (lease_fd_ >= 0 && parsed->lease_ms > 0) {
      // Renew the deadline the task shims fence themselves by.
      char text[32];
      const long long deadline_ms = last_success_ms_ + parsed->lease_ms;
      const int n = std::snprintf(text, sizeof text, "%020lld\n", deadline_ms);
      // A lease not renewed makes the shims stop their tasks at the old
      // deadline, as if the server were gone: said once a failing streak.
      const bool renewed = ::pwrite(lease_fd_, text, static_cast<size_t>(n), 0) == n;
      if (!renewed && !lease_write_failed_) log::Warn("cannot renew the task lease file: {}", std::strerror(errno));
      lease_write_failed_ = !renewed;
    }
    // The server stored every event this request carried.
    if (parsed->health_events_recorded == static_cast<int32_t>(req.health_events.size())) {
      events_.erase(
          std::remove_if(events_.begin(), events_.end(), [&](const auto& e) { return e.first <= last_event; }),
          events_.end());
    }
    // A new leader's versions count from its own start (see Apply).
    seen_version_ = parsed->epoch > epoch_ ? parsed->version : std::max(seen_version_, parsed->version);
    if (std::this_thread::get_id() != main_thread_) {
      // The watcher hands the answer to the main thread.
      pending_ = std::move(*parsed);
      Wake();
      return true;
    }
  }
  Apply(*parsed);
  return true;
}

void Agent::Apply(const proto::SyncResponse& r) {
  {
    MutexLock lock(mu_);
    if (r.epoch < epoch_) return;  // an older leader's answer
    if (r.epoch > epoch_) {
      // A new leader (or the server restarted): its desired-state versions
      // count from its own start, not from the last leader's.
      version_ = 0;
    }
    epoch_ = r.epoch;
    lease_ms_ = r.lease_ms;
  }
  if (puller_) {
    puller_->Want(r.pulls);
  } else {
    unpullable_ = r.pulls;  // reported failed: this node runs no containers
  }
  if (!r.recorded.empty()) {
    std::set<std::string> ended;
    for (const TaskStatus& t : executor_->Tasks()) {
      if (!t.running) ended.insert(t.key);
    }
    for (const proto::TaskRef& ref : r.recorded) {
      const std::string key = proto::TaskKey(ref.job, ref.attempt, ref.replica);
      failed_starts_.erase(key);
      if (ended.count(key)) {
        executor_->Forget(key);
        assigned_.erase(key);
        limit_signalled_.erase(key);
        signal_seq_.erase(key);
      }
    }
  }
  {
    MutexLock lock(mu_);
    if (r.version < version_) return;  // a late answer: a newer desired state was applied
    version_ = r.version;
  }
  fenced_ = false;
  reclaim_.NoteServer(r.reclaim_in_ms > 0 ? std::optional<Time>(clock_.Now() + Duration::Millis(r.reclaim_in_ms))
                                          : std::nullopt);
  std::map<std::string, const proto::TaskAssignment*> desired;
  for (const proto::TaskAssignment& t : r.tasks) {
    if (t.epoch < r.epoch) continue;  // launched by an older leader: never start it
    desired[proto::TaskKey(t.job, t.attempt, t.replica)] = &t;
  }
  bool stopping = false;
  {
    MutexLock lock(mu_);
    stopping = stop_;
  }
  // An agent on its way out starts nothing: its last sync may bring work
  // (a requeued job bound straight back here) that no agent would watch.
  // The server sees it never started; the next agent here starts it.
  for (const auto& [key, t] : desired) {
    if (!stopping && !executor_->Has(key) && !failed_starts_.count(key)) StartTask(*t);
  }
  // Stops the server cut short (an interactive job's preemption), by attempt.
  std::map<std::string, int64_t> cut_ms;
  for (const proto::GraceCut& c : r.grace_cuts) {
    const std::string prefix = "j" + std::to_string(c.job) + ".a" + std::to_string(c.attempt) + ".";
    cut_ms[prefix] = std::max<int64_t>(0, c.grace_ms);
  }
  for (const TaskStatus& t : executor_->Tasks()) {
    if (!t.running || desired.count(t.key)) continue;
    const StopOrder order = StopOrderOf(t.key, 30'000);
    int64_t grace = reclaim_.CutGrace(order.grace_ms, clock_.Now());
    if (auto cut = cut_ms.find(t.key.substr(0, t.key.rfind('.') + 1)); cut != cut_ms.end()) {
      grace = std::min(grace, cut->second);
    }
    executor_->Stop(t.key, order.signal, Duration::Millis(grace), "stop");
  }
  // Users' signals, each once.
  for (const proto::SignalOrder& s : r.signals) {
    const std::string key = proto::TaskKey(s.job, s.attempt, s.replica);
    if (!executor_->Has(key)) continue;
    int64_t& seen = signal_seq_[key];
    if (s.seq <= seen) continue;
    seen = s.seq;
    const int reached = executor_->Signal(key, s.signal, s.to);
    log::Info("task {}: {} to {} ({} processes)", key, SignalName(s.signal), s.to.empty() ? "all" : s.to, reached);
  }
}

void Agent::StartTask(const proto::TaskAssignment& t) {
  const std::string key = proto::TaskKey(t.job, t.attempt, t.replica);
  // `node_fault`: the node lacks what the server gave the task (a GPU):
  // the job is requeued elsewhere; otherwise retrying would not help.
  auto fail = [&](const std::string& why, bool node_fault = false) {
    proto::TaskReport r;
    r.job = t.job;
    r.attempt = t.attempt;
    r.replica = t.replica;
    r.running = false;
    r.exit_code = 127;
    r.stop_reason = node_fault ? "node" : "launch";
    r.message = why;
    r.end_ms = clock_.Now().millis();
    failed_starts_[key] = r;
    log::Warn("cannot start {}: {}", key, why);
  };
  TaskSpec spec;
  spec.key = key;
  spec.argv = t.argv;
  spec.script = t.script;  // the shim takes it only with argv {"/bin/sh", "-c", SCRIPT} (TaskSpecFromJson)
  if (spec.argv.empty()) return fail("the job has no command");
  const bool container = !t.image.empty();
  if (container && !containers_.available) {
    // Never run a container job's command on the host by mistake.
    return fail("node " + options_.node + " cannot run container jobs: " + containers_.note);
  }
  if (container && !t.gpus.empty() && !containers_.gpus) {
    return fail("node " + options_.node + " cannot give GPUs to containers: " + containers_.note);
  }
  std::string uuids;
  CgroupLimits limits;
  {
    MutexLock lock(mu_);
    for (int32_t idx : t.gpus) {
      if (idx < 0 || idx >= static_cast<int32_t>(inventory_.gpus.size())) {
        return fail("GPU " + std::to_string(idx) + " does not exist on node " + options_.node, /*node_fault=*/true);
      }
      uuids += (uuids.empty() ? "" : ",") + inventory_.gpus[idx].uuid;
    }
    // The device files of the node's other GPUs stay closed to it, whatever
    // its environment says (agent/device_filter.h). A container's own device
    // rules (the runtime's, from the devices Podman gives it) admit only
    // its GPUs; on cgroup v1 a task group that denies some devices would
    // refuse the runtime those rules.
    for (const gpu::GpuDevice& g : inventory_.gpus) {
      if (container) continue;
      if (g.minor >= 0 && std::find(t.gpus.begin(), t.gpus.end(), g.index) == t.gpus.end()) {
        limits.denied_devices.push_back({kNvidiaMajor, g.minor});
      }
    }
  }
  std::string home = "/", shell = "/bin/sh", user = t.user;
  const bool as_user = options_.run_as_submitter && ::geteuid() == 0;
  if (as_user) {
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwnam_r(t.user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) {
      return fail("user \"" + t.user + "\" does not exist on node " + options_.node);
    }
    spec.run_as = true;
    spec.uid = pw.pw_uid;
    spec.gid = pw.pw_gid;
    home = pw.pw_dir ? pw.pw_dir : "/";
    shell = pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh";
    int n = 64;
    std::vector<gid_t> groups(static_cast<size_t>(n));
    if (::getgrouplist(t.user.c_str(), pw.pw_gid, groups.data(), &n) < 0) {
      groups.resize(static_cast<size_t>(n));
      ::getgrouplist(t.user.c_str(), pw.pw_gid, groups.data(), &n);
    }
    groups.resize(static_cast<size_t>(std::max(n, 0)));
    spec.groups = groups;
  } else {
    if (const char* h = std::getenv("HOME")) home = h;
    if (const char* u = std::getenv("USER")) user = u;
  }
  if (container) {
    // The image's PATH, HOME, SHELL and locale stand; the job may set them.
    spec.env = {{"USER", user}, {"LOGNAME", user}};
  } else {
    spec.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                {"HOME", home},
                {"USER", user},
                {"LOGNAME", user},
                {"SHELL", shell},
                {"LANG", "C.UTF-8"}};
  }
  for (const auto& [k, v] : t.env) spec.env[k] = v;
  spec.env["CUDA_VISIBLE_DEVICES"] = uuids;
  spec.env["NVIDIA_VISIBLE_DEVICES"] = uuids.empty() ? "void" : uuids;
  // As Slurm: GPUs only where there are some; the job's user and group.
  if (!t.gpus.empty()) spec.env["SLURM_GPUS_ON_NODE"] = std::to_string(t.gpus.size());
  spec.env["SLURM_JOB_UID"] = std::to_string(as_user ? spec.uid : ::geteuid());
  spec.env["SLURM_JOB_GID"] = std::to_string(as_user ? spec.gid : ::getegid());
  spec.env["MUSTER_NODE"] = options_.node;
  spec.env["MUSTER_SERVER"] = options_.server;  // for progress reports and checkpoint commits
  if (!options_.ca_file.empty()) spec.env["MUSTER_CA"] = fs::absolute(options_.ca_file).string();
  // The node's muster, for commands inside the job (muster progress, an
  // interactive shell's relay); not inside a container, which has its own files.
  if (!container) {
    spec.env["MUSTER_BIN"] = muster_binary_;
    spec.env["PATH"] = slurm_bin_ + ":" + spec.env["PATH"];
  }
  spec.working_dir = !t.working_dir.empty() ? t.working_dir : home;
  spec.stdout_path = t.stdout_path;
  spec.stderr_path = t.stderr_path;
  spec.lease_file = options_.state_dir + "/lease";
  if (as_user && options_.private_tmp && !container) spec.private_tmp = options_.state_dir + "/tmp/" + key;
  if (container) {
    StatusOr<ContainerSpec> c = [&] {
      MutexLock lock(mu_);
      return TaskContainer(containers_, inventory_, t, spec.env,
                           {ContainerName(container_prefix_, key), options_.containers_conf, options_.container_runtime,
                            options_.ca_file, executor_->JournalPath(key) + ".auth"});
    }();
    if (!c.ok()) return fail(c.status().message());
    spec.container = std::move(*c);
  }
  spec.stop_signal = t.stop_signal;
  spec.grace_ms = std::min<int64_t>(t.grace_ms, 30'000);
  spec.job = t.job;
  spec.resume = t.resume;
  limits.memory_bytes = t.memory_bytes;
  limits.cpu_milli = t.cpu_milli;
  limits.pids = options_.pids_limit;
  if (Status s = executor_->Start(spec, limits, AssignmentJson(t).dump()); !s.ok()) {
    if (spec.container && !spec.container->auth_file.empty()) ::unlink(spec.container->auth_file.c_str());
    if (s.code() == StatusCode::kAlreadyExists) return;  // it ran here before: never twice
    return fail(s.message());
  }
  assigned_[key] = t;
}

bool Agent::RefreshReports() {
  std::vector<proto::TaskReport> reports;
  std::string signature, urgent;  // urgent: what the server must hear of at once
  for (const TaskStatus& t : executor_->Tasks()) {
    proto::TaskReport r;
    auto a = assigned_.find(t.key);
    if (a == assigned_.end()) continue;  // not ours to report (no assignment record)
    r.job = a->second.job;
    r.attempt = a->second.attempt;
    r.replica = a->second.replica;
    r.running = t.running;
    r.start_ms = t.start_ms;
    r.gpu_utilization = utilization_.Mean(t.key);
    r.image_state = t.image_state;
    r.pull_ms = t.pull_ms;
    if (t.result) {
      r.exit_code = t.result->exit_code;
      r.signal = t.result->signal;
      r.oom = t.result->oom;
      r.stop_reason = t.result->stop_reason;
      // It never started (its image could not be pulled): retrying will not help.
      if (t.result->launch_failed && r.stop_reason.empty()) r.stop_reason = "launch";
      r.message = t.result->message;
      r.end_ms = t.result->end_ms;
    }
    if (!t.resumed.empty()) {
      const json resumed = json::parse(t.resumed, nullptr, false);
      if (resumed.is_object()) {
        r.resume_known = true;
        r.resumed_seq = resumed.value("seq", int64_t{0});
        for (const json& k : resumed.value("skipped", json::array())) {
          r.skipped.push_back({k.value("seq", int64_t{0}), k.value("reason", "")});
        }
        signature += "R";
        urgent += t.key + "R";  // the server wants it at once: it marks damaged checkpoints
      }
    }
    // A pull that starts or ends: the job's events tell of it as it happens.
    if (!t.image_state.empty()) {
      signature += t.image_state;
      urgent += t.key + t.image_state;
    }
    signature += t.key + (t.running ? "+" : "-");
    if (!t.running) urgent += t.key + ",";
    reports.push_back(r);
  }
  for (const auto& [key, r] : failed_starts_) {
    signature += key + "!";
    urgent += key + "!";
    reports.push_back(r);
  }
  // Pre-pulls: each change of state is news.
  std::vector<proto::ImagePullReport> pulls = puller_ ? puller_->Reports() : std::vector<proto::ImagePullReport>{};
  for (const std::string& image : unpullable_) {
    pulls.push_back({image, "failed", "node " + options_.node + " runs no containers: " + containers_.note, 0});
  }
  for (const proto::ImagePullReport& p : pulls) {
    signature += "p" + p.image + "=" + p.state;
    urgent += "p" + p.image + "=" + p.state;
  }
  std::map<int32_t, std::pair<int64_t, int32_t>> users;  // what /metrics says uses each GPU
  for (const TaskStatus& t : executor_->Tasks()) {
    auto a = assigned_.find(t.key);
    if (a == assigned_.end() || !t.running) continue;
    for (int32_t g : a->second.gpus) users[g] = {a->second.job, a->second.replica};
  }
  MutexLock lock(mu_);
  gpu_users_ = std::move(users);
  tasks_running_ = 0;
  for (const proto::TaskReport& r : reports) tasks_running_ += r.running ? 1 : 0;
  reports_version_ = version_;  // every task of that desired state is in the report
  if (signature != sent_signature_) {
    sent_signature_ = signature;
    ++report_seq_;
  }
  reports_ = std::move(reports);
  pull_reports_ = std::move(pulls);
  const bool news = urgent != urgent_signature_;
  urgent_signature_ = urgent;
  return news;
}

Agent::StopOrder Agent::StopOrderOf(const std::string& key, int64_t fallback_grace_ms) const {
  auto a = assigned_.find(key);
  if (a == assigned_.end()) return {SIGTERM, fallback_grace_ms};
  return {a->second.stop_signal, a->second.grace_ms};
}

void Agent::FenceIfLeaseLost() {
  int64_t last = 0, lease = 0;
  {
    MutexLock lock(mu_);
    last = last_success_ms_;
    lease = lease_ms_;
  }
  if (fenced_ || last == 0 || clock_.Now().millis() - last < lease) return;
  bool any = false;
  for (const TaskStatus& t : executor_->Tasks()) {
    if (!t.running) continue;
    any = true;
    const StopOrder order = StopOrderOf(t.key, 30'000);
    executor_->Stop(t.key, order.signal, Duration::Millis(std::min<int64_t>(order.grace_ms, 30'000)), "fenced");
  }
  if (any) {
    log::Error("no sync with the server for {} ms (lease {} ms): stopping every task", clock_.Now().millis() - last,
               lease);
  }
  fenced_ = true;
}

void Agent::WatchLoop() {
  int failures = 0;  // in a row
  while (true) {
    {
      MutexLock lock(mu_);
      if (stop_) {
        // This thread's client dies with the thread: Stop() (the destructor
        // calls it again) must not reach it.
        watch_client_ = nullptr;
        return;
      }
    }
    int64_t wait_ms = options_.sync_wait.millis();
    {
      MutexLock lock(mu_);
      wait_ms = std::min(wait_ms, lease_ms_ / 3);  // renew the lease well before it runs out
    }
    // With several servers the leader may be paused (it holds the waiting
    // sync and answers nothing) while another takes over within its lease
    // (6 s): a shorter wait and margin find the new leader as soon.
    if (several_servers_) wait_ms = std::min<int64_t>(wait_ms, kHaSyncWaitMs);
    if (Sync(wait_ms)) {
      failures = 0;
    } else {
      const Duration delay = SyncRetryDelay(options_.node, ++failures);
      MutexLock lock(mu_);
      WaitUnlessStopped(lock, delay);
    }
  }
}

void Agent::WaitUnlessStopped(MutexLock& lock, Duration d) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(d.millis());
  while (!stop_ && cv_.WaitFor(lock, until - std::chrono::steady_clock::now())) {
  }
}

void Agent::Run() {
  main_thread_ = std::this_thread::get_id();
  if (const Duration delay = StartDelay(options_.node, options_.start_jitter); delay > Duration::Zero()) {
    MutexLock lock(mu_);
    WaitUnlessStopped(lock, delay);
  }
  RefreshReports();
  Sync(0);
  watch_thread_ = std::thread([this] { WatchLoop(); });
  if (nvml_) health_thread_ = std::thread([this] { HealthLoop(); });
  if (nvml_) sample_thread_ = std::thread([this] { SampleLoop(); });
  if (!options_.reclaim_notice_url.empty()) {
    reclaim_watcher_ = NewMetadataReclaimWatcher(options_.reclaim_notice_url, clock_);
    reclaim_thread_ = std::thread([this] { ReclaimLoop(); });
  }
  bool unsent = false;
  int64_t last_try_ms = 0;
  int64_t last_prune_ms = 0;
  while (true) {
    std::optional<proto::SyncResponse> answer;
    {
      MutexLock lock(mu_);
      if (!stop_ && !pending_ && !events_dirty_) {
        lock.Unlock();
        // A Wake() after the check above leaves the eventfd readable.
        std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
        for (int fd : executor_->ExitFds()) fds.push_back({fd, POLLIN, 0});
        ::poll(fds.data(), fds.size(), static_cast<int>(options_.poll_interval.millis()));
        uint64_t count = 0;
        if (fds[0].revents & POLLIN) {
          [[maybe_unused]] const ssize_t got = ::read(wake_fd_, &count, sizeof count);  // resets the eventfd
        }
        lock.Lock();
      }
      if (stop_) break;
      answer.swap(pending_);
    }
    executor_->Poll();
    if (puller_) puller_->Poll();
    if (answer) Apply(*answer);
    // Time limits.
    const int64_t now = clock_.Now().millis();
    SampleUtilization(now);
    for (const TaskStatus& t : executor_->Tasks()) {
      auto a = assigned_.find(t.key);
      if (!t.running || t.stopping || a == assigned_.end() || a->second.time_limit_ms <= 0) continue;
      if (now - t.start_ms >= a->second.time_limit_ms) {
        executor_->Stop(t.key, a->second.stop_signal, Duration::Millis(a->second.grace_ms), "timeout");
      } else if (const proto::TaskAssignment& l = a->second;
                 l.limit_signal > 0 && now - t.start_ms >= l.time_limit_ms - l.limit_signal_before_ms &&
                 limit_signalled_.insert(t.key).second) {
        const int reached = executor_->Signal(t.key, l.limit_signal, l.limit_signal_to);
        log::Info("task {}: {} to {} ({} processes), {} s before its time limit", t.key, SignalName(l.limit_signal),
                  l.limit_signal_to, reached, (l.time_limit_ms - (now - t.start_ms)) / 1000);
      }
    }
    FenceIfLeaseLost();
    StopIfReclaimedAlone();
    if (now - last_prune_ms >= 600'000) {  // a scan of the logs directory: rarely
      last_prune_ms = now;
      executor_->PruneLogs(options_.log_retention);
    }
    // Ended tasks and health events are reported at once; a task that
    // started rides along with the watcher's next sync.
    bool report_now = RefreshReports();
    {
      MutexLock lock(mu_);
      report_now = report_now || events_dirty_;
      events_dirty_ = false;
    }
    // A report the server did not get (a partition, a restart) is sent
    // again every second until it gets through.
    if (report_now || (unsent && now - last_try_ms >= 1000)) {
      last_try_ms = now;
      // Once more at once on a new connection: the server may have closed
      // the idle one just as this request went out.
      unsent = !Sync(0) && !Sync(0);
    }
  }
  if (options_.stop_tasks_on_exit) {
    for (const TaskStatus& t : executor_->Tasks()) {
      if (t.running) {
        const StopOrder order = StopOrderOf(t.key, 5000);
        executor_->Stop(t.key, order.signal, Duration::Millis(std::min<int64_t>(order.grace_ms, 5000)), "agent-exit");
      }
    }
    for (int i = 0; i < 1000; ++i) {
      executor_->Poll();
      bool running = false;
      for (const TaskStatus& t : executor_->Tasks()) running = running || t.running;
      if (!running) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    RefreshReports();
    Sync(0);
  }
  if (log_server_) log_server_->Stop();
  if (metrics_server_) metrics_server_->Stop();
}

}  // namespace muster::agent
