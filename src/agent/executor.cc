#include "agent/executor.h"

#include "agent/container_task.h"
#include "agent/launcher.h"
#include "agent/root_exec.h"
#include "agent/spawn.h"
#include "agent/task_beacon.h"
#include "common/log.h"
#include "common/signal_name.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace muster::agent {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Fields 3 to `last` of /proc/<pid>/stat (3 is the state, 5 the process
// group, 22 the start time), or none when the process is gone or a zombie
// (it has ended). They follow the command name, which is in parentheses
// and may itself contain spaces.
std::vector<std::string> LiveStatFields(const std::string& pid, int last) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {};
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(stat.substr(close + 2));
  std::vector<std::string> fields;
  for (std::string field; static_cast<int>(fields.size()) < last - 2 && rest >> field;) fields.push_back(field);
  if (static_cast<int>(fields.size()) < last - 2 || fields[0] == "Z" || fields[0] == "X") return {};
  return fields;
}

// True while a process of process group `pgid` runs.
bool GroupAlive(pid_t pgid) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::vector<std::string> fields = LiveStatFields(name, 5);
    if (!fields.empty() && fields[2] == std::to_string(pgid)) return true;
  }
  return false;
}

// The live processes of process group `pgid`.
std::vector<pid_t> GroupProcesses(pid_t pgid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::vector<std::string> fields = LiveStatFields(name, 5);
    if (!fields.empty() && fields[2] == std::to_string(pgid)) {
      out.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return out;
}

pid_t ParentOf(pid_t pid) {
  const std::vector<std::string> fields = LiveStatFields(std::to_string(pid), 4);
  return fields.empty() ? 0 : static_cast<pid_t>(std::stol(fields[1]));
}

std::string CommandName(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

int64_t ProcessStartTime(pid_t pid) {
  const std::vector<std::string> fields = LiveStatFields(std::to_string(pid), 22);
  return fields.empty() ? 0 : std::stoll(fields.back());
}

Executor::Executor(ExecutorOptions options, const Clock& clock) : options_(std::move(options)), clock_(clock) {}

Executor::~Executor() {
  // Reap children that already ended; running tasks keep running (a new
  // agent adopts them).
  for (auto& [key, t] : tasks_) {
    if (t.child && !t.result) ::waitpid(t.pid, nullptr, WNOHANG);
    if (t.pidfd >= 0) ::close(t.pidfd);
  }
}

std::string Executor::JournalPath(const std::string& key) const {
  return options_.state_dir + "/tasks/" + key + ".jsonl";
}
std::string Executor::LogPath(const std::string& key) const { return options_.state_dir + "/logs/" + key + ".log"; }

StatusOr<std::string> Executor::Init() {
  std::error_code ec;
  fs::create_directories(options_.state_dir + "/tasks/spare", ec);
  if (!ec) fs::create_directories(options_.state_dir + "/logs", ec);
  if (ec)
    return FailedPrecondition("cannot create the agent's state directory " + options_.state_dir + ": " + ec.message());
  beacon_scope_ = TaskBeaconScope(options_.state_dir + "/tasks");
  for (const auto& e : fs::directory_iterator(options_.state_dir + "/tasks/spare", ec)) {
    if (e.is_regular_file()) spares_.push_back(e.path().filename().string());
  }
  std::string how = "cgroups: off (limits are not enforced)";
  if (options_.use_cgroups) {
    auto driver = CgroupDriver::Detect(options_.cgroup_parent);
    if (driver.ok()) {
      cgroups_ = std::move(*driver);
      how = "cgroups: " + cgroups_->Describe();
      if (options_.all_tasks_pids > 0) {
        if (Status s = cgroups_->LimitAllPids(options_.all_tasks_pids); !s.ok()) how += "; " + s.message();
      }
    } else {
      how = "cgroups: unavailable (" + driver.status().message() + "); limits are not enforced";
    }
  }
  Recover();
  return how;
}

Status Executor::Start(TaskSpec spec, const CgroupLimits& limits, const std::string& meta) {
  const std::string key = spec.key;
  const std::string journal = JournalPath(key);
  if (tasks_.count(key) || fs::exists(journal)) {
    return Status(StatusCode::kAlreadyExists, "task " + key + " was already started on this node");
  }
  if (spec.container && options_.podman.empty()) {
    return FailedPrecondition("this node runs no containers (Podman was not found when its agent started)");
  }
  if (cgroups_) {
    ASSIGN_OR_RETURN(spec.cgroup_procs, cgroups_->Create(key, limits, spec.container.has_value()));
    if (spec.container) spec.container->cgroup_parent = cgroups_->PathOf(key);
  }
  if (spec.log_path.empty()) spec.log_path = LogPath(key);
  json first = json::parse(TaskSpecToJson(spec));
  first["meta"] = json::parse(meta, nullptr, false);
  RETURN_IF_ERROR(CreateTaskJournal(key, first.dump(-1, ' ', false, json::error_handler_t::replace)));

  Task t;
  t.key = key;
  if (options_.launcher) {
    // On cgroup v2 the task has one group: the launcher creates the shim in it.
    const std::string group = cgroups_ && cgroups_->version() == 2 && spec.cgroup_procs.size() == 1
                                  ? fs::path(spec.cgroup_procs[0]).parent_path().string()
                                  : std::string();
    auto launched = options_.launcher->Launch(journal, spec.log_path, group);
    if (launched.ok()) {
      t.pid = launched->pid;
      t.pidfd = launched->pidfd;
      t.child = false;
    } else if (launched.status().code() == StatusCode::kUnavailable) {
      // The launcher died (killed, out of memory): a new one cannot be
      // forked from this threaded process, so shims are spawned from now on.
      log::Warn("{}; starting tasks with posix_spawn from now on", launched.status().message());
      options_.launcher = nullptr;
    } else {
      return launched.status();
    }
  }
  if (!options_.launcher) {
    // The shim starts in its own session with default signal handling; its
    // own messages go to the task's log.
    auto spawned = Spawn({options_.shim_binary, "task-shim", journal}, {}, spec.log_path, /*new_session=*/true);
    if (!spawned.ok()) return Internal("cannot start the task shim: " + spawned.status().message());
    const pid_t pid = *spawned;
    t.pid = pid;
    t.child = true;
  }
  t.pid_start = ProcessStartTime(t.pid);
  t.start_ms = clock_.Now().millis();
  t.meta = meta;
  t.awaiting_resume = !spec.resume.empty();
  if (spec.container) t.container = spec.container->name;
  (void)AppendJournal(journal, json({{"pid", t.pid}, {"startTime", t.pid_start}, {"startMs", t.start_ms}}).dump());
  tasks_[key] = std::move(t);
  return Status::Ok();
}

void Executor::Stop(const std::string& key, int signal, Duration grace, const std::string& reason) {
  auto it = tasks_.find(key);
  if (it == tasks_.end() || it->second.result || it->second.stopping) return;
  Task& t = it->second;
  t.stopping = true;
  t.stop_reason = reason;
  t.kill_at_ms = clock_.Now().millis() + std::max<int64_t>(0, grace.millis());
  (void)AppendJournal(JournalPath(key), json({{"stop", reason}, {"killAtMs", t.kill_at_ms}}).dump());
  if (cgroups_ && !t.container.empty()) {
    // The container's processes; the shim and Podman wait for them (a pull
    // in progress is stopped by the shim, which reads the journal).
    cgroups_->SignalContainer(key, signal);
  } else if (cgroups_) {
    cgroups_->Signal(key, signal, t.pid);
  } else if (t.pid > 1) {
    ::kill(-t.pid, signal);  // the shim leads the task's process group and blocks it
  }
}

int Executor::Signal(const std::string& key, int signal, const std::string& to) {
  auto it = tasks_.find(key);
  if (it == tasks_.end() || it->second.result || it->second.pid <= 1 || !Alive(it->second)) return 0;
  const Task& t = it->second;
  std::vector<pid_t> pids = cgroups_ ? cgroups_->Processes(key) : GroupProcesses(t.pid);
  std::erase(pids, t.pid);
  if (to == "steps") {
    int sent = 0;
    for (pid_t p : pids) {
      if (CommandName(p) != "srun") continue;
      sigval value{};
      value.sival_int = kStepSignalValue;
      sent += ::sigqueue(p, signal, value) == 0 ? 1 : 0;
    }
    return sent;
  }
  if (!t.container.empty() && cgroups_) {
    cgroups_->SignalContainer(key, signal);
    return 1;
  }
  int sent = 0;
  for (pid_t p : pids) {
    if (to == "batch" && ParentOf(p) != t.pid) continue;
    sent += ::kill(p, signal) == 0 ? 1 : 0;
  }
  return sent;
}

bool Executor::Alive(const Task& t) const {
  return t.pid > 1 && ::kill(t.pid, 0) == 0 && ProcessStartTime(t.pid) == t.pid_start;
}

void Executor::Poll() {
  const int64_t now = clock_.Now().millis();
  if (cgroups_ && !busy_cgroups_.empty()) {
    std::vector<std::string> still;
    for (const std::string& g : busy_cgroups_) {
      if (cgroups_->Remove(g).code() == StatusCode::kUnavailable) still.push_back(g);
    }
    busy_cgroups_.swap(still);
  }
  std::erase_if(cleanups_, [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) != 0; });
  // Exits of shims watched through pidfds, in one poll.
  std::vector<pollfd> fds;
  std::vector<Task*> watched;
  for (auto& [key, t] : tasks_) {
    if (t.result || t.child || t.pidfd < 0) continue;
    fds.push_back({t.pidfd, POLLIN, 0});
    watched.push_back(&t);
  }
  if (!fds.empty() && ::poll(fds.data(), fds.size(), 0) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) Finish(*watched[i], std::nullopt);
    }
  }
  for (auto& [key, t] : tasks_) {
    if (t.result) continue;
    // The shim's verification may take minutes: read the journal again
    // only when it has grown.
    if (t.Watching()) {
      struct stat st {};
      if (::stat(JournalPath(key).c_str(), &st) == 0 && st.st_size != t.journal_bytes) {
        t.journal_bytes = st.st_size;
        ReadShimNotes(t);
      }
    }
    if (t.child) {
      int status = 0;
      if (::waitpid(t.pid, &status, WNOHANG) == t.pid) {
        Finish(t, status);
        continue;
      }
    } else if (t.pidfd < 0 && !Alive(t)) {
      Finish(t, std::nullopt);
      continue;
    }
    if (t.stopping && now >= t.kill_at_ms && cgroups_ && !t.container.empty() && !t.container_killed) {
      // The container's processes first: its shim then removes it and
      // records how it ended; the rest of the task a little later.
      cgroups_->SignalContainer(key, SIGKILL);
      t.container_killed = true;
      t.kill_at_ms = now + 10'000;
    } else if (t.stopping && now >= t.kill_at_ms) {
      if (cgroups_) cgroups_->KillAll(key);
      if (t.pid > 1) {
        ::kill(-t.pid, SIGKILL);
        ::kill(t.pid, SIGKILL);
      }
    }
  }
}

void Executor::ReadShimNotes(Task& t) {
  for (const std::string& line : ReadJournal(JournalPath(t.key))) {
    // (Keys are written sorted: {"cached":..,"pulled":..}, {"ms":..,"pulled":..}.)
    const bool resumed = line.rfind("{\"resumed\"", 0) == 0, pulling = line.find("\"pull") != std::string::npos;
    if (!resumed && !pulling) continue;
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    if (resumed && j["resumed"].is_object()) {
      t.resumed = j["resumed"].dump();
      t.awaiting_resume = false;
    } else if (j.contains("pulled")) {
      t.image_state = "pulled";
      t.pull_ms = j.value("cached", false) ? -1 : j.value("ms", int64_t{0});
    } else if (j.contains("pulling") && t.image_state.empty()) {
      t.image_state = "pulling";
    }
  }
}

void Executor::RemoveContainerLater(const std::string& name) {
  std::vector<std::string> argv = options_.podman;
  argv.insert(argv.end(), {"rm", "--force", "--ignore", "--time", "0", name});
  auto pid = Spawn(argv, RootEnvironment());
  if (pid.ok()) {
    cleanups_.push_back(*pid);
  } else {
    log::Warn("cannot remove container {}: {}", name, pid.status().message());
  }
}

void Executor::RemoveStrayContainers() {
  if (options_.podman.empty() || options_.container_prefix.empty()) return;
  std::vector<std::string> argv = options_.podman;
  argv.insert(argv.end(), {"ps", "--all", "--format", "{{.Names}}", "--filter", "name=^" + options_.container_prefix});
  std::string names;
  const int status = RunRootProgram(argv, RootEnvironment(), [&](const std::string& text) { names += text; });
  if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    log::Warn("cannot list this agent's containers ({}): {}", options_.podman.front(), names.substr(0, 200));
    return;
  }
  std::istringstream lines(names);
  for (std::string name; std::getline(lines, name);) {
    if (name.rfind(options_.container_prefix, 0) != 0) continue;
    const bool running = std::any_of(tasks_.begin(), tasks_.end(),
                                     [&](const auto& kv) { return kv.second.container == name && !kv.second.result; });
    if (running) continue;
    log::Warn("container {} belongs to no running task; removing it", name);
    RemoveContainerLater(name);
  }
}

void Executor::Finish(Task& t, std::optional<int> wait_status) {
  const std::string journal = JournalPath(t.key);
  if (t.Watching()) ReadShimNotes(t);
  TaskResult r;
  json s;  // the shim's line
  for (const std::string& line : ReadJournal(journal)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object() && (j.contains("exitCode") || j.contains("signal")) && !j.contains("result")) s = std::move(j);
  }
  if (s.is_object() && s.value("fenced", false) && t.stop_reason.empty()) t.stop_reason = "fenced";
  if (s.is_object() && s.contains("signal")) {
    r.signal = s.value("signal", 0);
  } else if (s.is_object() && s.contains("exitCode")) {
    r.exit_code = s.value("exitCode", -1);
  } else if (wait_status && WIFSIGNALED(*wait_status)) {
    // The shim itself was killed: Muster's process, not the job, failed.
    r.signal = WTERMSIG(*wait_status);
    r.message = "its task shim (Muster's process on the node) was killed by signal " + std::to_string(r.signal);
    if (t.stop_reason.empty()) t.stop_reason = "lost";
  } else if (wait_status) {
    r.exit_code = 127;
    r.message = "the task could not be started; see its log";
  } else {
    // Its shim is gone without a word: killed, or the node's state lost it.
    r.signal = SIGKILL;
    r.message = "the task was gone when the agent looked for it (its shim ended without recording how the task did)";
    if (t.stop_reason.empty()) t.stop_reason = "lost";
  }
  if (s.is_object() && s.contains("launchError")) {
    r.message = s.value("launchError", "");
    r.launch_failed = true;
  }
  if (r.exit_code == 127 && r.message.empty()) r.message = "the command could not be run (exit 127); see the log";
  if (!t.end_message.empty()) r.message = t.end_message;
  r.stop_reason = t.stop_reason;
  r.oom = s.is_object() && s.value("oom", false);
  if (cgroups_) {
    r.oom = r.oom || cgroups_->OomKills(t.key) > 0;
    cgroups_->KillAll(t.key);
    if (Status rm = cgroups_->Remove(t.key); rm.code() == StatusCode::kUnavailable) {
      busy_cgroups_.push_back(t.key);
    } else if (!rm.ok()) {
      log::Warn("{}", rm.ToString());
    }
  } else if (t.pid > 1 && ::kill(-t.pid, SIGKILL) == 0) {
    // Whatever the payload left in its process group. SIGKILL lands
    // asynchronously: wait (up to 2 s) until none is alive, so that none
    // outlives the report of the end.
    for (int i = 0; i < 200 && GroupAlive(t.pid); ++i) ::usleep(10'000);
  }
  if (t.pidfd >= 0) {
    ::close(t.pidfd);
    t.pidfd = -1;
  }
  if (!t.container.empty()) {
    // The shim removes its container; when it could not (it was killed),
    // the container's record and storage would stay.
    if (!(s.is_object() && s.value("removed", false)) && !options_.podman.empty()) RemoveContainerLater(t.container);
    for (const char* leftover : {".env", ".script", ".auth"}) ::unlink((journal + leftover).c_str());
  }
  r.end_ms = clock_.Now().millis();
  (void)AppendJournal(journal, "{\"result\":" + TaskResultToJson(r) + "}");
  t.result = r;
  t.stopping = false;
}

void Executor::Recover() {
  // Live shims by key, whatever their journals say.
  std::map<std::string, TaskBeacon> beacons;
  // Only those proven to be this agent's shims (task_beacon.h): anyone can
  // bind a beacon's name, naming any pid.
  for (TaskBeacon& b : ListTaskBeacons(beacon_scope_)) {
    if (ProcessStartTime(b.pid) != b.start_time) continue;
    std::string why;
    if (!VerifyTaskBeacon(beacon_scope_, b, ::geteuid(), cgroups_ != nullptr, &why)) {
      log::Warn("ignoring a beacon for task {} naming pid {}: {}", b.key, static_cast<int>(b.pid), why);
      continue;
    }
    beacons[b.key] = std::move(b);
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(options_.state_dir + "/tasks", ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || e.path().extension() != ".jsonl") continue;
    const std::string key = name.substr(0, name.size() - 6);
    Task t;
    t.key = key;
    bool has_pid = false, has_spec = false;
    for (const std::string& line : ReadJournal(e.path().string())) {
      const json j = json::parse(line, nullptr, false);
      if (!j.is_object()) continue;
      if (j.contains("argv") && j.contains("meta") && j["meta"].is_object()) {
        t.meta = j["meta"].dump();
        has_spec = true;
      }
      if (j.contains("argv") && j.contains("resume") && j["resume"].is_array())
        t.awaiting_resume = !j["resume"].empty();
      if (j.contains("argv") && j.contains("container") && j["container"].is_object()) {
        t.container = j["container"].value("name", "");
      }
      if (j.contains("pulling") && t.image_state.empty()) t.image_state = "pulling";
      if (j.contains("pulled")) {
        t.image_state = "pulled";
        t.pull_ms = j.value("cached", false) ? -1 : j.value("ms", int64_t{0});
      }
      if (j.contains("resumed") && j["resumed"].is_object()) {
        t.resumed = j["resumed"].dump();
        t.awaiting_resume = false;
      }
      if (j.contains("pid")) {
        t.pid = j.value("pid", 0);
        t.pid_start = j.value("startTime", int64_t{0});
        t.start_ms = j.value("startMs", t.start_ms);  // the shim's own line has none
        has_pid = true;
      }
      if (j.contains("stop")) {
        t.stopping = true;
        t.stop_reason = j.value("stop", "stop");
        t.kill_at_ms = j.value("killAtMs", int64_t{0});
      }
      if (j.contains("result")) {
        if (auto r = TaskResultFromJson(j["result"].dump()); r.ok()) t.result = *r;
      }
    }
    auto beacon = beacons.find(key);
    if (!t.result && has_spec && beacon != beacons.end() && !(has_pid && t.pid > 0 && Alive(t))) {
      // The shim runs but its pid is not in the journal (lost, or the shim
      // had not written it yet): its beacon says where it is.
      t.pid = beacon->second.pid;
      t.pid_start = beacon->second.start_time;
      has_pid = true;
    }
    if (beacon != beacons.end() && (t.result || !has_spec || beacon->second.pid != t.pid)) {
      // A live shim that its journal does not account for: the journal was
      // damaged. The task cannot be adopted without it, and the server will
      // start the job again: stop this copy first.
      KillUnaccounted(beacon->second, "its journal " + e.path().string() + " is damaged");
      t.result.reset();
      t.stop_reason = "lost";
      t.end_message = "its journal on the node was damaged, so the agent stopped it";
      t.pid = -1;
      beacons.erase(beacon);
      tasks_[key] = std::move(t);
      Finish(tasks_[key], std::nullopt);
      continue;
    }
    if (beacon != beacons.end()) beacons.erase(beacon);
    if (t.result) {
      t.stopping = false;
      tasks_[key] = std::move(t);
      continue;
    }
    if (has_pid && t.pid > 0 && Alive(t)) {
      // Adopted: its shim still runs. A pidfd tells of its exit; the start
      // time is checked again after opening it, against pid reuse.
      t.pidfd = OpenPidfd(t.pid);
      if (t.pidfd >= 0 && ProcessStartTime(t.pid) != t.pid_start) {
        ::close(t.pidfd);
        t.pidfd = -1;
      }
      tasks_[key] = std::move(t);
      continue;
    }
    if (!has_pid) t.pid = -1;  // never started: nothing to signal
    tasks_[key] = std::move(t);
    Finish(tasks_[key], std::nullopt);
  }
  // Shims without a journal at all (deleted): nothing to report them with;
  // the server counts the tasks as lost.
  for (const auto& [key, b] : beacons) KillUnaccounted(b, "it has no journal");
  if (cgroups_) {
    for (const std::string& group : cgroups_->List()) {
      if (tasks_.count(group) && !tasks_[group].result) continue;
      cgroups_->KillAll(group);
      if (cgroups_->Remove(group).code() == StatusCode::kUnavailable) busy_cgroups_.push_back(group);
    }
  }
  RemoveStrayContainers();
}

void Executor::KillUnaccounted(const TaskBeacon& b, const std::string& why) {
  log::Warn("task {} (shim pid {}) still runs but {}; stopping it", b.key, static_cast<int>(b.pid), why);
  if (ProcessStartTime(b.pid) != b.start_time) return;  // it ended (and the pid may be another's now)
  if (cgroups_) cgroups_->KillAll(b.key);
  ::kill(-b.pid, SIGKILL);  // the shim leads the task's process group
  ::kill(b.pid, SIGKILL);
  // SIGKILL is delivered asynchronously: wait (up to 2 s) until no
  // process of the group, the shim included, is alive, so that none
  // outlives the report.
  for (int i = 0; i < 200 && GroupAlive(b.pid); ++i) {
    (void)::waitpid(b.pid, nullptr, WNOHANG);  // where the shim is ours
    ::usleep(10'000);
  }
}

std::vector<int> Executor::ExitFds() const {
  std::vector<int> fds;
  for (const auto& [key, t] : tasks_) {
    if (!t.result && !t.child && t.pidfd >= 0) fds.push_back(t.pidfd);
  }
  return fds;
}

std::vector<TaskStatus> Executor::Tasks() const {
  std::vector<TaskStatus> out;
  for (const auto& [key, t] : tasks_) {
    out.push_back(
        {key, !t.result.has_value(), t.start_ms, t.result, t.stopping, t.meta, t.resumed, t.image_state, t.pull_ms});
  }
  return out;
}

int Executor::PruneLogs(Duration keep) {
  if (keep <= Duration::Zero()) return 0;
  const int64_t cutoff_s = (clock_.Now().millis() - keep.millis()) / 1000;
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(options_.state_dir + "/logs", ec)) {
    const std::string name = e.path().filename().string();
    const size_t dot = name.find(".log");
    if (dot == std::string::npos || tasks_.count(name.substr(0, dot))) continue;  // its task is known
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0 || st.st_mtime >= cutoff_s) continue;
    if (::unlink(e.path().c_str()) == 0) ++removed;
  }
  return removed;
}

std::string Executor::SparePath(const std::string& name) const { return options_.state_dir + "/tasks/spare/" + name; }

Status Executor::CreateTaskJournal(const std::string& key, const std::string& first_line) {
  const std::string journal = JournalPath(key);
  while (recycle_ && !spares_.empty()) {
    const std::string spare = SparePath(spares_.back());
    // Written in full before it appears under the task's name: a crash
    // leaves either no journal or this one, never an old task's lines.
    const int fd = ::open(spare.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) {
      spares_.pop_back();
      continue;
    }
    const std::string text = first_line + "\n";
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) break;
    if (::renameat2(AT_FDCWD, spare.c_str(), AT_FDCWD, journal.c_str(), RENAME_NOREPLACE) == 0) {
      spares_.pop_back();
      return Status::Ok();
    }
    if (errno == EEXIST) return Status(StatusCode::kAlreadyExists, journal + " exists");
    recycle_ = false;  // EINVAL: the filesystem cannot; create files as usual
  }
  return CreateJournal(journal, first_line);
}

void Executor::Forget(const std::string& key) {
  auto it = tasks_.find(key);
  if (it == tasks_.end() || !it->second.result) return;
  const std::string journal = JournalPath(key);
  // Up to one spare per task a node could run at once, and then some.
  if (recycle_ && spares_.size() < 256 && ::rename(journal.c_str(), SparePath(key).c_str()) == 0) {
    spares_.push_back(key);
  } else {
    ::unlink(journal.c_str());
  }
  tasks_.erase(it);
}

}  // namespace muster::agent
