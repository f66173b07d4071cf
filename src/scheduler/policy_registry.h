// The registry of scheduling policies: a queue order plus a blocking mode.
//
//   fifo       submit order; strict: the first job that cannot start blocks
//              every job behind it (jobs that can never fit are skipped).
//   fifo-skip  submit order; every job that fits now starts; no reservations.
//   sjf        shortest known duration first; otherwise as fifo-skip.
//   muster     effective priority (class + age + fair-share + size); gang,
//              topology, and backfill with reservations for the top blocked
//              jobs and for every job past the starvation threshold.
//   las        least attained service first, by bands of GPU-seconds run
//              (order/attained_service_order.h); with preemption on, a job
//              stops running jobs of a higher band; otherwise as muster.
// Adding a policy: write its QueueOrder beside the others and add one line
// to kPolicies in policy_registry.cc.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "scheduler/order/attained_service_order.h"
#include "scheduler/order/queue_order.h"

namespace muster::scheduler {

enum class BlockingMode { kStrict, kSkip, kBackfill };

struct Policy {
  std::string name;
  std::unique_ptr<QueueOrder> order;
  BlockingMode blocking = BlockingMode::kBackfill;
  // Set: jobs rank by attained service in these bands, and with preemption
  // on a job may stop running jobs of a higher band (scheduler.h).
  std::optional<ServiceBands> service_bands;
};

// The policy called `name`, or InvalidArgument listing the known names.
StatusOr<Policy> MakePolicy(std::string_view name);
std::vector<std::string> PolicyNames();

}  // namespace muster::scheduler
