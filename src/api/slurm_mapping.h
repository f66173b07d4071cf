// A site's Slurm names, mapped onto Muster's: a job's QOS onto a priority
// class, its partition onto a node pool (node features) and queue, its
// account onto a queue. The server's `slurm` configuration holds the
// tables (docs/configuration.md); sbatch's --qos, --partition and
// --account send the names as the spec's `slurm` object.
//
//   slurm:
//     qos: {normal: normal, high: high, qos_gpu-t3: normal}
//     partitions: {gpu: {}, hopper-prod: {features: [h100]}, debug: {queue: debug}}
//     accounts: {six@gpu: research}
//
// The rules: a name that a configured table does not hold is refused,
// listing the names it holds. Without a `qos` table a QOS is refused (no
// QOS exists); without a `partitions` table a partition is the queue of
// that name; without an `accounts` table an account is kept for the
// record only. A queue the spec names itself wins over a mapped one, and
// an account's queue over a partition's; a priority the spec names itself
// wins over a QOS's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace muster::api {

struct SlurmMapping {
  std::map<std::string, std::string> qos;  // QOS -> priority class
  struct Partition {
    std::optional<std::string> queue;
    std::vector<std::string> features;  // its nodes': every job of it requires them
    bool operator==(const Partition&) const = default;
  };
  std::map<std::string, Partition> partitions;
  std::map<std::string, std::string> accounts;  // account -> queue
};

// A job submitted as a Slurm job: its names, and its tasks as Slurm
// counts them (a replica is one node of the allocation), which its
// SLURM_NTASKS, SLURM_NTASKS_PER_NODE and SLURM_CPUS_PER_TASK say.
struct SlurmSpec {
  std::optional<std::string> partition, qos, account;
  int32_t tasks = 0;           // 0: one per replica
  int32_t tasks_per_node = 0;  // the most on one node; 0: one
  int32_t cpus_per_task = 0;   // 0: the replica's CPUs
  int32_t gpus_per_task = 0;   // 0: every task sees its node's GPUs
  bool operator==(const SlurmSpec&) const = default;
};

// What `names` make of a spec: the queue, priority class and features to
// add. Fields left unset leave the spec's own. InvalidArgument naming
// `path` + ".qos" (etc.) for a name the mapping refuses.
struct SlurmPlacement {
  std::optional<std::string> queue, priority;
  std::vector<std::string> features;
};
// Per-node counts in Slurm's run-length form: {8, 8, 4} is "8(x2),4", as
// SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE write them.
std::string SlurmRunLengths(const std::vector<int32_t>& counts);

// Slurm's order of a job's nodes: by name, a trailing number compared as a
// number ("gpu2" before "gpu10"). The batch script runs on the first.
bool SlurmNodeOrderLess(const std::string& a, const std::string& b);

StatusOr<SlurmPlacement> MapSlurmNames(const SlurmSpec& names, const SlurmMapping& mapping, const std::string& path);

}  // namespace muster::api
