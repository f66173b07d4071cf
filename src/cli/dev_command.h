// `muster dev`: a whole local cluster in one command.
//
// Starts `muster server` (SQLite in the dev directory) and N `muster agent`
// processes with fake GPUs on loopback, each a real process of this binary
// in its own process group, prints where to look, and on Ctrl-C (or
// SIGTERM) stops the agents (which stop their tasks) and then the server.
//
// With --demo it also submits a demo workload: a two-replica PyTorch
// DistributedDataParallel training job (examples/ddp_digits.py, gloo on CPU,
// Debian's python3-torch and python3-sklearn), an array of small jobs, a
// gang spanning nodes and a job that depends on the training job; it prints
// each state change and, at the end, what the training job's replicas
// reported. --exit-after-demo then stops the cluster and exits 0 when every
// demo job completed.
//
// --server-config FILE: server settings of one's own, over those it writes
// (the store, listen address, agents and admins stay its own).
//
// With --ha: a local PostgreSQL (local_postgres.h) and three servers on it,
// one leading; agents and the CLI are given all three addresses. The demo
// then kills the leader with SIGKILL once its jobs run and reports how long
// until another leads; the killed one comes back as a standby.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace muster::cli {

struct DevFlags {
  int nodes = 4;
  std::string gpus = "8xH100";
  int port = 8470;
  std::string dir;
  bool demo = false;
  bool exit_after_demo = false;
  bool ha = false;
  // A YAML file of server settings (queues, prices, stragglers, ...): its
  // keys replace those muster dev writes and add to them.
  std::string server_config;
};

CLI::App* AddDevCommand(CLI::App& app, DevFlags& flags);
int RunDevCommand(const DevFlags& flags);

}  // namespace muster::cli
