#include "server/server.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "common/clock.h"
#include "server/control_loop.h"
#include "server/http_api.h"
#include "store/sqlite/sqlite_store.h"

namespace muster::server {

int RunServer(const ServerOptions& options, const std::string& port_file) {
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
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto store = store::SqliteStore::Open(options.store_path);
  if (!store.ok()) {
    std::fprintf(stderr, "muster server: %s\n", store.status().ToString().c_str());
    return 1;
  }
  SystemClock clock;
  ControlLoop loop(options, clock, **store);
  if (Status s = loop.Start(); !s.ok()) {
    std::fprintf(stderr, "muster server: cannot start: %s\n", s.ToString().c_str());
    return 1;
  }
  HttpApi api(options, clock, loop, **store);
  if (Status s = api.Bind(); !s.ok()) {
    std::fprintf(stderr, "muster server: %s\n", s.ToString().c_str());
    return 1;
  }
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    api.Stop();
  });
  std::printf("muster server: listening on http://%s:%d, store %s, %zu node%s\n", options.host.c_str(), api.port(),
              options.store_path.c_str(), loop.nodes_at_start(), loop.nodes_at_start() == 1 ? "" : "s");
  std::fflush(stdout);
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << api.port() << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
  api.Serve();
  // Serve returned: a signal stopped it (or the listener failed).
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  loop.Stop();
  std::printf("muster server: stopped\n");
  return 0;
}

}  // namespace muster::server
