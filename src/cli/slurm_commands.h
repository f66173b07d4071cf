// Slurm's queue commands, for people and scripts used to Slurm: the muster
// binary runs each when called by its name (a link beside it) or as
// `muster NAME`. They read and act through the job API as the caller
// (cli/slurm_jobs.h has how Muster's jobs read in Slurm's terms). Errors
// print "NAME: error: ..." on stderr with exit 1.
//
//   squeue [-h] [-o FORMAT] [-u USERS] [-t STATES] [-j JOBS] [-n NAMES]
//          [-p PARTITIONS] [-q QOS] [-A ACCOUNTS] [-w NODES] [--me] [-r]
//          [--start] [-l]
//     Active jobs (PENDING, RUNNING, COMPLETING; -t all adds those that
//     ended in the last 5 minutes, as Slurm's MinJobAge), oldest first.
//     FORMAT is squeue's (%[.][width]letter; default "%.18i %.9P %.8j %.8u
//     %.2t %.10M %.6D %R"); the pending tasks of an array share a line
//     ("3_[2-5%2]") unless -r.
//   scancel [JOB[_TASK]...] [-u USER] [-n NAME] [-t STATE] [-p PARTITION]
//           [-q QOS] [-A ACCOUNT] [--me] [-s SIGNAL]
//     Cancels the jobs named (an array's job id: all its tasks) that also
//     match the filters; with filters alone, every active job they match.
//     -s KILL, TERM or INT cancels; other signals are refused, as is
//     delivering one without cancelling.
//   sacct [-j JOBS] [-u USERS | -a] [-S TIME] [-E TIME] [-s STATES]
//         [--name NAMES] [-o FIELDS] [-P | -p] [-n] [-X]
//     Jobs (not steps: Muster records none) that were eligible between -S
//     (default: today's midnight; with -j: any time) and -E (now), the
//     caller's own unless -a or -u. FIELDS are sacct's names with an
//     optional %width (default "JobID,JobName,Partition,Account,AllocCPUS,
//     State,ExitCode"); -P separates them with "|", -p ends lines with one.
//   sinfo [-N] [-h] [-o FORMAT] [-p PARTITIONS] [-t STATES] [-n NODES]
//     Each queue is a partition over every node (the default queue marked
//     "*"); nodes grouped by state: idle, mix, alloc, drain (cordoned),
//     down (lost; "*" when not responding). -N: a line per node.
#pragma once

#include <string>
#include <vector>

namespace muster::cli {

// `args` are the words after the command's name.
int RunSqueue(const std::vector<std::string>& args);
int RunScancel(const std::vector<std::string>& args);
int RunSacct(const std::vector<std::string>& args);
int RunSinfo(const std::vector<std::string>& args);

}  // namespace muster::cli
