#include "step/step_launch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "common/fd_io.h"
#include "common/signal_name.h"
#include "shell/shell_channel.h"
#include "shell/tcp.h"
#include "step/step_env.h"
#include "step/task_group.h"

namespace muster::step {
namespace {

using nlohmann::json;

struct Caught {
  int signal;
  int code;  // si_code
  pid_t sender;
  int value;  // si_value, with SI_QUEUE
};
int g_signals[2] = {-1, -1};

void OnSignal(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  const Caught c{sig, info != nullptr ? info->si_code : SI_KERNEL, info != nullptr ? info->si_pid : 0,
                 info != nullptr && info->si_code == SI_QUEUE ? info->si_value.sival_int : 0};
  (void)!::write(g_signals[1], &c, sizeof c);
  errno = saved;
}

pid_t ParentOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  char state = 0;
  int ppid = 0;
  if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return 0;
  return ppid;
}

// Whether the signal was sent to srun's whole process group, which holds
// its own node's tasks: by the kernel (a terminal), or by an ancestor above
// srun's parent (the replica's shim stopping it). One the agent queued
// with kStepSignalValue was sent to srun alone, for every task.
bool SentToTheGroup(const Caught& c) {
  if (c.code == SI_QUEUE && c.value == kStepSignalValue) return false;
  if (c.code != SI_USER && c.code != SI_QUEUE) return true;
  pid_t p = ParentOf(::getppid());
  for (int depth = 0; p > 1 && depth < 64; ++depth, p = ParentOf(p)) {
    if (p == c.sender) return true;
  }
  return false;
}

// Where the tasks' output goes: srun's stdout and stderr, whole lines with
// a label when asked.
class Sink {
 public:
  explicit Sink(bool label) : label_(label) {}
  void Output(int32_t task, int stream, std::string_view bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const int fd = stream == 1 ? 1 : 2;
    if (!label_) {
      WriteFull(fd, bytes.data(), bytes.size());
      return;
    }
    std::string& partial = partial_[{task, fd}];
    partial.append(bytes);
    std::string out;
    size_t start = 0;
    for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      out += std::to_string(task) + ": " + partial.substr(start, nl + 1 - start);
    }
    partial.erase(0, start);
    WriteFull(fd, out.data(), out.size());
  }
  void Ended(int32_t task, int32_t status, const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : {1, 2}) {
      auto p = partial_.find({task, fd});
      if (p == partial_.end()) continue;
      const std::string out = std::to_string(task) + ": " + p->second + "\n";
      if (!p->second.empty()) WriteFull(fd, out.data(), out.size());
      partial_.erase(p);
    }
    if (status == 0) return;
    std::string line = "srun: error: " + node + ": task " + std::to_string(task) + ": ";
    line += status > 128 ? std::string(::strsignal(status - 128)) : "Exited with exit code " + std::to_string(status);
    line += "\n";
    WriteFull(2, line.data(), line.size());
  }
  void Error(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string line = "srun: error: " + what + "\n";
    WriteFull(2, line.data(), line.size());
  }

 private:
  std::mutex mu_;
  const bool label_;
  std::map<std::pair<int32_t, int>, std::string> partial_;
};

struct Outcome {
  std::mutex mu;
  std::map<int32_t, int32_t> status;  // by task
  bool bad_exit = false, any_exit = false, node_failed = false;
  std::chrono::steady_clock::time_point first_exit;
};

class NodeWorker {
 public:
  NodeWorker(const StepRun& run, const StepNode& node, Sink& sink, Outcome& outcome)
      : run_(run), node_(node), sink_(sink), outcome_(outcome) {
    if (::pipe2(control_, O_CLOEXEC | O_NONBLOCK) != 0) control_[0] = control_[1] = -1;
    thread_ = std::thread([this] {
      if (node_.endpoint.empty()) {
        RunLocal();
      } else {
        RunRemote();
      }
      done_.store(true);
    });
  }
  ~NodeWorker() {
    if (thread_.joinable()) thread_.join();
    for (int fd : control_) {
      if (fd >= 0) ::close(fd);
    }
  }
  void Send(int sig) { (void)!::write(control_[1], &sig, sizeof sig); }
  bool done() const { return done_.load(); }
  bool local() const { return node_.endpoint.empty(); }

 private:
  void Exited(int32_t task, int32_t status) {
    sink_.Ended(task, status, node_.name);
    std::lock_guard<std::mutex> lock(outcome_.mu);
    outcome_.status[task] = status;
    if (!outcome_.any_exit) outcome_.first_exit = std::chrono::steady_clock::now();
    outcome_.any_exit = true;
    if (status != 0) outcome_.bad_exit = true;
  }
  // The node failed the step: its tasks not yet ended count as exit 1.
  void Failed(const std::string& why) {
    sink_.Error(node_.name + ": " + why);
    std::lock_guard<std::mutex> lock(outcome_.mu);
    for (const TaskPlace& t : node_.launch.tasks) outcome_.status.try_emplace(t.id, 1);
    outcome_.node_failed = true;
  }
  // Signals asked for since the last call; -1 when the pipe is gone.
  std::vector<int> Signals() {
    std::vector<int> out;
    int sig = 0;
    while (::read(control_[0], &sig, sizeof sig) == static_cast<ssize_t>(sizeof sig)) out.push_back(sig);
    return out;
  }

  void RunLocal() {
    std::vector<TaskGroup::Task> tasks;
    const std::map<std::string, std::string> node_env = NodeEnvironment();
    for (const TaskPlace& t : node_.launch.tasks) tasks.push_back({t.id, TaskEnvironment(node_.launch, t, node_env)});
    StatusOr<std::unique_ptr<TaskGroup>> started =
        TaskGroup::Start(node_.launch.argv, node_.launch.cwd, tasks, node_.name);
    if (!started.ok()) return Failed(started.status().message());
    TaskGroup& group = **started;
    while (!group.Done()) {
      std::vector<pollfd> fds{{control_[0], POLLIN, 0}};
      group.AddPollFds(fds);
      if (::poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) break;
      for (int sig : Signals()) group.Signal(sig);
      group.Service([this](int32_t task, int stream, std::string_view b) { sink_.Output(task, stream, b); },
                    [this](int32_t task, int32_t status) { Exited(task, status); });
    }
  }

  void RunRemote() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(run_.connect_timeout.millis());
    std::unique_ptr<shell::ShellChannel> ch;
    std::string why;
    while (!ch) {
      for (int sig : Signals()) {
        if (sig == SIGKILL) return Failed("the step was ended before its tasks here started");
      }
      StatusOr<int> fd = shell::Dial(node_.endpoint);
      if (fd.ok()) {
        StatusOr<std::unique_ptr<shell::ShellChannel>> c = shell::ShellChannel::Connect(*fd, run_.key_hex, run_.job);
        if (!c.ok()) return Failed("the step host at " + node_.endpoint + " refused the step: " + c.status().message());
        ch = std::move(*c);
        break;
      }
      why = fd.status().message();
      if (std::chrono::steady_clock::now() >= deadline) {
        return Failed("no step host answered within " + run_.connect_timeout.ToString() + " (" + why + ")");
      }
      pollfd p{control_[0], POLLIN, 0};
      ::poll(&p, 1, 200);
    }
    if (Status s = ch->Write(kLaunch, LaunchToJson(node_.launch).dump()); !s.ok()) return Failed(s.message());
    StatusOr<shell::Frame> answer = ch->Read();
    if (!answer.ok()) return Failed("the step host closed the connection: " + answer.status().message());
    if (answer->type == kFailed) return Failed("cannot start the tasks: " + answer->data);
    if (answer->type != kStarted)
      return Failed("the step host answered a frame of type '" + std::string(1, answer->type) + "'");
    size_t ended = 0;
    while (ended < node_.launch.tasks.size()) {
      pollfd fds[2] = {{ch->fd(), POLLIN, 0}, {control_[0], POLLIN, 0}};
      if (!ch->Pending() && ::poll(fds, 2, 1000) < 0 && errno != EINTR) break;
      for (int sig : Signals()) {
        if (!ch->Write(kSignal, std::to_string(sig)).ok()) break;
      }
      if (!ch->Pending() && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      StatusOr<shell::Frame> f = ch->Read();
      if (!f.ok()) return Failed("lost the connection to its step host: " + f.status().message());
      int32_t task = 0;
      std::string_view bytes;
      if ((f->type == kStdout || f->type == kStderr) && ReadOutputFrame(f->data, task, bytes)) {
        sink_.Output(task, f->type == kStdout ? 1 : 2, bytes);
      } else if (f->type == kExit) {
        const json j = json::parse(f->data, nullptr, false);
        if (!j.is_object()) continue;
        Exited(j.value("task", -1), j.value("status", 1));
        ++ended;
      }
    }
  }

  const StepRun& run_;
  const StepNode& node_;
  Sink& sink_;
  Outcome& outcome_;
  int control_[2] = {-1, -1};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

int RunStep(const StepRun& run) {
  ::signal(SIGPIPE, SIG_IGN);
  if (::pipe2(g_signals, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "srun: error: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  struct sigaction sa {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kStepSignals) ::sigaction(sig, &sa, nullptr);
  Sink sink(run.label);
  Outcome outcome;
  std::vector<std::unique_ptr<NodeWorker>> workers;
  for (const StepNode& node : run.nodes) workers.push_back(std::make_unique<NodeWorker>(run, node, sink, outcome));
  bool killed = false;
  auto all = [&](int sig, bool local_too) {
    for (auto& w : workers) {
      if (local_too || !w->local()) w->Send(sig);
    }
  };
  for (;;) {
    bool done = true;
    for (const auto& w : workers) done = done && w->done();
    if (done) break;
    pollfd p{g_signals[0], POLLIN, 0};
    ::poll(&p, 1, 100);
    Caught c{};
    while (::read(g_signals[0], &c, sizeof c) == static_cast<ssize_t>(sizeof c)) all(c.signal, !SentToTheGroup(c));
    std::lock_guard<std::mutex> lock(outcome.mu);
    if (killed) continue;
    const bool waited_out = run.wait_after_first > Duration::Zero() && outcome.any_exit &&
                            std::chrono::steady_clock::now() - outcome.first_exit >=
                                std::chrono::milliseconds(run.wait_after_first.millis());
    if (outcome.node_failed || (run.kill_on_bad_exit && outcome.bad_exit) || waited_out) {
      if (waited_out) sink.Error("a task ended " + run.wait_after_first.ToString() + " ago (--wait): killing the rest");
      all(SIGKILL, true);
      killed = true;
    }
  }
  workers.clear();
  int32_t worst = 0;
  for (const auto& [task, status] : outcome.status) worst = std::max(worst, status);
  return worst;
}

}  // namespace muster::step
