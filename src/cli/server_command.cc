#include "cli/server_command.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/log.h"
#include "server/options.h"
#include "server/server.h"

namespace muster::cli {

CLI::App* AddServerCommand(CLI::App& app, ServerFlags& f) {
  CLI::App* s = app.add_subcommand("server", "Run the control plane: API, scheduler and store");
  s->add_option("--config,-c", f.config, "Configuration file (YAML; see docs/configuration.md)");
  s->add_option("--listen", f.listen, "HOST:PORT to serve on (default 127.0.0.1:8470; port 0 = any free)");
  s->add_option("--store", f.store,
                "Store: a SQLite file (default muster.db) or postgres://... for several servers (HA)");
  s->add_option("--port-file", f.port_file, "Write the bound port to this file once serving");
  s->add_option("--log-level", f.log_level, "debug, info, warn or error (default $MUSTER_LOG_LEVEL, else info)");
  return s;
}

int RunServerCommand(const ServerFlags& f) {
  if (Status s = log::Init("muster server", f.log_level); !s.ok()) {
    std::cerr << "muster server: --" << s.ToString() << "\n";
    return 2;
  }
  server::ServerOptions options;
  if (!f.config.empty()) {
    auto loaded = server::LoadServerOptions(f.config);
    if (!loaded.ok()) {
      std::cerr << "muster server: " << loaded.status().message() << "\n";
      return 1;
    }
    options = std::move(*loaded);
  }
  if (!f.listen.empty()) {
    if (Status s = server::SetListen(options, f.listen); !s.ok()) {
      std::cerr << "muster server: --" << s.ToString() << "\n";
      return 1;
    }
  }
  if (!f.store.empty()) options.store_path = f.store;
  if (Status s = options.Validate(); !s.ok()) {
    std::cerr << "muster server: " << s.ToString() << "\n";
    return 1;
  }
  return server::RunServer(options, f.port_file, f.config);
}

}  // namespace muster::cli
