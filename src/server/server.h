// `muster server`: opens the store, waits to lead (at once with SQLite; on
// PostgreSQL as a standby until the lease is free), restores the state,
// serves the API until SIGINT or SIGTERM, then stops cleanly (in-flight
// writes are made durable, then the lease is given up). SIGHUP reads the
// configuration file again and applies what a reload may
// (server/config_reload.h).
#pragma once

#include <string>

#include "server/options.h"

namespace muster::server {

// Runs the server; returns the process exit code. When `port_file` is set,
// the bound port is written there once the server accepts connections (for
// tests and scripts that ask for port 0). `config_path`: the file
// `options` were read from ("": none, and SIGHUP has nothing to reload).
int RunServer(const ServerOptions& options, const std::string& port_file, const std::string& config_path = "");

}  // namespace muster::server
