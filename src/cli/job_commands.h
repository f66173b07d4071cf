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

}  // namespace muster::cli
