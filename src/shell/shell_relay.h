// The shell relay: what an interactive job runs (`muster shell-serve`) so
// that its user gets a terminal inside the job's allocation, with its GPUs,
// CPUs, memory limit and environment.
//
//  1. Listens on a free TCP port of the node (every address) and announces
//     "host:port" (the caller posts it as the job's `shell` endpoint).
//  2. Takes the first connection that completes the handshake with the
//     job's key within `accept_timeout` (shell_channel.h); connections that
//     fail it are closed and the relay waits on. No user in time: exits 124.
//  3. Starts the command (default: $SHELL, else /bin/sh) on a new
//     pseudo-terminal of the size the client sent, and relays bytes both
//     ways, window size changes included.
//  4. When the command exits, sends its status and exits with it, so the
//     job ends COMPLETED or FAILED as the shell did. A lost connection
//     hangs the command up (SIGHUP) and exits 129; SIGTERM (a cancel, the
//     time limit) says so on the terminal, hangs up and exits 143.
// One session per job: a relay never takes a second user.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace muster::shell {

struct RelayOptions {
  int64_t job = 0;
  std::string key_hex;            // MUSTER_SHELL_KEY
  std::string advertise_host;     // how clients reach this node (MASTER_ADDR)
  std::vector<std::string> argv;  // empty: the user's shell
  Duration accept_timeout = Duration::Minutes(2);
  // Called once with "host:port" before the relay accepts; an error ends it.
  std::function<Status(const std::string& endpoint)> announce;
};

// Runs the relay; returns its exit status (above). Errors before a session
// (no port, the announcement refused) print to stderr and return 1.
int RunRelay(const RelayOptions& options);

}  // namespace muster::shell
