// The spec that `muster submit` and `muster run` send: from the spec
// flags (AddSpecFlags), a spec file, or a batch script with its #SBATCH
// lines (cli/script_directives.h), in that order of precedence as
// docs/cli.md says. Also what `sbatch` submits (SbatchSpec, in
// job_commands.h).
#pragma once

#include <string>
#include <utility>

#include "cli/job_commands_state.h"
#include "common/status.h"

namespace muster::cli {

class Client;

// The help group of submit's flags that make a spec (refused beside a file).
inline constexpr const char* kSpecFlags = "Job settings (instead of a file)";

// Registers the flags that make a spec on `sub` (submit and run).
void AddSpecFlags(CLI::App* sub, JobCommands& c);

// The request body and its content type for `c`. `client` (may be null)
// answers the node sizes some Slurm requests need.
StatusOr<std::pair<std::string, std::string>> BuildSpec(JobCommands& c, Client* client);

}  // namespace muster::cli
