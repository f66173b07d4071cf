// The step host: what each node of a Slurm-style job but the first runs
// (`muster step-host`, started by the node's agent as the replica's
// command), so that `srun` in the batch script can start tasks there
// (step_wire.h).
//
//  1. Listens on its port (every address) and serves each connection that
//     completes the handshake with the attempt's key on a thread of its
//     own: one step's tasks on this node (task_group.h), their output and
//     exits sent back, signals from srun passed on. A connection that fails
//     the handshake is closed and logged on stderr (the replica's log).
//  2. Signals it gets itself (its agent signals the replica's process
//     group: a stop, the checkpoint signal) reach its tasks directly, as
//     they share its group; the same signal forwarded by srun within a
//     second after is not passed on again.
//  3. Ends once it has been signalled (TERM, INT, HUP, QUIT, USR1, USR2)
//     and no step runs on it: exit 0. The server stops a Slurm-style job's
//     step hosts when its batch script ends.
// A port it cannot listen on ends it at once: exit 1, saying why (the
// server counts that as the job's failure, so a retry gets a new port).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace muster::step {

struct StepHostOptions {
  int64_t job = 0;
  int port = 0;
  std::string key_hex;  // StepKey(the job token)
  std::string node;     // this node's name, for messages
  // This node's values of the node variables (step_env.h).
  std::map<std::string, std::string> node_env;
};

int RunStepHost(const StepHostOptions& options);

}  // namespace muster::step
