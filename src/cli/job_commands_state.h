// JobCommands: the flags and arguments of the job commands (submit, run,
// get, describe, why, logs and the actions), as parsed. Internal to the
// job commands: job_commands.cc registers and runs them, job_spec_flags.cc
// turns the submit flags (or a file, or a batch script) into a spec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/sbatch_options.h"
#include "cli/script_directives.h"

namespace CLI {
class App;
}

namespace muster::cli {

struct JobCommands {
  std::string server;
  std::string act_as;  // --as: an admin acting for this user
  std::string output = "table";
  CLI::App* submit = nullptr;
  CLI::App* run = nullptr;
  CLI::App* get = nullptr;
  CLI::App* describe = nullptr;
  CLI::App* why = nullptr;
  CLI::App* logs = nullptr;
  std::vector<std::pair<CLI::App*, std::string>> actions;
  CLI::App* signal = nullptr;
  std::vector<std::pair<CLI::App*, std::string>> node_actions;

  // submit
  std::string file;
  std::string name, queue, priority, gpu_type, cpus, memory, time, after, chdir, stdout_path, stderr_path, image,
      reservation;
  std::vector<std::string> mounts;     // HOST:CONTAINER[:ro]
  std::optional<int64_t> gpus, retry;  // unset unless given; the server checks the values
  std::string array;                   // a count, or Slurm's indices ("1-10%2")
  bool one_per_node = false, exclusive = false;
  std::vector<std::string> features;
  std::vector<SbatchOption> sbatch_command_line;                         // sbatch's own options (cli/sbatch_command.h)
  bool as_sbatch = false;                                                // run as sbatch: its words in messages
  std::optional<std::string> slurm_partition, slurm_qos, slurm_account;  // from #SBATCH
  std::optional<SlurmShape> slurm_shape;
  bool export_all = false;
  std::optional<ScriptSettings::LimitSignal> limit_signal;  // #SBATCH --signal
  std::vector<std::string> script_args;                     // after a batch script: its $1, $2, ...
  std::optional<std::string> replicas;                      // "4", or "1:4" (elastic)
  std::vector<std::string> env;                             // NAME=VALUE, or NAME for the value here
  bool hold = false, spot = false, parsable = false;
  bool interactive = false;  // run
  std::vector<std::string> command;
  bool double_dash = false;  // "--" was given: what follows is a command
  // get
  std::string kind;
  std::string state, filter_queue, filter_user, filter_name, selector;
  int64_t limit = 0;
  bool watch = false;
  // describe / why / actions
  std::string signal_name, signal_to;  // signal
  std::string limit_signal_flag;       // submit --signal [B:]SIG[@TIME]
  std::string describe_kind;
  std::vector<std::string> ids;  // "12", or a range "5-104" (what submit --array prints)
  std::vector<std::string> nodes;
  std::string deadline = "2m";  // reclaim
  int64_t id = 0;
  // logs
  int64_t replica = 0, attempt = 0, tail = -1;
  bool follow = false;
};

}  // namespace muster::cli
