// The registry of scheduling policies: a queue order plus a blocking mode.
//
//   fifo       submit order; strict: the first job that cannot start blocks
//              every job behind it (jobs that can never fit are skipped).
//   fifo-skip  submit order; every job that fits now starts; no reservations.
//   sjf        shortest known duration first; otherwise as fifo-skip.
//   muster     effective priority (class + age + fair-share + size); gang,
//              topology, and backfill with reservations for the top blocked
//              jobs and for every job past the starvation threshold.
// Adding a policy: write its QueueOrder beside the others and add one line
// to kPolicies in policy_registry.cc.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "scheduler/order/queue_order.h"

namespace muster::scheduler {

enum class BlockingMode { kStrict, kSkip, kBackfill };

struct Policy {
  std::string name;
  std::unique_ptr<QueueOrder> order;
  BlockingMode blocking = BlockingMode::kBackfill;
};

// The policy called `name`, or InvalidArgument listing the known names.
StatusOr<Policy> MakePolicy(std::string_view name);
std::vector<std::string> PolicyNames();

}  // namespace muster::scheduler
