// The user commands that talk to `muster server`: submit, get, describe,
// why, cancel, hold, release, requeue, history. See docs/cli.md.
#pragma once

#include <memory>

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

}  // namespace muster::cli
