// The wire between `srun` and the step hosts of a Slurm-style job.
//
// A Slurm-style job (a spec with `slurm`) holds N nodes, one replica on
// each. Its batch script runs once, as replica 0, on the first node; every
// other replica runs a step host (`muster step-host`, step_host.h), which
// waits for steps. `srun` in the script launches a step: its tasks on the
// nodes it names, the first node's as its own children, the others' through
// their step hosts, over one connection per node.
//
// Where: the server gives every replica MUSTER_STEP_HOSTS, each replica's
// "node=host:port" in replica order (kStepHostsVariable); a step host
// listens on its own entry's port (every address).
// Who: the connection is a shell::ShellChannel (TLS with a pre-shared key)
// whose key is derived from the attempt's job token (MUSTER_TOKEN), which
// every replica of the attempt holds and nobody else: only the job's own
// processes start tasks in it, and a new attempt's key differs.
//
// Frames, after the handshake:
//   srun -> host: kLaunch (a LaunchRequest, as JSON), then any number of
//                 kSignal (the signal number, in decimal);
//   host -> srun: kStarted (the tasks run) or kFailed (why not, in words;
//                 the host closes), then kStdout / kStderr (a 4-byte
//                 big-endian task id, then bytes) and one kExit per task
//                 (JSON {"task": ID, "status": S}: the exit code, or 128 +
//                 the signal that ended it); the host closes after the last.
// srun closing the connection early (it was killed) makes the host kill
// the step's tasks on its node.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace muster::step {

inline constexpr char kStepHostsVariable[] = "MUSTER_STEP_HOSTS";

inline constexpr char kLaunch = 'L';
inline constexpr char kSignal = 'K';
inline constexpr char kStarted = 'S';
inline constexpr char kFailed = 'F';
inline constexpr char kStdout = 'O';
inline constexpr char kStderr = 'E';
inline constexpr char kExit = 'X';

// One task of a step, placed on a node.
struct TaskPlace {
  int32_t id = 0;     // SLURM_PROCID: its rank in the step
  int32_t local = 0;  // SLURM_LOCALID: its rank on its node
};

// What a node of a step runs.
struct LaunchRequest {
  int32_t step = 0;
  std::vector<std::string> argv;
  std::string cwd;
  // The step's environment, before the node's and the task's own values
  // (step_env.h).
  std::map<std::string, std::string> env;
  int32_t node_index = 0;  // the node's place among the step's (SLURM_NODEID)
  std::vector<TaskPlace> tasks;
  int32_t gpus_per_task = 0;  // > 0: each task sees only its share of the node's GPUs
};

nlohmann::json LaunchToJson(const LaunchRequest& r);
// InvalidArgument naming the field for a malformed request.
StatusOr<LaunchRequest> LaunchFromJson(const nlohmann::json& j);

// A task's output frame: the task id, then the bytes.
std::string OutputFrame(int32_t task, std::string_view bytes);
// False for a frame too short to hold a task id.
bool ReadOutputFrame(std::string_view frame, int32_t& task, std::string_view& bytes);

struct StepHost {
  std::string node;
  std::string endpoint;  // "host:port"
};
// MUSTER_STEP_HOSTS's value (the server writes it: server/task_env.h);
// InvalidArgument when malformed.
StatusOr<std::vector<StepHost>> ParseStepHosts(std::string_view text);
// The port of an endpoint ("host:port", "[v6]:port"); 0 when there is none.
int EndpointPort(std::string_view endpoint);

// The channel's key (64 hex digits) for the attempt whose job token is
// `job_token`.
std::string StepKey(std::string_view job_token);

// A wait status as Slurm reports it: the exit code, or 128 + the signal.
int32_t StatusOfWait(int wait_status);

}  // namespace muster::step
