#include "cli/dev_command.h"

#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "auth/client_credential.h"
#include "cli/auth_commands.h"
#include "cli/client.h"
#include "cli/local_postgres.h"
#include "config/yaml_fields.h"
#include "core/job.h"
#include "http/failover_client.h"

namespace muster::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A child process of this binary in its own process group, so Ctrl-C
// reaches only `muster dev`, which stops the children in order.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  FILE* f = std::freopen(log.c_str(), "a", stdout);
  (void)f;
  ::dup2(::fileno(stdout), 2);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  ::_exit(127);
}

// How a child ended, for a message: "exit 1", "killed by signal 9".
std::string HowItEnded(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

// A process `muster dev` keeps running, as a service manager would: when it
// ends it is started again, unless it ended within kCrashLoop of its start
// (then something is wrong that a restart will not mend).
struct Supervised {
  static constexpr std::chrono::seconds kCrashLoop{5};
  Supervised(std::string name, std::vector<std::string> args, std::string log)
      : name(std::move(name)), args(std::move(args)), log(std::move(log)) {}

  std::string name;  // "the server", "agent dev-2"
  std::vector<std::string> args;
  std::string log;
  pid_t pid = -1;
  std::chrono::steady_clock::time_point started;

  void Start() {
    pid = Spawn(args, log);
    started = std::chrono::steady_clock::now();
  }
  // Called when pid ended with `status`: restarts it and returns true, or
  // returns false (a crash loop) after saying why.
  bool Restart(int status) {
    const bool looping = std::chrono::steady_clock::now() - started < kCrashLoop;
    std::cerr << "muster dev: " << name << " ended (" << HowItEnded(status) << ")"
              << (looping ? " within 5 s of its start; not restarting it" : "; restarting it") << "; see " << log
              << "\n";
    pid = -1;
    if (looping) return false;
    Start();
    return true;
  }
};

int StopChild(pid_t pid, int seconds) {
  if (pid <= 0) return 0;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < seconds * 100; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// examples/ next to the binary's source tree, or in the current directory.
std::string FindExamples() {
  std::vector<fs::path> candidates = {fs::current_path() / "examples"};
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    candidates.push_back(p / "examples");
  }
  for (const fs::path& c : candidates) {
    if (fs::exists(c / "ddp_digits.py")) return fs::canonical(c).string();
  }
  return {};
}

struct DemoJob {
  std::string label;
  std::string spec;  // YAML
};

std::vector<DemoJob> DemoJobs(const std::string& examples, const std::string& dir) {
  std::vector<DemoJob> jobs;
  jobs.push_back({"ddp-digits",
                  "name: ddp-digits\nqueue: research\nreplicas: 2\n"
                  "resources: {gpus: 1, cpus: 1, memory: 2Gi}\ntimeLimit: 15m\n"
                  "command: [/usr/bin/python3, " +
                      examples + "/ddp_digits.py]\n"});
  jobs.push_back({"hello",
                  "name: hello\nqueue: interns\narray: 6\nresources: {gpus: 1, cpus: 100m, memory: 64Mi}\n"
                  "timeLimit: 5m\ncommand: [/bin/sh, -c, 'echo hello from task $MUSTER_ARRAY_TASK_ID "
                  "on $MUSTER_NODE with GPU $CUDA_VISIBLE_DEVICES; sleep 2']\n"});
  jobs.push_back({"wide-gang",
                  "name: wide-gang\nqueue: research\nreplicas: 3\ntopology: any\n"
                  "resources: {gpus: 8, cpus: 100m, memory: 64Mi}\ntimeLimit: 5m\n"
                  "command: [/bin/sh, -c, 'echo rank $RANK of $WORLD_SIZE on $MUSTER_NODE, master "
                  "$MASTER_ADDR:$MASTER_PORT; sleep 3']\n"});
  jobs.push_back({"report",
                  "name: report\nqueue: research\ndependencies: 'afterok:{ddp}'\n"
                  "resources: {cpus: 100m, memory: 64Mi}\ntimeLimit: 5m\n"
                  "command: [/bin/sh, -c, 'echo training finished; date > " +
                      dir + "/report.txt']\n"});
  return jobs;
}

// Submits the demo and follows it; calls `midway` once, when a job first
// runs. Returns true when every job completed.
bool RunDemo(Client& client, const std::string& dir, const std::atomic<bool>& stop,
             const std::function<void()>& midway) {
  const std::string examples = FindExamples();
  if (examples.empty()) {
    std::cerr << "muster dev: examples/ddp_digits.py not found (run from the repository root)\n";
    return false;
  }
  if (std::system("/usr/bin/python3 -c 'import torch, sklearn' >/dev/null 2>&1") != 0) {
    std::cerr << "muster dev: the demo trains with Debian's python3-torch and python3-sklearn; "
                 "install them (scripts/install-deps.sh does)\n";
  }
  std::vector<std::pair<std::string, int64_t>> ids;  // label, first id
  std::vector<int64_t> all;
  int64_t ddp = 0;
  for (DemoJob& job : DemoJobs(examples, dir)) {
    const size_t at = job.spec.find("{ddp}");
    if (at != std::string::npos) job.spec.replace(at, 5, std::to_string(ddp));
    auto r = client.Post("/v1/jobs", job.spec, "application/yaml");
    if (!r.ok() || r->status / 100 != 2) {
      std::cerr << "muster dev: cannot submit the demo job " << job.label << ": "
                << (r.ok() ? Client::ErrorOf(*r).message() : r.status().message()) << "\n";
      return false;
    }
    const int64_t id = r->body.value("id", int64_t{0});
    if (job.label == "ddp-digits") ddp = id;
    const int count = job.spec.find("array: 6") != std::string::npos ? 6 : 1;
    for (int i = 0; i < count; ++i) all.push_back(id + i);
    std::cout << "submitted " << job.label << (count > 1 ? " (array of " + std::to_string(count) + ")" : "") << ": job "
              << id << (count > 1 ? ".." + std::to_string(id + count - 1) : "") << "\n";
  }
  std::map<int64_t, std::string> state;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(20);
  bool was_midway = false;
  while (!stop && std::chrono::steady_clock::now() < deadline) {
    if (!was_midway && midway) {
      for (const auto& [id, s] : state) was_midway = was_midway || s == "RUNNING";
      if (was_midway) midway();
    }
    bool done = true;
    for (int64_t id : all) {
      auto r = client.Get("/v1/jobs/" + std::to_string(id));
      if (!r.ok() || r->status != 200) {
        done = false;
        continue;
      }
      const std::string s = r->body.value("state", "");
      if (s != state[id]) {
        state[id] = s;
        std::cout << "job " << id << " (" << r->body.value("name", "") << "): " << s;
        const std::string reason = r->body.value("reason", "");
        if (!reason.empty()) std::cout << "  " << reason;
        std::cout << "\n" << std::flush;
      }
      done = done && core::IsTerminalName(s);
    }
    if (done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  bool ok = true;
  for (int64_t id : all) ok = ok && state[id] == "COMPLETED";
  for (int replica = 0; replica < 2; ++replica) {
    auto log =
        client.GetText("/v1/jobs/" + std::to_string(ddp) + "/logs?replica=" + std::to_string(replica) + "&tail=1", {});
    if (log.ok() && log->status == 200) std::cout << "ddp-digits replica " << replica << ": " << log->text;
  }
  std::cout << (ok ? "demo: every job completed\n" : "demo: not every job completed (see muster get jobs)\n");
  return ok;
}

// The demo's failover: kills the leader (SIGKILL) and reports how long until
// another server leads and answers. The supervisor brings the killed one
// back as a standby.
void DemoFailover(const std::vector<std::string>& urls, const std::vector<pid_t>& pids, Client& client) {
  const int leader = http::FindLeader(urls, std::chrono::milliseconds(500), nullptr);
  if (leader < 0) return;
  const auto killed = std::chrono::steady_clock::now();
  ::kill(pids[leader], SIGKILL);
  std::cout << "demo: killed the leader, server-" << leader + 1 << " (" << urls[leader] << "), with SIGKILL\n"
            << std::flush;
  int next = -1;
  for (int i = 0; i < 300 && next < 0; ++i) {
    next = http::FindLeader(urls, std::chrono::milliseconds(500), nullptr);
    if (next < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const bool answers = client.Get("/v1/queues").ok();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  if (next < 0 || !answers) {
    std::cout << "demo: no server took over within 15 s\n" << std::flush;
    return;
  }
  char line[200];
  std::snprintf(line, sizeof line, "demo: server-%d took over and answers, %.2f s after the kill; the jobs go on\n",
                next + 1, took);
  std::cout << line << std::flush;
}

}  // namespace

CLI::App* AddDevCommand(CLI::App& app, DevFlags& f) {
  CLI::App* d = app.add_subcommand("dev", "Run a whole local cluster: a server and agents with fake GPUs, on loopback");
  d->add_option("--nodes", f.nodes, "Number of agents (nodes)")->check(CLI::Range(1, 64));
  d->add_option("--gpus", f.gpus, "Fake GPUs per node, COUNTxTYPE");
  d->add_option("--port", f.port,
                "Server port on 127.0.0.1 (0: any free port; the server's port file, DIR/port, says which)")
      ->check(CLI::Range(0, 65535));
  d->add_option("--dir", f.dir, "Where the store, agent state and logs go (default ./muster-dev)");
  d->add_flag("--demo", f.demo, "Submit the demo workload (a PyTorch DDP job and friends) and follow it");
  d->add_flag("--exit-after-demo", f.exit_after_demo, "With --demo: stop the cluster when the demo ends");
  d->add_option("--server-config", f.server_config,
                "A YAML file of server settings (queues, prices, stragglers, ...) over the ones muster dev writes")
      ->check(CLI::ExistingFile);
  d->add_flag("--ha", f.ha,
              "High availability: a local PostgreSQL and three servers on it (ports PORT..PORT+2); "
              "with --demo, the leader is killed midway");
  return d;
}

int RunDevCommand(const DevFlags& f) {
  const std::string dir = fs::absolute(f.dir.empty() ? "muster-dev" : f.dir).string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::cerr << "muster dev: cannot create " << dir << ": " << ec.message() << "\n";
    return 1;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // The store: SQLite in the directory, or with --ha a local PostgreSQL
  // that three servers share.
  std::optional<LocalPostgres> pg;
  std::string store = dir + "/muster.db";
  if (f.ha) {
    auto started = LocalPostgres::Start(dir + "/postgres");
    if (!started.ok()) {
      std::cerr << "muster dev: " << started.status().message() << "\n";
      return 1;
    }
    pg = std::move(*started);
    store = pg->url();
  }
  // The user's own settings: their keys replace the ones written below.
  std::string extra;
  std::set<std::string> theirs;
  if (!f.server_config.empty()) {
    std::ifstream in(f.server_config);
    extra.assign(std::istreambuf_iterator<char>(in), {});
    auto root = config::LoadYaml(extra, f.server_config);
    if (!root.ok() || !(root->IsMap() || root->IsNull())) {
      if (pg) pg->Stop();
      std::cerr << "muster dev: --server-config " << f.server_config << ": "
                << (root.ok() ? "must be a YAML mapping of server settings" : root.status().message()) << "\n";
      return 2;
    }
    for (const auto& kv : *root) theirs.insert(kv.first.Scalar());
    for (const char* own : {"store", "listen", "ha"}) {
      if (theirs.count(own)) {
        if (pg) pg->Stop();
        std::cerr << "muster dev: --server-config " << f.server_config << ": " << own
                  << " is muster dev's own to set (use muster server for a cluster of your own)\n";
        return 2;
      }
    }
  }
  const int count = f.ha ? 3 : 1;
  // Credentials, made in the store before any server starts: an admin
  // token for whoever runs the cluster (saved in their token file for its
  // address, below), and one for each node's agent.
  std::string me = "root";
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_name) me = pw->pw_name;
  auto user_token = CreateTokenInStore(store, {me, "", "30d", "muster dev"});
  if (!user_token.ok()) {
    if (pg) pg->Stop();
    std::cerr << "muster dev: cannot make credentials in " << store << ": " << user_token.status().message() << "\n";
    return 1;
  }
  for (int i = 0; i < f.nodes; ++i) {
    const std::string name = "dev-" + std::to_string(i + 1);
    auto t = CreateTokenInStore(store, {"", name, "365d", "muster dev"});
    fs::create_directories(dir + "/" + name, ec);
    if (t.ok())
      t = SaveToken(dir + "/" + name + "/token", "", *t).ok() ? t : StatusOr<std::string>(Internal("cannot write it"));
    if (!t.ok()) {
      if (pg) pg->Stop();
      std::cerr << "muster dev: cannot make node " << name << "'s credential: " << t.status().message() << "\n";
      return 1;
    }
  }
  auto file = [&](const char* what, int i) {
    return dir + "/" + what + (f.ha ? "-" + std::to_string(i + 1) : std::string());
  };
  auto configure = [&](int i, int port) {
    std::ofstream cfg(file("server", i) + ".yaml");
    cfg << "store: \"" << store << "\"\nlisten: 127.0.0.1:" << port << "\n";
    if (!theirs.count("agents")) cfg << "agents: {defaultGrace: 5s}\n";
    // Whoever runs the cluster administers it; run as root, their jobs run
    // as root too (their own machine), which a real server refuses by default.
    if (!theirs.count("admins")) cfg << "admins: [root" << (me == "root" ? "" : ", " + me) << "]\n";
    if (me == "root" && !theirs.count("auth")) cfg << "auth: {rootJobs: [root]}\n";
    // Prices per GPU-hour, so that usage shows a cost (muster usage, the dashboard).
    if (!theirs.count("prices")) cfg << "prices: {H100: 2.50, A100: 1.60, \"*\": 1.00}\n";
    if (f.ha) cfg << "ha: {name: server-" << i + 1 << "}\n";
    cfg << extra << "\n";
  };
  std::vector<Supervised> servers;
  for (int i = 0; i < count; ++i) {
    configure(i, f.port == 0 ? 0 : f.port + i);
    fs::remove(file("port", i), ec);
    servers.emplace_back(
        f.ha ? "server-" + std::to_string(i + 1) : "the server",
        std::vector<std::string>{"muster", "server", "-c", file("server", i) + ".yaml", "--port-file", file("port", i)},
        file("server", i) + ".log");
    servers.back().Start();
  }
  std::vector<Supervised> agents;
  auto shutdown = [&] {
    for (const Supervised& a : agents) {
      if (a.pid > 0) ::kill(a.pid, SIGTERM);  // never kill(-1)
    }
    for (const Supervised& a : agents) StopChild(a.pid, 15);
    for (const Supervised& s : servers) StopChild(s.pid, 15);
    if (pg) pg->Stop();
  };
  // Each serves (or, with --ha, listens as a standby) once its port file is
  // written: the port it bound (the one asked for, or any free one for --port 0).
  std::vector<std::string> urls;
  for (int i = 0; i < count; ++i) {
    int port = 0;
    for (int tries = 0; tries < 1000 && port == 0; ++tries) {
      std::ifstream in(file("port", i));
      if (in >> port) break;
      port = 0;
      int status = 0;
      if (::waitpid(servers[i].pid, &status, WNOHANG) == servers[i].pid) {
        servers[i].pid = -1;
        shutdown();
        std::cerr << "muster dev: " << servers[i].name << " did not start; see " << servers[i].log << ":\n";
        std::ifstream log(servers[i].log);
        std::cerr << log.rdbuf();
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (port == 0) {
      shutdown();
      std::cerr << "muster dev: " << servers[i].name << " did not start in 10 s; see " << servers[i].log << "\n";
      return 1;
    }
    // A server restarted below comes back on this port, where the agents look.
    if (f.port == 0) configure(i, port);
    urls.push_back("http://127.0.0.1:" + std::to_string(port));
  }
  std::string url;
  for (const std::string& u : urls) url += (url.empty() ? "" : ",") + u;
  // The user's CLI finds the token in their token file, on the line for
  // this cluster's address; this process uses it too.
  const std::string token_file = auth::DefaultCredentialSources().token_file;
  std::string credentials = "$MUSTER_TOKEN (no HOME to keep a token file under)";
  if (!token_file.empty() && SaveToken(token_file, url, *user_token).ok()) {
    credentials = token_file + " (the line for " + url + ")";
  }
  ::setenv("MUSTER_TOKEN", user_token->c_str(), 1);
  for (int i = 0; i < f.nodes; ++i) {
    const std::string name = "dev-" + std::to_string(i + 1);
    agents.emplace_back(
        "agent " + name,
        std::vector<std::string>{"muster", "agent", "--server", url, "--name", name, "--fake-gpus", f.gpus, "--leaf",
                                 "leaf-" + std::to_string(i / 2 + 1), "--state-dir", dir + "/" + name, "--cpus", "2",
                                 "--memory", "8Gi", "--stop-tasks-on-exit", "--start-jitter", "0",
                                 // One's own machine: jobs share its /tmp, as one's processes do.
                                 "--shared-tmp"},
        dir + "/" + name + ".log");
    agents.back().Start();
  }
  Client client(url, "", 10.0);
  size_t registered = 0;
  for (int i = 0; i < 500 && registered < static_cast<size_t>(f.nodes); ++i) {
    auto nodes = client.Get("/v1/nodes");
    if (nodes.ok() && nodes->status == 200) registered = nodes->body["items"].size();
    if (registered < static_cast<size_t>(f.nodes)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (registered < static_cast<size_t>(f.nodes)) {
    shutdown();
    std::cerr << "muster dev: only " << registered << " of " << f.nodes << " agents registered; see " << dir
              << "/dev-*.log\n";
    return 1;
  }
  std::cout << "Muster dev cluster: " << f.nodes << " nodes x " << f.gpus << " (fake GPUs), "
            << (f.ha ? "servers " + url + " on PostgreSQL " + store + " (one leads; the others stand by)"
                     : "server " + url)
            << "\n"
            << "  export MUSTER_SERVER=" << url << "\n"
            << "  muster get nodes;  muster submit --gpus 2 -- sh -c 'echo $CUDA_VISIBLE_DEVICES';  muster get jobs;  "
               "muster logs ID\n"
            << "  store, agent state and logs: " << dir << "\n"
            << "  your credential (admin): " << credentials
            << "\n"
            // As Jupyter does: the token rides in the fragment, which the
            // browser never sends; the page moves it into the tab's storage.
            << "  dashboard: " << url.substr(0, url.find(',')) << "/#token=" << *user_token << "\n"
            << "Ctrl-C stops the cluster.\n"
            << std::flush;

  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    stop = true;
  });
  int rc = 0;
  if (f.demo) {
    std::function<void()> midway;
    if (f.ha) {
      midway = [&] {
        std::vector<pid_t> pids;
        for (const Supervised& s : servers) pids.push_back(s.pid);
        DemoFailover(urls, pids, client);
      };
    }
    const bool ok = RunDemo(client, dir, stop, midway);
    if (f.exit_after_demo) {
      rc = ok ? 0 : 1;
      stop = true;
      pthread_kill(waiter.native_handle(), SIGTERM);
    }
  }
  // Keep every process running: a server killed (try `kill -9`) comes back
  // on the same store and its agents carry on; an agent comes back and
  // adopts or settles its node's tasks.
  while (!stop) {
    int status = 0;
    const pid_t ended = ::waitpid(-1, &status, WNOHANG);
    Supervised* who = nullptr;
    for (Supervised& srv : servers) {
      if (ended > 0 && ended == srv.pid) who = &srv;
    }
    for (Supervised& a : agents) {
      if (ended > 0 && ended == a.pid) who = &a;
    }
    if (who != nullptr && !who->Restart(status)) {
      rc = 1;
      pthread_kill(waiter.native_handle(), SIGTERM);
      break;
    }
    if (ended <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  waiter.join();
  std::cout << "stopping the cluster\n" << std::flush;
  shutdown();
  return rc;
}

}  // namespace muster::cli
