// sbatch: Slurm's batch submit, so that scripts and habits written for
// Slurm work unchanged. The muster binary runs it when called by the name
// `sbatch` (a link beside it) or as `muster sbatch`.
//
//   sbatch [options] script
//
// Options are sbatch 22.05's (cli/sbatch_options.h), read after the
// script's #SBATCH lines so that they win, with the meanings of
// cli/slurm_request.h and cli/script_directives.h. sbatch's input
// environment variables (SBATCH_PARTITION, SBATCH_TIMELIMIT, ...) stand for
// options between the two: over the script, under the command line. The
// submitting environment goes along unless --export says otherwise. It prints "Submitted
// batch job N", or N alone with --parsable (for an array, its first task's
// id, which Slurm calls the array's job id). Errors go to stderr as
// "sbatch: error: ..." with exit code 1, and nothing is submitted. The
// server is $MUSTER_SERVER (default http://127.0.0.1:8470).
//
// Words after the script are its arguments ($1, $2, ...). Without a
// script, it is read from standard input (the job's name is then
// "sbatch"); --wrap=CMD makes one of CMD (named "wrap"). --wait waits for
// the job (every task of an array) to end and exits with its exit code (0
// when it completed, else its exit code, else 1). Not yet: --test-only
// (refused, saying so).
#pragma once

#include <string>
#include <vector>

namespace muster::cli {

// `args` are the words after the command's name.
int RunSbatch(const std::vector<std::string>& args);

}  // namespace muster::cli
