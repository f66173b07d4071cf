// CycleRun: preemption and shrinking for waiting jobs, and the capacity
// held for jobs that preempted in earlier cycles (preemption.h).
#include "scheduler/cycle_run.h"

namespace muster::scheduler::internal {

void CycleRun::HoldNominations() {
  for (const PendingJob& j : snap_.pending) {
    if (j.nominated.empty() || j.held || j.begin_time > snap_.now) continue;
    bool valid = true, fits = true;
    for (const Allocation& a : j.nominated) {
      if (a.node < 0 || static_cast<size_t>(a.node) >= actual_.size() || !live_.all().indexed(a.node)) {
        valid = false;
        break;
      }
      if (!a.resources.FitsIn(View(a.node))) fits = false;
    }
    PendingReason unused;
    if (!valid || QuotaBlocks(j, TypeOf(j.nominated), unused)) continue;
    if (fits) {
      nominated_[j.id] = 0;
      Start(j, j.nominated, EndsOf(j));
      continue;
    }
    JobId waits_for = 0;
    for (JobId v : j.victims) {
      auto run = snap_.running->find(v);
      // An elastic job that gave back replicas for it runs on: it is
      // waited for only while those are stopping.
      if (run != snap_.running->end() && (!run->second.elastic() || run->second.stopping || run->second.shrinking)) {
        waits_for = v;
        break;
      }
    }
    if (waits_for == 0) continue;  // victims gone, still no room: placed like any job
    nominated_[j.id] = waits_for;
    Hold(j.id, j.nominated);
  }
}

void CycleRun::Hold(JobId job, const Placement& p) {
  max_reserved_actual_ = -1;
  for (const Allocation& a : p) {
    const NodeIndex n = a.node;
    core::Resources left = View(n) - a.resources;
    left.gpus = std::max<int64_t>(left.gpus, 0);
    left.cpu_milli = std::max<int64_t>(left.cpu_milli, 0);
    left.memory_bytes = std::max<int64_t>(left.memory_bytes, 0);
    if (res_time_[n].is_max()) {
      reserved_nodes_.push_back(n);
      res_job_[n] = job;
    }
    spare_[n] = left;
    res_time_[n] = snap_.now;
    live_.SetAvail(n, View(n));
  }
}

bool CycleRun::MayTryPreempting(const PendingJob& j) {
  if (policy_.blocking != BlockingMode::kBackfill || !j.nominated.empty()) return false;
  return AnyVictimClass(snap_, j.priority_class, options_.preemption) || ByService() || MayReclaim(j) ||
         MayReclaimForShare(j);
}

bool CycleRun::TryPreempt(const PendingJob& j, const Shape& shape, PendingReason& r) {
  if (preemptors_ >= options_.preemption.max_per_cycle) return false;
  if (TryShrink(j, shape, r)) return true;
  if (!MayTryPreempting(j)) return false;
  const bool by_class = AnyVictimClass(snap_, j.priority_class, options_.preemption);
  // A reclaim within the job's queue's guarantee, or toward its fair share
  // (queue_quotas.h).
  const bool for_guarantee = MayReclaim(j);
  const bool for_share = MayReclaimForShare(j);
  const bool reclaim = for_guarantee || for_share;
  const int64_t weight = by_class ? snap_.classes[j.priority_class].weight : INT64_MIN;
  // By service: a job of a band below the victim's, of a class no lower.
  const bool by_service = ByService();
  const int32_t band = !by_service || ServiceOverdue(j) ? -1 : policy_.service_bands->BandOf(j.attained_gpu_seconds);
  const int64_t own_weight = snap_.classes[j.priority_class].weight;
  const FailedKey key{shape, weight, reclaim ? j.queue : -1, band, by_service ? own_weight : INT64_MIN};
  if (preempt_failed_.count(key)) return false;
  // The candidates for this kind of preemption, built once a cycle when
  // first needed.
  using Kind = VictimPool::Kind;
  const bool interactive = Interactive(j);
  const Kind kind = interactive                                        ? Kind::kInteractive
                    : reclaim && options_.preemption.reclaim_any_class ? Kind::kReclaimAny
                    : reclaim || by_service                            ? Kind::kReclaim
                                                                       : Kind::kByClass;
  std::optional<VictimPool>& pool = pools_[static_cast<int>(kind)];
  if (!pool) pool.emplace(snap_, options_.preemption, kind);
  // By class: a preemptible job of a lower weight, of the same queue or of
  // one that borrows (never one within its guarantee: what a queue is
  // guaranteed is not taken by another queue's priority, so a reclaim is
  // never undone by a preemption and nothing thrashes). By reclaim: a job
  // of another queue that borrows, or whose share exceeds the job's
  // queue's. A reclaim stops no job larger than the reclaiming one (a
  // gang is not stopped to give a few GPUs), except that a queue short of
  // its guarantee by a victim's whole size may stop it when nothing
  // smaller frees room: it is owed all of it.
  const int64_t gpus = j.total_gpus();
  int64_t largest = gpus;
  auto by_reclaim = [&](const VictimPool::Candidate& c) {
    if (c.job->queue == j.queue) return false;
    const int64_t held = GpusOf(*c.job);
    if (held > largest) return false;
    if (!quotas_.SharesWith(j.queue, c.job->queue)) return for_guarantee && quotas_.ReclaimableFrom(j, c.job->queue);
    return for_share && quotas_.ShareReclaimableFrom(j, c.job->queue) &&
           quotas_.KeepsOrder(j, c.job->queue, held, options_.preemption.reclaim_past_guarantee);
  };
  // Another queue's job only where that queue borrows and keeps its
  // guarantee without it.
  auto may_take = [&](const VictimPool::Candidate& c) {
    return c.job->queue == j.queue || (quotas_.Borrowing(c.job->queue, j.gpu_type, j.queue) &&
                                       quotas_.KeepsGuarantee(c.job->queue, GpusOf(*c.job)));
  };
  auto for_service = [&](const VictimPool::Candidate& c) {
    return by_service && c.preemptible && c.weight <= own_weight && c.job->queued <= options_.starvation_threshold &&
           policy_.service_bands->BandOf(c.job->AttainedGpuSeconds(snap_.now)) > band && may_take(c);
  };
  auto eligible = [&](const VictimPool::Candidate& c) {
    return (by_class && c.preemptible && c.weight < weight && may_take(c)) || for_service(c) ||
           (reclaim && by_reclaim(c));
  };
  // Capacity promised to another job is not taken, unless only jobs of
  // queues this reclaim may take from hold promises there: what such a
  // queue holds is not safe from it, nor what it is promised.
  auto usable = [&](NodeIndex n) {
    if (res_time_[n].is_max()) return true;
    if (!reclaim || res_time_[n] <= snap_.now || res_queue_[n] == kNoQueue || res_queue_[n] == j.queue) return false;
    return quotas_.SharesWith(j.queue, res_queue_[n]) ? for_share && quotas_.ShareReclaimableFrom(j, res_queue_[n])
                                                      : for_guarantee && quotas_.ReclaimableFrom(j, res_queue_[n]);
  };
  auto p = ChooseVictims(j, shape, *pool, Live(shape), usable, taken_, eligible);
  if (!p && quotas_.Deficit(j.queue, j.gpu_type) > gpus) {
    largest = quotas_.Deficit(j.queue, j.gpu_type);
    p = ChooseVictims(j, shape, *pool, Live(shape), usable, taken_, eligible);
  }
  if (p && j.gpu_type == core::kAnyGpuType) {
    PendingReason unused;
    if (QuotaBlocks(j, TypeOf(p->allocations), unused)) p.reset();  // over its limit on that type
  }
  // What a reclaim toward a fair share takes must keep each queue it takes
  // from above the job's queue, and what a higher class takes from other
  // queues must leave them their guarantees (else the reclaim that gives
  // it back is undone again, and so on).
  std::vector<std::pair<int32_t, int64_t>> taken, by_class_taken;
  if (p) {
    for (JobId v : p->victims) {
      const core::RunningJob& victim = snap_.running->at(v);
      taken.emplace_back(victim.queue, GpusOf(victim));
      if (victim.queue != j.queue && !(reclaim && by_reclaim({&victim}))) by_class_taken.push_back(taken.back());
    }
    if (for_share && !quotas_.ShareKeepsOrder(j, taken, options_.preemption.reclaim_past_guarantee)) p.reset();
    if (p && !quotas_.KeepGuarantees(by_class_taken)) p.reset();
  }
  if (!p) {
    // Capacity only shrinks, usage only grows and victims are only taken
    // within a cycle.
    preempt_failed_.insert(key);
    return false;
  }
  for (JobId v : p->victims) {
    const core::RunningJob& victim = snap_.running->at(v);
    const int64_t w = snap_.classes[victim.priority_class].weight;
    if (by_class && w < weight) continue;
    if (for_service({&victim, 0, w, snap_.classes[victim.priority_class].preemptible})) {
      p->for_service = true;
    } else {
      p->reclaim = true;
    }
  }
  p->interactive = interactive;
  p->grace = snap_.classes[j.priority_class].preempt_grace;
  for (const auto& [q, held] : taken) quotas_.Commit(q, -held);
  quotas_.Commit(j.queue, gpus);
  ++preemptors_;
  ++out_.stats.preemptions;
  taken_.insert(p->victims.begin(), p->victims.end());
  Hold(j.id, p->allocations);
  r.other_job = p->victims.front();
  FillNeed(r, j);
  Explain(r, ReasonCode::kPreempting);
  out_.preemptions.push_back(std::move(*p));
  return true;
}

int64_t CycleRun::GpusOf(const core::RunningJob& r) {
  int64_t gpus = 0;
  for (const Allocation& a : r.allocations) gpus += a.resources.gpus;
  return gpus;
}

bool CycleRun::TryShrink(const PendingJob& j, const Shape& shape, PendingReason& r) {
  if (!has_elastic_ || policy_.blocking != BlockingMode::kBackfill || !j.nominated.empty()) return false;
  const int64_t own_weight = snap_.classes[j.priority_class].weight;
  const bool for_guarantee = MayReclaim(j);
  const FailedKey key{shape, own_weight, j.queue, /*band=*/-2, for_guarantee ? 1 : 0};
  if (preempt_failed_.count(key)) return false;
  std::optional<core::Preemption> p = ChooseShrinks(j, shape, own_weight, for_guarantee);
  if (!p) {
    preempt_failed_.insert(key);  // what elastic jobs may give only shrinks within a cycle
    return false;
  }
  for (const core::Shrink& sh : p->shrinks) {
    const core::RunningJob& e = snap_.running->at(sh.job);
    quotas_.Commit(e.queue, -(e.replicas() - sh.keep) * e.per_replica.gpus);
    taken_.insert(sh.job);
    p->victims.push_back(sh.job);
  }
  out_.stats.shrinks += static_cast<int32_t>(p->shrinks.size());
  p->interactive = Interactive(j);
  p->grace = snap_.classes[j.priority_class].preempt_grace;
  quotas_.Commit(j.queue, j.total_gpus());
  ++preemptors_;
  Hold(j.id, p->allocations);
  r.other_job = p->shrinks.front().job;
  FillNeed(r, j);
  Explain(r, ReasonCode::kPreempting);
  out_.preemptions.push_back(std::move(*p));
  return true;
}

std::optional<core::Preemption> CycleRun::ChooseShrinks(const PendingJob& j, const Shape& shape, int64_t own_weight,
                                                        bool for_guarantee) {
  if (!has_elastic_) return std::nullopt;
  std::vector<const core::RunningJob*> cands;
  for (const auto& [id, e] : *snap_.running) {
    if (!e.elastic() || e.stopping || e.shrinking || e.replicas() <= e.min_replicas || taken_.count(id)) continue;
    const int64_t w = snap_.classes[e.priority_class].weight;
    const bool by_class = w <= own_weight && (e.queue == j.queue || quotas_.Borrowing(e.queue, j.gpu_type, j.queue));
    if (by_class || (for_guarantee && e.queue != j.queue && quotas_.ReclaimableFrom(j, e.queue))) cands.push_back(&e);
  }
  if (cands.empty()) return std::nullopt;
  std::sort(cands.begin(), cands.end(), [&](const core::RunningJob* a, const core::RunningJob* b) {
    const int64_t wa = snap_.classes[a->priority_class].weight, wb = snap_.classes[b->priority_class].weight;
    return std::tie(wa, b->start, b->id) < std::tie(wb, a->start, a->id);
  });
  FreeIndex trial = Live(shape);
  core::Preemption out;
  out.job = j.id;
  for (const core::RunningJob* e : cands) {
    int32_t keep = e->replicas();
    // Its replicas newest first: from its last allocation back.
    for (size_t i = e->allocations.size(); i-- > 0 && keep > e->min_replicas;) {
      const NodeIndex n = e->allocations[i].node;
      for (int32_t k = 0; k < e->allocations[i].replicas && keep > e->min_replicas; ++k) {
        --keep;
        // Capacity promised to another job stays promised.
        if (!res_time_[n].is_max() || !Usable(n, shape)) continue;
        trial.SetAvail(n, trial.avail(n) + e->per_replica);
        if (auto placement = FindPlacement(trial, shape)) {
          out.shrinks.push_back({e->id, keep});
          out.allocations = std::move(*placement);
          return out;
        }
      }
    }
    out.shrinks.push_back({e->id, keep});
  }
  return std::nullopt;
}

}  // namespace muster::scheduler::internal
