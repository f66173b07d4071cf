// PendingReasons: why each pending job waits, as of the last scheduling
// cycle, one concern of ControlLoop (`why`, `muster get jobs`).
//
// Each cycle hands over its reasons (Update): a job whose reason is new or
// changed is returned, so that only its row is written (a long queue keeps
// most of its reasons from one cycle to the next), and jobs no longer
// pending are forgotten. A path that writes a pending job's reason column
// itself (a requeue, a retry) Forgets it, so the next cycle writes it again.
//
// Thread-safety: none; the loop's thread owns it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/decisions.h"

namespace muster::server {

class PendingReasons {
 public:
  // The cycle's reasons; returns those whose code is new or changed, in
  // the order given.
  std::vector<const core::PendingReason*> Update(const std::vector<core::PendingReason>& reasons);
  // The job's reason as of the last cycle; null when it had none.
  const core::PendingReason* Find(int64_t job) const;
  void Forget(int64_t job) { by_job_.erase(job); }

 private:
  struct Waiting {
    core::PendingReason reason;
    uint64_t round = 0;  // the cycle that gave it
  };
  std::unordered_map<int64_t, Waiting> by_job_;
  uint64_t round_ = 0;
};

}  // namespace muster::server
