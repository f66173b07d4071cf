#include "core/decisions.h"

#include "common/quantity.h"

namespace muster::core {

const char* ReasonCodeName(ReasonCode c) {
  switch (c) {
    case ReasonCode::kNone:
      return "None";
    case ReasonCode::kPriority:
      return "Priority";
    case ReasonCode::kResources:
      return "Resources";
    case ReasonCode::kReservedFor:
      return "ReservedFor";
    case ReasonCode::kDependency:
      return "Dependency";
    case ReasonCode::kBeginTime:
      return "BeginTime";
    case ReasonCode::kHeld:
      return "Held";
    case ReasonCode::kUnschedulable:
      return "Unschedulable";
    case ReasonCode::kPreempting:
      return "Preempting";
    case ReasonCode::kQuota:
      return "Quota";
    case ReasonCode::kFairShare:
      return "FairShare";
    case ReasonCode::kArrayTaskLimit:
      return "ArrayTaskLimit";
    case ReasonCode::kReservation:
      return "Reservation";
  }
  return "?";
}

namespace {

std::string Need(const PendingReason& r, const std::string& type, const std::string& features) {
  std::string s = "need ";
  s += r.replicas > 1 ? std::to_string(r.replicas) + "x" + std::to_string(r.per_replica_gpus)
                      : std::to_string(r.per_replica_gpus);
  s += " GPU";
  if (r.gpu_type != kAnyGpuType) s += " (" + type + ")";
  if (r.replicas > 1 && r.scope != TopologyScope::kAny) {
    s += std::string(" within one ") + TopologyScopeName(r.scope);
  }
  if (!features.empty()) s += " on nodes with " + features;
  return s;
}

// Whole seconds, rounded up: "in 59m59s642ms" reads worse than "in 1h".
std::string In(Duration d) { return Duration::Seconds((d.millis() + 999) / 1000).ToString(); }

}  // namespace

std::string FormatReason(const PendingReason& r, const std::string& gpu_type_name, Time now,
                         const std::string& feature_names) {
  std::string s = ReasonCodeName(r.code);
  const std::string queue = r.quota_level == 0   ? std::string("its queue")
                            : r.quota_level == 1 ? std::string("its parent queue")
                                                 : "the queue " + std::to_string(r.quota_level) + " levels above it";
  switch (r.code) {
    case ReasonCode::kPriority:
      s += ": " + std::to_string(r.jobs_ahead) +
           (r.jobs_ahead == 1 ? " higher-priority job ahead is blocked" : " higher-priority jobs ahead are blocked");
      break;
    case ReasonCode::kResources:
    case ReasonCode::kReservedFor:
    case ReasonCode::kUnschedulable:
      if (r.code == ReasonCode::kReservedFor) s += "(" + std::to_string(r.other_job) + ")";
      if (r.code == ReasonCode::kUnschedulable && r.queue_limit > 0 &&
          r.replicas * r.per_replica_gpus > r.queue_limit) {
        s += ": " + Need(r, gpu_type_name, feature_names) + ", more than " + queue + "'s limit of " +
             std::to_string(r.queue_limit);
        break;
      }
      if (r.code == ReasonCode::kUnschedulable && r.no_node_with_features) {
        s += ": no schedulable node has " +
             (feature_names.empty() ? std::string("the node features it needs") : feature_names);
        break;
      }
      if (r.code == ReasonCode::kUnschedulable && r.per_replica_cpu_milli > r.largest_node_cpu_milli) {
        s += ": need " + FormatCpus(r.per_replica_cpu_milli) +
             " CPUs per replica; the most a node with room for its GPUs has is " + FormatCpus(r.largest_node_cpu_milli);
        break;
      }
      if (r.code == ReasonCode::kUnschedulable && r.per_replica_memory_bytes > r.largest_node_memory_bytes) {
        s += ": need " + FormatMemory(r.per_replica_memory_bytes) +
             " of memory per replica; the most a node with room for its GPUs has is " +
             FormatMemory(r.largest_node_memory_bytes);
        break;
      }
      s += ": " + Need(r, gpu_type_name, feature_names);
      if (r.code == ReasonCode::kUnschedulable) {
        s += "; the cluster has " + std::to_string(r.free_gpus) + " such GPU, at most " +
             std::to_string(r.largest_node_free) + " per node and " + std::to_string(r.largest_leaf_free) + " per leaf";
      } else {
        s += "; free " + std::to_string(r.free_gpus) + " GPU, largest node block " +
             std::to_string(r.largest_node_free) + ", largest leaf block " + std::to_string(r.largest_leaf_free);
        if (r.jobs_ahead > 0) {
          s += "; " + std::to_string(r.jobs_ahead) + (r.jobs_ahead == 1 ? " blocked job ahead" : " blocked jobs ahead");
        }
      }
      break;
    case ReasonCode::kDependency:
      s += ": waits for job " + std::to_string(r.other_job);
      break;
    case ReasonCode::kPreempting:
      s += ": " + Need(r, gpu_type_name, feature_names) + " held for it; waits for job " + std::to_string(r.other_job) +
           ", preempted for it, to stop";
      break;
    case ReasonCode::kBeginTime:
      s += ": begins in " + In(r.begin_time - now);
      break;
    case ReasonCode::kQuota:
      s += ": " + Need(r, gpu_type_name, feature_names) + "; " + queue + " holds " + std::to_string(r.queue_used) +
           " of its limit of " + std::to_string(r.queue_limit);
      break;
    case ReasonCode::kFairShare:
      s += ": " + Need(r, gpu_type_name, feature_names) + "; " + queue + " holds " + std::to_string(r.queue_used) +
           ", past its guarantee of " + std::to_string(r.queue_limit) +
           ", and a queue further below its fair share waits for GPUs";
      break;
    case ReasonCode::kArrayTaskLimit:
      s += ": " + std::to_string(r.queue_limit) + " tasks of its array run, the most it allows at once";
      break;
    case ReasonCode::kReservation:
      if (r.reservation.empty()) {
        s += ": its reservation has ended or was deleted";
      } else if (r.begin_time > now) {
        s += ": reservation " + r.reservation + " starts in " + In(r.begin_time - now);
      } else {
        s += ": its time limit runs past the end of reservation " + r.reservation +
             (r.reservation_end > now ? " in " + In(r.reservation_end - now) : std::string(", which has ended"));
      }
      break;
    case ReasonCode::kHeld:
    case ReasonCode::kNone:
      break;
  }
  if (!r.planned_start.is_max()) {
    s += r.planned_start <= now ? "; planned start now" : "; planned start in " + In(r.planned_start - now);
  }
  return s;
}

}  // namespace muster::core
