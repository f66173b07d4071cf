// Accounting: what the cluster's GPUs did, from GET /v1/usage
// (server/usage_report.h).
//
//   muster usage   [--since T] [--until T] [--by queue|user|queue,user]
//                  [--queue Q] [--for-user U] [-o table|csv|json]
//       GPU-hours, cost, jobs and efficiency per line over the window
//       (default: the last 30 days), as Slurm's sreport.
//   muster history [--since T] [--until T] [--for-user U] [--queue Q]
//                  [--state S,...] [--limit N] [-o table|wide|csv|json]
//       Jobs that ended, with exit code, elapsed time, GPU-hours and
//       efficiency, as sacct and seff (default: all time; with a window,
//       the GPU-hours within it).
//
// Times are as cli/window_time.h reads them.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace muster::cli {

struct UsageCommands;
std::shared_ptr<UsageCommands> AddUsageCommands(CLI::App& app);
// The exit code of whichever command was parsed, or -1 if none was.
int RunUsageCommands(UsageCommands& commands);

}  // namespace muster::cli
