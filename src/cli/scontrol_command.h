// scontrol: Slurm's control command, for scripts written for Slurm. The
// muster binary runs it when called by the name `scontrol` (a link beside
// it) or as `muster scontrol`.
//
//   scontrol show hostnames [LIST]   each host of a host list on a line
//                                    (cli/hostlist.h; LIST defaults to
//                                    $SLURM_JOB_NODELIST, as in a job)
//   scontrol show hostlist LIST      the hosts of LIST as one host list
//   scontrol show job [ID]           the job (default $SLURM_JOB_ID) in
//                                    Slurm's Key=Value form: state and
//                                    reason, times, nodes, counts, TRES,
//                                    files (cli/slurm_jobs.h has the terms);
//                                    inside a job its own token reads it
//
// Anything else is refused ("scontrol: error: ...", exit 1) until it is
// supported.
#pragma once

#include <string>
#include <vector>

namespace muster::cli {

// `args` are the words after the command's name.
int RunScontrol(const std::vector<std::string>& args);

}  // namespace muster::cli
