// The user commands that talk to `muster server`: submit, get, describe,
// why, cancel, hold, release, requeue, history. See docs/cli.md.
#pragma once

namespace CLI {
class App;
}

namespace muster::cli {

// Registers the commands on `app`. Returns a function that runs whichever
// was parsed and returns the exit code, or -1 if none of them was.
struct JobCommands;
JobCommands* AddJobCommands(CLI::App& app);
int RunJobCommands(JobCommands* commands);
void DeleteJobCommands(JobCommands* commands);

}  // namespace muster::cli
