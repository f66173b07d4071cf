// The two socket steps the job-side channels share (the interactive shell's
// relay and client, and Slurm steps' hosts and srun): listening on every
// address of a node, and connecting to "host:port".
#pragma once

#include <string>

#include "common/status.h"

namespace muster::shell {

// A listening socket (close-on-exec) on every address, IPv6 and IPv4 where
// the node has both, on `port` (0: a free one; SO_REUSEADDR, so a port
// whose last connections linger in TIME_WAIT is taken). Returns the socket
// and sets `port` to the bound one; Unavailable, with the reason, when the
// port cannot be bound.
StatusOr<int> ListenEverywhere(int& port, int backlog);

// A connected TCP socket (close-on-exec, TCP_NODELAY) to `endpoint`
// ("host:port" or "[v6]:port"), trying each address the name resolves to.
// Unavailable with the reason (cannot resolve, refused, ...).
StatusOr<int> Dial(const std::string& endpoint);

}  // namespace muster::shell
