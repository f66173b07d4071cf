// QueueOrder: the extension point that decides in which order pending jobs
// are considered in a cycle. Implementations live beside this file, one per
// file, and are registered in scheduler/policy_registry.cc.
//
// Contract: Key() maps a pending job to an integer; lower keys are
// considered first, and equal keys are broken by submit time, then job id,
// so the order is total and deterministic. It reads the snapshot only.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/snapshot.h"
#include "scheduler/priority.h"

namespace muster::scheduler {

class QueueOrder {
 public:
  virtual ~QueueOrder() = default;
  virtual std::string_view name() const = 0;
  virtual int64_t Key(const core::PendingJob& job, const core::ClusterSnapshot& snap,
                      const PriorityWeights& weights) const = 0;
};

}  // namespace muster::scheduler
