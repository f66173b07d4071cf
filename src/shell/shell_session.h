// The client end of an interactive shell: connects to a job's shell relay
// (shell_relay.h) and joins it to this process's terminal.
//
// When stdin is a terminal it is put in raw mode for the session (every
// key, ^C included, goes to the remote shell) and restored after, and the
// window's size follows SIGWINCH. Otherwise stdin is sent as it is, and
// its end becomes ^D on the remote terminal.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace muster::shell {

struct SessionOptions {
  std::string endpoint;  // "host:port" or "[v6]:port", as the relay announced it
  std::string key_hex;
  int64_t job = 0;
  int in_fd = 0, out_fd = 1;
};

// The remote command's exit status; Unavailable when the connection could
// not be made or was lost, Unauthenticated when the relay refused the key.
StatusOr<int> RunSession(const SessionOptions& options);

}  // namespace muster::shell
