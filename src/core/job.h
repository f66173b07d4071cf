// Job: what a user submitted (JobSpec) and where it stands (JobState).
//
// States follow Slurm's vocabulary (codes in JobStateCode). Terminal states
// never change; the allowed transitions are the table in job.cc, checked by
// IsValidTransition(). A retry or requeue is a new attempt under the same id
// and returns the job to PENDING.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "core/resources.h"

namespace muster::core {

using JobId = int64_t;

enum class JobState : uint8_t {
  kPending,
  kHeld,
  kStarting,
  kRunning,
  kCompleting,
  kCompleted,
  kFailed,
  kCancelled,
  kTimeout,
  kOutOfMemory,
  kNodeFail,
  kPreempted,
};

const char* JobStateName(JobState s);  // "PENDING"
// The state named `name` ("PENDING"), or nullopt.
std::optional<JobState> JobStateFromName(std::string_view name);
const char* JobStateCode(JobState s);  // Slurm code: "PD"
bool IsTerminal(JobState s);
// Whether the state named `name` ("COMPLETED") is terminal: the one check of
// "has this job ended" for what reads states as names (the CLI, the Slurm
// commands). A name this build does not know is not.
bool IsTerminalName(std::string_view name);
bool IsValidTransition(JobState from, JobState to);

// kAfterCorr (Slurm's aftercorr) names an array: the server turns it into
// afterok on the task of the same index (server/array_dependencies.h); the
// scheduler reads one left over as afterok.
enum class DependencyType : uint8_t { kAfterOk, kAfterAny, kAfterNotOk, kAfter, kAfterCorr };
const char* DependencyTypeName(DependencyType t);  // "afterok"

struct Dependency {
  DependencyType type = DependencyType::kAfterOk;
  JobId job = 0;
  // kAfter only: how long after the job started (or was cancelled before
  // it did) this one may start; Slurm's after:ID+MINUTES.
  Duration delay = Duration::Zero();
  bool operator==(const Dependency&) const = default;
};

// How far apart the replicas of a gang may be placed. Every scope includes
// the nearer ones: kLeaf allows one node or several nodes under one leaf.
// kAny is "prefer near, allow anything".
enum class TopologyScope : uint8_t { kNode, kLeaf, kSpine, kAny };
const char* TopologyScopeName(TopologyScope s);

// The scheduling-relevant part of a job spec. (The API's job spec, issue 4,
// adds command, image, env, checkpoint and retry settings.)
struct JobSpec {
  std::string name;
  std::string queue = "default";
  std::string priority_class = "normal";
  // Who submitted it: its run time predicts how long this user's next jobs
  // run (run_time_predictor.h). Empty: unknown.
  std::string user;
  int32_t replicas = 1;  // gang size: all replicas start together or none
  // Elastic (0 < min_replicas < replicas): it starts with as many replicas
  // as fit, at least min_replicas and at most `replicas`, grows while
  // capacity is free, and gives back its newest replicas above the minimum
  // to jobs that need the room (scheduler.h). 0: exactly `replicas`.
  int32_t min_replicas = 0;
  Resources per_replica;  // resources of one replica
  std::string gpu_type;   // empty = any type (all replicas get the same type)
  // Node features every node it runs on must have (a container job needs
  // "containers", and "gpu-containers" when it has GPUs).
  std::vector<std::string> required_features;
  Duration time_limit = Duration::Infinite();
  TopologyScope topology = TopologyScope::kAny;
  // Each replica on a node of its own (Slurm's --nodes=N: N distinct
  // nodes), never two of the gang on one machine.
  bool one_per_node = false;
  // Each replica holds a whole node, idle when it starts (Slurm's
  // --exclusive): all of the node's GPUs, CPUs and memory, shared with no
  // other job. Implies one_per_node.
  bool exclusive = false;
  // A job array's limit on its tasks running at once (Slurm's
  // --array=...%K): a job of run_group (the array's first id) starts only
  // while fewer than run_group_limit of the group run. 0: no limit.
  JobId run_group = 0;
  int32_t run_group_limit = 0;
  std::vector<Dependency> dependencies;
  // Slurm's "?": any one of the dependencies holding is enough (else all must).
  bool dependencies_any = false;
  std::optional<Time> begin_time;
  bool hold = false;
  // An admin reservation by name (AdminReservation): the job runs only on its
  // nodes, within its window. Empty: none.
  std::string reservation;
  // How often it writes a checkpoint on its own (api: checkpoint.interval).
  // Infinite: never, or only when signalled. With spot nodes in the
  // cluster, a job allowed on them that checkpoints this often or more is
  // placed there first (SchedulerOptions::spot_checkpoint_interval).
  Duration checkpoint_interval = Duration::Infinite();
  // Known run time, used only by the simulator's SJF baseline. Infinite = unknown.
  Duration known_duration = Duration::Infinite();
};

}  // namespace muster::core
