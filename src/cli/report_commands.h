// The commands a running job uses to talk about itself (what
// python/muster_job.py does from Python), and the checkpoint listing:
//
//   muster progress [--step N] [--metric name=value]... [--message TEXT]
//   muster checkpoint commit DIR --step N
//   muster checkpoint list JOB
//
// Inside a job, the job id, attempt, server and user come from the
// environment the agent sets (MUSTER_JOB_ID, MUSTER_ATTEMPT, MUSTER_SERVER,
// USER); --job and --attempt override them. `progress` prints
// "checkpoint requested" and exits 3 when the job's attempt is being
// stopped (it should checkpoint and exit), else prints nothing and exits 0.
// `checkpoint commit` writes DIR's manifest (checkpoint/manifest.h) and
// registers it; a refused commit (a stale attempt) exits 1.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace muster::cli {

struct ReportCommands;
std::shared_ptr<ReportCommands> AddReportCommands(CLI::App& app);
// The exit code of whichever command was parsed, or -1 if none was.
int RunReportCommands(ReportCommands& commands);

}  // namespace muster::cli
