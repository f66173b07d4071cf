#include "scheduler/scheduler.h"

#include "scheduler/cycle_run.h"

namespace muster::scheduler {

Status SchedulerOptions::Validate() const {
  if (auto p = MakePolicy(policy); !p.ok()) return p.status().WithFieldPrefix("scheduler");
  RETURN_IF_ERROR(weights.Validate());
  RETURN_IF_ERROR(preemption.Validate());
  if (max_reservations < 0) {
    return InvalidArgument("must be >= 0, got " + std::to_string(max_reservations), "scheduler.maxReservations");
  }
  if (max_starvation_reservations < 0) {
    return InvalidArgument("must be >= 0, got " + std::to_string(max_starvation_reservations),
                           "scheduler.maxStarvationReservations");
  }
  if (starvation_threshold < Duration::Zero()) {
    return InvalidArgument("must be >= 0", "scheduler.starvationThreshold");
  }
  if (spot_checkpoint_interval < Duration::Zero()) {
    return InvalidArgument("must be >= 0", "scheduler.spotCheckpointInterval");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerOptions options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(Policy policy, MakePolicy(options.policy));
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(options), std::move(policy)));
}

void Scheduler::RefreshCapacity(const core::ClusterSnapshot& snap) {
  if (snap.nodes_version == capacity_version_ && capacity_.all().num_types() == snap.num_gpu_types &&
      capacity_.all().num_nodes() == snap.nodes.size()) {
    return;
  }
  capacity_.Build(snap.nodes, snap.num_gpu_types, snap.num_leaves, snap.leaf_spine, true);
  capacity_version_ = snap.nodes_version;
}

core::Decisions Scheduler::Cycle(const core::ClusterSnapshot& snap) {
  RefreshCapacity(snap);
  return internal::CycleRun(options_, policy_, capacity_, snap).Run();
}

}  // namespace muster::scheduler
