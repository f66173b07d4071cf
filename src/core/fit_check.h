// CheckEverFits: whether a job could ever run on the cluster's nodes as
// they are, for refusing at submit what never will, as sbatch refuses a
// request no node configuration can satisfy.
//
// It looks at each node's whole capacity, GPU type and features (never at
// what is free now, nor whether the node is cordoned or unreachable, which
// passes), and asks:
//  - a GPU type the job names: some node has it ("resources.gpuType");
//  - the features it requires (its own, a container's, its pool's): some
//    node has them all ("features");
//  - one replica's GPUs, CPUs and memory: some node of that type and those
//    features holds them ("resources.gpus", "resources.cpus",
//    "resources.memory", naming the largest such node's);
//  - the gang: enough such nodes for its replicas (distinct ones for
//    one_per_node and exclusive), or room for them all ("replicas"). An
//    elastic job needs its minimum.
// Topology scopes are not checked here: the scheduler's reason says why
// such a job waits. No nodes at all passes: the cluster is still forming.
// Thread-safety: a plain function.
#pragma once

#include <vector>

#include "common/status.h"
#include "core/job.h"
#include "core/node.h"

namespace muster::core {

// InvalidArgument naming the field, or Ok.
Status CheckEverFits(const JobSpec& job, const std::vector<Node>& nodes);

}  // namespace muster::core
