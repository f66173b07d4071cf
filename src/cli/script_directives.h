// Job settings written into a batch script, as sbatch reads them.
//
// `muster submit train.sh` sends the script's text as the job's `script`
// and reads its directives: lines at the top of the script that start with
// `#MUSTER` (muster submit's own flags) or `#SBATCH` (Slurm's, for scripts
// written for Slurm). As in sbatch, directives end at the first line that
// is neither blank nor a comment, and a flag on the command line wins over
// the same setting in the script.
//
// #SBATCH words are read as sbatch reads them (sbatch_options.h:
// abbreviations, short forms, optional arguments), and mean what they mean
// to Slurm: the resource options make a per-node shape (slurm_request.h)
// that becomes one replica per node; --partition, --qos and --account are
// the spec's slurm names, which the server maps (api/slurm_mapping.h);
// --export=ALL, sbatch's default, sends the submitting environment. The
// table in docs/cli.md ("Slurm batch scripts") lists every option. #MUSTER
// takes muster submit's flags (and --retry N, --env NAME[=VALUE],
// --stdout, --stderr); a #MUSTER setting wins over an #SBATCH one.
// Any other flag is an error naming the line: it may change where or how
// the job runs, so it is never dropped silently.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/slurm_request.h"
#include "common/status.h"

namespace muster::cli {

struct ScriptSettings {
  std::optional<std::string> name, queue, priority, gpu_type, cpus, memory, time, after, chdir, stdout_path,
      stderr_path, image;
  std::optional<std::string> reservation;  // an admin reservation's name (--reservation)
  std::vector<std::string> mounts;         // HOST:CONTAINER[:ro] (pyxis's --container-mounts, #MUSTER --mount)
  std::optional<int64_t> gpus, replicas, array, retry;                   // gpus: per replica
  std::optional<std::string> array_indices;                              // #SBATCH --array, in Slurm's syntax
  std::optional<std::string> slurm_partition, slurm_qos, slurm_account;  // the spec's slurm names
  bool one_per_node = false, exclusive = false;
  std::vector<std::string> features;  // required node features
  // The Slurm job the #SBATCH lines ask for, when there are any.
  std::optional<SlurmShape> slurm;
  std::vector<std::string> env;  // NAME=VALUE, or NAME for the submitting shell's value
  // The submitting shell's whole environment goes along (sbatch's default,
  // --export=ALL), but for Muster's and Slurm's own variables.
  bool export_all = false;
  bool hold = false;
  bool spot = false;
  // --signal=[{R|B}:]SIG[@TIME]: SIG (as "SIGUSR1") TIME seconds before the
  // time limit, to srun's tasks ("steps"), or with B: to the batch shell
  // ("batch"): the spec's limitSignal.
  struct LimitSignal {
    std::string signal;
    int64_t before_seconds = 60;
    std::string to = "steps";
  };
  std::optional<LimitSignal> limit_signal;
  std::vector<std::string> warnings;  // "train.sh line 4: #SBATCH --mail-type is ignored ..."
};

// A time limit as sbatch's -t takes it, for the spec: a bare number is
// minutes ("30" -> "30m"); 0, INFINITE and UNLIMITED are "unlimited"; any
// other text is passed on as it is.
std::string SlurmTimeLimit(const std::string& value);

// sbatch's --signal=[{R|B}:]SIG[@TIME] (TIME: seconds, default 60, at most
// 65535); `flag` names the option in errors. R: (a reservation's end) is
// read and has no effect.
StatusOr<ScriptSettings::LimitSignal> ReadSignalOption(const std::string& value, const std::string& flag);

// Reads the directives of `script`; `file` names it in messages.
// InvalidArgument, naming the file, line and flag, for a flag it cannot
// honour or a value that does not parse. `largest_node_cpus` is asked
// only when #SBATCH gives tasks without a node count (slurm_request.h).
// `command_line`: sbatch's own options, read after the directives (a
// later option wins, as in sbatch).
StatusOr<ScriptSettings> ReadScriptDirectives(const std::string& script, const std::string& file,
                                              const std::function<StatusOr<int64_t>()>& largest_node_cpus = nullptr,
                                              const std::vector<SbatchOption>& command_line = {});

}  // namespace muster::cli
