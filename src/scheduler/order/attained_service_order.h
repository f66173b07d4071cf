// AttainedServiceOrder: least attained service first (the `las` policy), a
// discretized two-dimensional LAS in the manner of Tiresias (Gu et al.,
// NSDI 2019). A job's service is the GPUs x seconds it has run over all its
// runs: known without knowing its duration. Jobs fall into bands by
// service, band 0 below `first` GPU-seconds and each next band `factor`
// times wider. The key is the band less one for each `age_step` the job has
// waited in all; lower keys go first, and within a key the older job
// (submit time, then id). A new job is in band 0, so short jobs finish
// ahead of long ones that have already run a while, as under SJF, without
// a duration, and a long job is not passed for ever.
//
// With preemption on, the scheduler (scheduler.cc, TryPreempt) lets a job
// stop running jobs of a higher band than its own, of a class no higher
// than its own, after their minimum run time and paying their loss since
// the last checkpoint; a run that began after the job had waited past the
// starvation threshold in all is not stopped for service, and such jobs
// get the starvation reservations; one still waiting at 1.5 times the
// threshold may stop jobs of any band (this bounds the longest wait). Bands, rather than raw service, keep two
// jobs of similar service from preempting each other back and forth.
#pragma once

#include <cstdint>

#include "scheduler/order/queue_order.h"

namespace muster::scheduler {

struct ServiceBands {
  int64_t first = int64_t{8} * 3600;  // GPU-seconds: band 0 is below 8 GPU-hours
  int64_t factor = 8;
  int32_t max_band = 8;
  // Aging: each `age_step` a job has waited in all (PendingJob::QueuedFor)
  // moves it one band ahead.
  Duration age_step = Duration::Hours(6);

  int32_t BandOf(int64_t gpu_seconds) const {
    int32_t band = 0;
    for (int64_t edge = first; gpu_seconds >= edge && band < max_band; edge *= factor) ++band;
    return band;
  }
};

class AttainedServiceOrder final : public QueueOrder {
 public:
  explicit AttainedServiceOrder(ServiceBands bands = {}) : bands_(bands) {}
  std::string_view name() const override { return "attained-service"; }
  int64_t Key(const core::PendingJob& j, const core::ClusterSnapshot& snap, const PriorityWeights&) const override {
    return bands_.BandOf(j.attained_gpu_seconds) - j.QueuedFor(snap.now).millis() / bands_.age_step.millis();
  }

 private:
  ServiceBands bands_;
};

}  // namespace muster::scheduler
