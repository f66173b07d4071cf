// The user commands that talk to `muster server`: submit, get, describe,
// why, cancel, hold, release, requeue, history. See docs/cli.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/sbatch_options.h"
#include "common/status.h"

namespace CLI {
class App;
}

namespace muster::cli {

// Registers the commands on `app`; the returned state holds their flags and
// must outlive parsing. RunJobCommands() runs whichever was parsed and
// returns its exit code, or -1 if none of them was.
struct JobCommands;
std::shared_ptr<JobCommands> AddJobCommands(CLI::App& app);
int RunJobCommands(JobCommands& commands);
// Tells the commands the raw arguments, before parsing: `muster submit
// train.sh` submits the script's text, `muster submit -- ./train.sh` runs
// the file, and only the raw arguments tell the two apart.
void NoteRawArguments(JobCommands& commands, int argc, char** argv);

// The spec (JSON) that a batch script (the first of `script_and_args`; the
// rest are its arguments) becomes as `muster submit`
// reads it, with sbatch's own options `command_line` after its #SBATCH
// lines (cli/sbatch_command.h). `client` answers the node sizes some
// Slurm requests need. InvalidArgument for what cannot be read.
class Client;
StatusOr<std::string> SbatchSpec(const std::vector<std::string>& script_and_args,
                                 std::vector<SbatchOption> command_line, Client& client);

}  // namespace muster::cli
