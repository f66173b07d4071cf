#include "step/step_host.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "shell/shell_channel.h"
#include "shell/tcp.h"
#include "step/step_env.h"
#include "step/task_group.h"

namespace muster::step {
namespace {

using nlohmann::json;

constexpr int kHandled[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

std::atomic<bool> g_stop{false};
// When each signal last reached the host itself (steady clock, ms).
std::atomic<int64_t> g_last_signal_ms[NSIG];
int g_wake[2] = {-1, -1};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void OnSignal(int sig) {
  const int saved = errno;
  g_last_signal_ms[sig].store(NowMs());
  g_stop.store(true);
  const char c = 0;
  (void)!::write(g_wake[1], &c, 1);
  errno = saved;
}

std::mutex g_log_mu;
void Log(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  std::cerr << "muster step-host: " << line << std::endl;
}

// One connection: one step's tasks on this node.
void Serve(int fd, const StepHostOptions& o) {
  StatusOr<std::unique_ptr<shell::ShellChannel>> accepted = shell::ShellChannel::Accept(fd, o.key_hex, o.job);
  if (!accepted.ok()) {
    Log("refused a connection: " + accepted.status().message());
    return;
  }
  shell::ShellChannel& ch = **accepted;
  StatusOr<shell::Frame> first = ch.Read();
  if (!first.ok() || first->type != kLaunch) return;
  StatusOr<LaunchRequest> launch = [&]() -> StatusOr<LaunchRequest> {
    const json j = json::parse(first->data, nullptr, /*allow_exceptions=*/false);
    return LaunchFromJson(j);
  }();
  if (!launch.ok()) {
    (void)ch.Write(kFailed, launch.status().message());
    return;
  }
  std::vector<TaskGroup::Task> tasks;
  for (const TaskPlace& t : launch->tasks) tasks.push_back({t.id, TaskEnvironment(*launch, t, o.node_env)});
  StatusOr<std::unique_ptr<TaskGroup>> started = TaskGroup::Start(launch->argv, launch->cwd, tasks, o.node);
  if (!started.ok()) {
    (void)ch.Write(kFailed, started.status().message());
    return;
  }
  TaskGroup& group = **started;
  bool peer = ch.Write(kStarted, "").ok();
  int64_t kill_at = 0;  // once srun is gone: when its tasks get SIGKILL
  auto lost = [&] {
    if (!peer) return;
    peer = false;
    group.Signal(SIGTERM);
    kill_at = NowMs() + 5000;
  };
  if (!peer) lost();
  while (!group.Done()) {
    std::vector<pollfd> fds;
    if (peer) fds.push_back({ch.fd(), POLLIN, 0});
    group.AddPollFds(fds);
    const bool pending = peer && ch.Pending();
    if (::poll(fds.data(), fds.size(), pending ? 0 : 50) < 0 && errno != EINTR) break;
    if (peer && (pending || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0)) {
      StatusOr<shell::Frame> f = ch.Read();
      if (!f.ok()) {
        lost();
      } else if (f->type == kSignal) {
        const int sig = std::atoi(f->data.c_str());
        // The node's own delivery of the same signal reached the tasks already.
        if (sig > 0 && sig < NSIG && NowMs() - g_last_signal_ms[sig].load() > 1000) group.Signal(sig);
      }
    }
    group.Service(
        [&](int32_t task, int stream, std::string_view bytes) {
          if (peer && !ch.Write(stream == 1 ? kStdout : kStderr, OutputFrame(task, bytes)).ok()) lost();
        },
        [&](int32_t task, int32_t status) {
          if (peer && !ch.Write(kExit, json{{"task", task}, {"status", status}}.dump()).ok()) lost();
        });
    if (kill_at != 0 && NowMs() >= kill_at) {
      group.Signal(SIGKILL);
      kill_at = 0;
    }
  }
}

}  // namespace

int RunStepHost(const StepHostOptions& o) {
  ::signal(SIGPIPE, SIG_IGN);
  if (::pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    Log(std::string("pipe: ") + std::strerror(errno));
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : kHandled) ::sigaction(sig, &sa, nullptr);
  int port = o.port;
  StatusOr<int> listening = shell::ListenEverywhere(port, 64);
  if (!listening.ok()) {
    Log("node " + o.node + ": " + listening.status().message() + " (the job's steps cannot reach this node)");
    return 1;
  }
  const int listen_fd = *listening;
  struct Connection {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::list<Connection> connections;
  for (;;) {
    for (auto it = connections.begin(); it != connections.end();) {
      if (it->done.load()) {
        it->thread.join();
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
    if (g_stop.load() && connections.empty()) break;
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {g_wake[0], POLLIN, 0}};
    if (::poll(fds, 2, 200) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) {
      char drain[64];
      while (::read(g_wake[0], drain, sizeof drain) > 0) {
      }
    }
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Connection& c = connections.emplace_back();
    c.thread = std::thread([fd, &o, &c] {
      Serve(fd, o);
      c.done.store(true);
      const char w = 0;
      (void)!::write(g_wake[1], &w, 1);
    });
  }
  ::close(listen_fd);
  return 0;
}

}  // namespace muster::step
