// `muster agent`: the node agent (see src/agent/agent.h).
#pragma once

#include <string>
#include <vector>

#include "agent/agent.h"

namespace CLI {
class App;
}

namespace muster::cli {

struct AgentFlags {
  agent::AgentOptions options;
  std::string cpus;
  std::string memory;
  std::string leaf, spine, zone, rack;
  std::string pool;  // --pool: "spot" is --spot; another name, a node feature that comes first
  bool no_cgroups = false;
  bool as_self = false;
  bool shared_tmp = false;
  std::string log_retention;
  std::string start_jitter;
  std::string reclaim_poll;
  std::string log_level;
  std::string config;  // -c: a YAML file of flags (cli/flags_file.h)
};

CLI::App* AddAgentCommand(CLI::App& app, AgentFlags& flags);
int RunAgentCommand(AgentFlags& flags);

}  // namespace muster::cli
