// The environment of one task of a Slurm-style step.
//
// srun sends the step's environment (its own, as --export says, plus the
// step's SLURM_STEP_* values: srun_plan.h). On each node the task gets,
// over that:
//  - the node's own values of the variables that belong to a node
//    (kNodeVariables: its GPUs, its name, its replica), read from the
//    environment the node's replica was started with, so a task on the
//    second node never sees the first node's GPUs;
//  - its own: SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, SLURMD_NODENAME,
//    SLURM_GTIDS (the step's task ids on this node), and, with
//    gpus_per_task, only its share of the node's GPUs in
//    CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES (task L gets GPUs
//    L*G .. L*G+G-1, as Slurm binds --gpus-per-task).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "step/step_wire.h"

namespace muster::step {

// CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, SLURM_GPUS_ON_NODE,
// MUSTER_NODE, MUSTER_REPLICA_INDEX, MUSTER_BIN, TMPDIR, SLURM_TOPOLOGY_ADDR,
// MUSTER_STEP_COUNTER_FD (a descriptor number means nothing on another node).
const std::vector<std::string_view>& NodeVariables();

// This process's values of NodeVariables() (those set).
std::map<std::string, std::string> NodeEnvironment();

std::map<std::string, std::string> TaskEnvironment(const LaunchRequest& step, const TaskPlace& task,
                                                   const std::map<std::string, std::string>& node);

}  // namespace muster::step
