#include "server/server.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "auth/token.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/service_notify.h"
#include "server/authenticator.h"
#include "server/config_reload.h"
#include "server/control_loop.h"
#include "server/http_api.h"
#include "server/job_mirror.h"
#include "server/leadership.h"
#include "store/open_store.h"

namespace muster::server {
namespace {

// Opens the store. A PostgreSQL server may be down or failing over: wait
// for it, saying so once, until it answers or a signal in `signals` comes.
StatusOr<store::OpenedStore> OpenStoreWaiting(const std::string& url, const sigset_t& signals) {
  auto opened = store::OpenStore(url);
  if (opened.ok() || !store::IsPostgresUrl(url) || opened.status().code() != StatusCode::kUnavailable) return opened;
  log::Warn("waiting for the store: {}", opened.status().ToString());
  while (true) {
    const timespec second{1, 0};
    // SIGHUP while waiting: the file is read as the server starts anyway.
    if (const int sig = sigtimedwait(&signals, nullptr, &second); sig > 0 && sig != SIGHUP) return opened;
    opened = store::OpenStore(url);
    if (opened.ok() || opened.status().code() != StatusCode::kUnavailable) return opened;
  }
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "server";
  return name;
}

// The credentials a leader checks: the token records, and the cluster key
// job tokens are signed with (made once, kept in the store's meta, shared
// by every server of the cluster). Called by the leader (its writes
// fenced) before the loop starts.
Status LoadCredentials(store::Store& store, ControlLoop& loop, Authenticator& authn) {
  ASSIGN_OR_RETURN(std::vector<store::TokenRow> tokens, store.ListTokens());
  authn.Load(tokens);
  ASSIGN_OR_RETURN(std::optional<std::string> key, store.GetMeta("clusterKey"));
  if (!key) {
    key = auth::RandomHex(32);
    store::WriteBatch b;
    b.meta.push_back({"clusterKey", *key});
    RETURN_IF_ERROR(store.Commit({&b}));
  }
  authn.SetClusterKey(*key);
  loop.SetJobTokenKey(*key);
  return Status::Ok();
}

// Tokens another process wrote into the store (`muster token create
// --store` beside a server running on PostgreSQL) are honoured within a
// refresh; the API's own changes reach the authenticator at once.
class TokenRefresh {
 public:
  static constexpr std::chrono::seconds kEvery{5};
  TokenRefresh(store::Store& store, Authenticator& authn) : store_(store), authn_(authn), thread_([this] { Run(); }) {}
  ~TokenRefresh() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyAll();
    thread_.join();
  }

 private:
  void Run() {
    MutexLock lock(mu_);
    while (true) {
      const auto until = std::chrono::steady_clock::now() + kEvery;
      while (!stop_ && cv_.WaitFor(lock, until - std::chrono::steady_clock::now())) {
      }
      if (stop_) return;
      lock.Unlock();
      if (auto tokens = store_.ListTokens(); tokens.ok()) authn_.Merge(*tokens);
      lock.Lock();
    }
  }

  store::Store& store_;
  Authenticator& authn_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: it runs once the rest is made
};

// An elected server's life: a standby that follows the store's job rows
// (so that taking over reads only what changed since its last look) until
// the lease is its own, then the new leader: its writes fenced, its state
// restored from those rows, leading. A start that fails stops the API.
void StandByThenLead(Leadership& leadership, store::Store& store, ControlLoop& loop, HttpApi& api, Authenticator& authn,
                     std::atomic<bool>& start_failed) {
  JobMirror mirror(store);
  std::string mirror_error;
  const auto follow = [&] {
    const Status s = mirror.CatchUp();
    if (!s.ok() && s.message() != mirror_error) {
      log::Warn("standby: cannot follow the store: {}", s.ToString());
    }
    mirror_error = s.ok() ? "" : s.message();
  };
  const auto epoch = leadership.Acquire(
      [](const std::string& why) {
        log::Error("lost leadership: {}; exiting", why);
        std::fflush(stderr);
        std::_Exit(kExitLostLeadership);
      },
      follow);
  if (!epoch) return;
  const auto began = std::chrono::steady_clock::now();
  store.FenceWrites(*epoch);
  // What the last leader committed before the lease changed hands (it can
  // commit nothing after: the fence).
  follow();
  const bool followed = mirror_error.empty();
  std::vector<store::JobRow> rows = mirror.Take();
  const size_t jobs = rows.size();
  Status started = LoadCredentials(store, loop, authn);
  if (started.ok()) started = loop.Start(*epoch, followed ? &rows : nullptr);
  if (Status s = started; !s.ok()) {
    log::Error("cannot start: {}", s.ToString());
    start_failed = true;
    api.Stop();
    return;
  }
  leadership.Lead();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
  const std::string source =
      followed ? std::to_string(jobs) + " jobs followed as a standby" : "jobs read from the store";
  log::Info("leader (epoch {}), state restored in {} ms ({}), {} node{}", *epoch, ms.count(), source,
            loop.nodes_at_start(), loop.nodes_at_start() == 1 ? "" : "s");
}

}  // namespace

int RunServer(const ServerOptions& options, const std::string& port_file, const std::string& config_path) {
  // The configuration text in force, for a reload to compare with.
  std::string in_force_yaml;
  if (!config_path.empty()) {
    std::ifstream in(config_path);
    std::stringstream text;
    text << in.rdbuf();
    in_force_yaml = text.str();
  }
  // Every connection is a descriptor: take all the process may have (the
  // soft limit is often 1,024; the server allows 10,000 connections).
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  // Signals go to one waiting thread; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // The certificate first: a server that cannot serve HTTPS as configured
  // must not start (nor take the lead from one that can).
  std::shared_ptr<const http::TlsServerContext> tls;
  if (!options.tls_cert.empty()) {
    auto loaded = http::TlsServerContext::FromFiles(options.tls_cert, options.tls_key);
    if (!loaded.ok()) {
      log::Error("{}", loaded.status().WithFieldPrefix("server").ToString());
      return 1;
    }
    tls = std::move(*loaded);
  }
  auto opened = OpenStoreWaiting(options.store_path, signals);
  if (!opened.ok()) {
    log::Error("{}", opened.status().ToString());
    return 1;
  }
  store::Store& store = *opened->store;
  SystemClock clock;
  ServerMetrics metrics;
  ControlLoop loop(options, clock, store);
  loop.SetMetrics(&metrics);
  Authenticator authn(clock, options.auth.munge_socket);
  Leadership leadership(opened->lease.get(), {options.server_name, options.advertise, options.leader_lease,
                                              options.lease_renew_every, options.standby_poll_every});
  // Alone on its store (SQLite): restore before serving, as always.
  if (!leadership.elected()) {
    Status started = LoadCredentials(store, loop, authn);
    if (started.ok()) started = loop.Start();
    if (!started.ok()) {
      log::Error("cannot start: {}", started.ToString());
      return 1;
    }
    leadership.Lead();
  }
  HttpApi api(options, clock, loop, store, leadership, authn, metrics, tls);
  if (Status s = api.Bind(); !s.ok()) {
    log::Error("{}", s.ToString());
    return 1;
  }
  const bool ipv6 = options.host.find(':') != std::string::npos;
  const std::string listening = (tls ? "https://" : "http://") + (ipv6 ? "[" + options.host + "]" : options.host) +
                                ":" + std::to_string(api.port());
  std::thread waiter([&] {
    int sig = 0;
    while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
      if (config_path.empty()) {
        log::Warn("SIGHUP: this server was started without a configuration file; nothing to reload");
      } else {
        (void)NotifyServiceManager("RELOADING=1");
        (void)ReloadConfig(config_path, in_force_yaml, loop);
        (void)NotifyServiceManager("READY=1");
      }
    }
    (void)NotifyServiceManager("STOPPING=1");
    leadership.CancelAcquire();
    api.Stop();
  });
  // Elected: a standby until the lease is free, then restore and lead.
  std::atomic<bool> start_failed{false};
  std::thread elect;
  if (leadership.elected()) {
    leadership.SetIdentity(
        options.server_name.empty() ? HostName() + ":" + std::to_string(api.port()) : options.server_name,
        options.advertise.empty() ? listening : options.advertise);
    log::Info("listening on {}, store {}, standby", listening, opened->description);
    elect = std::thread([&] { StandByThenLead(leadership, store, loop, api, authn, start_failed); });
  } else {
    log::Info("listening on {}, store {}, {} node{}", listening, opened->description, loop.nodes_at_start(),
              loop.nodes_at_start() == 1 ? "" : "s");
  }
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << api.port() << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
  // Serving (a standby answers too: it names the leader), so systemd may
  // start what comes after this unit.
  if (Status s = NotifyServiceManager("READY=1\nSTATUS=listening on " + listening +
                                      (leadership.elected() ? " (elected: standby until it leads)" : ""));
      !s.ok()) {
    log::Warn("{}", s.ToString());
  }
  {
    TokenRefresh refresh(store, authn);
    api.Serve();
  }
  // Serve returned: a signal stopped it (or the listener failed).
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  leadership.CancelAcquire();
  if (elect.joinable()) elect.join();
  loop.Stop();
  leadership.Stop();  // after the last write: a standby takes over at once
  log::Info("stopped");
  return start_failed ? 1 : 0;
}

}  // namespace muster::server
