// What sbatch options ask for, read as Slurm 22.05 reads them, and the
// shape of the Muster job that runs it.
//
// A Slurm job is an allocation of nodes, each with its share of tasks:
// tasks x CPUs per task, GPUs per node (or per task, or the job's total
// divided among its nodes), memory per node (or per CPU, or per GPU). A
// Muster job is a gang of replicas; a Slurm job becomes one replica per
// node (onePerNode), each with that node's share:
//
//   --nodes=2 --ntasks-per-node=8 --cpus-per-task=10 --gres=gpu:8
//     -> 2 replicas on distinct nodes, each 80 CPUs, 8 GPUs, 16 tasks in all
//   --ntasks=384 --gpus-per-node=8 --exclusive  (no node count)
//     -> as few nodes as hold 384 tasks: with 128-CPU nodes, 3 whole nodes
//
// The rules, as Slurm's:
//  - nodes: --nodes (min[-max]: the minimum, as Slurm allocates when the
//    tasks fit); else ceil(ntasks / ntasks-per-node); else as few nodes as
//    hold ntasks x cpus-per-task CPUs on the largest node (needs its size);
//    else 1.
//  - tasks per node: --ntasks-per-node; else ceil(ntasks / nodes) (block
//    distribution: the first nodes get the most); else 1.
//  - CPUs per node: tasks per node x cpus-per-task (default 1); with
//    --overcommit, one task's CPUs per node; --exclusive: the whole node.
//  - GPUs per node: --gpus-per-node or --gres=gpu[:type]:N (equal when
//    both); else --gpus-per-task x tasks per node; else --gpus divided
//    evenly among the nodes; with --ntasks-per-gpu and --gpus, the tasks
//    follow from the GPUs (ntasks = gpus x ntasks-per-gpu).
//  - memory per node (MiB; Slurm's units: a bare number is MiB, K/M/G/T
//    with an optional B are powers of 1024): --mem (0: all of the node's,
//    which takes the node whole); else --mem-per-cpu x CPUs per node; else
//    --mem-per-gpu x GPUs per node; else the server's default. The three
//    exclude each other, as in sbatch.
//  - --constraint: node features, all required ("a&b" or "a,b"), each a
//    feature or a choice ("a|b", "(a|b)&c": each node has a or b; the
//    spec's features item "a|b"). Slurm's matching choice ("[a|b]": every
//    node the same one) and counts ("a*2") are refused.
//  - --array: indices and a %K limit on tasks running at once, in Slurm's
//    syntax (api/array_indices.h), checked here and sent as they are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/sbatch_options.h"
#include "common/status.h"

namespace muster::cli {

struct SlurmRequest {
  std::optional<int64_t> nodes_min, nodes_max;
  std::optional<int64_t> ntasks, ntasks_per_node, cpus_per_task, ntasks_per_gpu;
  std::optional<int64_t> gpus_per_node, gres_gpus, gpus_per_task, gpus;  // --gpus: the job's total
  std::optional<std::string> gpu_type;
  std::optional<int64_t> mem_mib, mem_per_cpu_mib, mem_per_gpu_mib;  // mem 0: all of each node's
  bool exclusive = false, overcommit = false;
  std::vector<std::string> features;  // --constraint, all required ("a|b": either)
  std::optional<std::string> array;   // Slurm's syntax (api/array_indices.h), checked
  // Where each option was given, for messages ("train.sh line 4: #SBATCH --mem").
  std::string mem_where;
};

// Takes one option into `r` (a later one replaces an earlier, as sbatch
// does). `where` names it in errors. True when the option is one of the
// resource options above; false leaves it to the caller.
StatusOr<bool> TakeResourceOption(SlurmRequest& r, const SbatchOption& o, const std::string& where);

struct SlurmShape {
  int64_t nodes = 1;
  int64_t tasks = 1;           // in all
  int64_t tasks_per_node = 1;  // the most on one node
  int64_t cpus_per_task = 1;
  int64_t cpus_per_node = 1;  // with exclusive: what was asked, the node gives more
  int64_t gpus_per_node = 0;
  int64_t gpus_per_task = 0;  // --gpus-per-task: srun binds each task to its share
  std::optional<std::string> gpu_type;
  std::optional<int64_t> memory_mib_per_node;  // nullopt: the server's default
  bool exclusive = false;                      // whole nodes (--exclusive, or --mem=0)
  std::vector<std::string> features;
  std::vector<std::string> warnings;
};

// The shape `r` asks for. `largest_node_cpus` is the CPU count of the
// largest node, needed only when tasks come without a node count (0:
// unknown, and then such a request is refused). `file` prefixes errors.
// --constraint's value as the spec's features: terms joined by & (or ','),
// each a name or names joined by |, alone or in parentheses. `where` names
// the option in errors.
StatusOr<std::vector<std::string>> ReadConstraint(const std::string& value, const std::string& where);

StatusOr<SlurmShape> ResolveSlurmShape(const SlurmRequest& r, int64_t largest_node_cpus, const std::string& file);

// A Slurm memory size in MiB ("228GB", "64G", "4096", "0"), or nullopt.
std::optional<int64_t> SlurmMemoryMib(const std::string& text);

}  // namespace muster::cli
