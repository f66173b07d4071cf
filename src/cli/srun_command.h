// srun: Slurm's step launcher, inside a Slurm-style job (one that sbatch
// or a script's #SBATCH lines made). The muster binary runs it when called
// by the name `srun` (the agent puts a link to it first on every job's
// PATH) or as `muster srun`.
//
//   srun [options] command [args...]
//
// Launches a step (step/step_launch.h): its tasks on nodes of the job's
// allocation (MUSTER_STEP_HOSTS), each with Slurm's per-task variables
// (step/step_env.h) and the step's: SLURM_STEP_ID (0, 1, ... per attempt),
// SLURM_STEP_NUM_NODES, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST,
// SLURM_STEP_TASKS_PER_NODE, and SLURM_NNODES, SLURM_NTASKS, SLURM_NPROCS,
// SLURM_NODELIST, SLURM_TASKS_PER_NODE, SLURM_DISTRIBUTION,
// SLURM_LAUNCH_NODE_IPADDR as srun sets them.
//
// Which nodes and how many tasks, as srun reads them in an allocation:
//  - -w/--nodelist (a host list) picks nodes, -x/--exclude leaves some out;
//    -N/--nodes (a count, or min-max: the minimum) how many, the first of
//    the allocation (or of --nodelist, topped up from the rest);
//  - -n/--ntasks the tasks; without it, --ntasks-per-node on each node;
//    without either, the job's own counts (SLURM_NTASKS, and
//    SLURM_NTASKS_PER_NODE per node where -N or -w chose the nodes);
//  - tasks fill the nodes in order, block by block (--ntasks-per-node, or
//    as evenly as whole blocks allow), as Slurm's default distribution.
// Also: -l/--label, -K/--kill-on-bad-exit, -W/--wait, --export (ALL by
// default, as Slurm), -D/--chdir, -c/--cpus-per-task (SLURM_CPUS_PER_TASK),
// --gpus-per-task (each task sees its share of its node's GPUs), --jobid
// (this job only), -o/-e (a file for the step's output, with %j and %s).
// Options about binding, resources and accounting that change nothing
// inside a Muster allocation (--overlap, --exact, --mpi, --cpu-bind,
// --mem, --time, ...) are accepted; those that cannot apply (--pty,
// --multi-prog, --container-image, --het-group, ...) are refused, saying so.
// Errors: "srun: error: ..." on stderr, exit 1.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "step/step_launch.h"

namespace muster::cli {

// What srun reads of the job it runs in.
struct SrunJob {
  int64_t job = 0;
  std::string token;                       // MUSTER_TOKEN
  std::vector<step::StepHost> hosts;       // the allocation's nodes, in order
  int32_t self = 0;                        // srun's own node among them
  std::map<std::string, std::string> env;  // srun's environment
  std::string cwd;
  int32_t step = 0;
};

// From srun's environment; FailedPrecondition outside a Slurm-style job.
StatusOr<SrunJob> SrunJobFromEnvironment();

struct SrunPlan {
  step::StepRun run;
  std::string output, error;  // -o/-e: files for the step's stdout/stderr
  std::vector<std::string> warnings;
};

// `args`: the words after the command's name. InvalidArgument, saying why,
// for options srun would refuse or that cannot apply here.
StatusOr<SrunPlan> PlanSrun(const std::vector<std::string>& args, const SrunJob& job);

int RunSrun(const std::vector<std::string>& args);

// `muster step-host`: what the nodes of a Slurm-style job but the first
// run (step/step_host.h), configured from the replica's environment.
int RunStepHostCommand();

}  // namespace muster::cli
