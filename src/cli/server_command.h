// `muster server`: the control plane (see src/server/server.h).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace muster::cli {

struct ServerFlags {
  std::string config;
  std::string listen;
  std::string store;
  std::string port_file;
  std::string log_level;
};

CLI::App* AddServerCommand(CLI::App& app, ServerFlags& flags);
int RunServerCommand(const ServerFlags& flags);

}  // namespace muster::cli
