#include "scheduler/cycle_run.h"

namespace muster::scheduler::internal {

Decisions CycleRun::Run() {
  const size_t n = snap_.nodes.size();
  live_.Build(snap_.nodes, snap_.num_gpu_types, snap_.num_leaves, snap_.leaf_spine, false);
  actual_.resize(n);
  for (size_t i = 0; i < n; ++i) actual_[i] = snap_.nodes[i].free;
  spare_.assign(n, core::Resources{});
  res_time_.assign(n, Time::Max());
  res_guarded_.assign(n, false);
  res_job_.assign(n, 0);
  res_queue_.assign(n, kNoQueue);
  HoldNominations();
  has_elastic_ = snap_.running_elastic > 0;

  // Without explanations the cycle may stop early, so order lazily.
  PendingOrder order(snap_, *policy_.order, options_.weights, /*lazy=*/!options_.explain);
  if (options_.explain) out_.reasons.reserve(snap_.pending.size());
  if (!options_.explain) CountCanStillAct();
  ConsiderReservations();
  ConsiderInteractiveFirst();
  int32_t idx;
  while (order.Next(idx)) {
    if (!first_.empty() && first_[idx]) continue;
    if (!options_.explain && NothingLeftToDo()) break;
    const PendingJob& j = snap_.pending[idx];
    Consider(j);
    if (!options_.explain) Considered(j);
  }
  // Jobs that yielded free GPUs to a queue further below its fair share
  // take what that queue's jobs did not.
  std::unordered_set<JobId> late;
  for (int32_t i : yielded_) {
    const PendingJob& j = snap_.pending[i];
    const Ends end = EndsOf(j);
    PendingReason r;
    PendingJob sized;
    auto p = j.elastic() ? PlaceElastic(j, end, sized) : TryPlace(ShapeOf(j), end, PoolFirst(j));
    if (!p || QuotaBlocks(j.elastic() ? sized : j, TypeOf(*p), r)) continue;
    late.insert(j.id);
    Start(j, std::move(*p), end);
  }
  if (!late.empty()) std::erase_if(out_.reasons, [&](const PendingReason& x) { return late.count(x.job) > 0; });
  GrowElastic();
  out_.stats.reservations = static_cast<int32_t>(out_.reservations.size());
  if (plan_) out_.stats.release_events_walked = plan_->releases_walked();
  return std::move(out_);
}

void CycleRun::ConsiderInteractiveFirst() {
  if (std::none_of(snap_.classes.begin(), snap_.classes.end(), [](const auto& c) { return c.interactive; })) return;
  std::vector<int32_t> jobs;
  for (size_t i = 0; i < snap_.pending.size(); ++i) {
    if (Interactive(snap_.pending[i])) jobs.push_back(static_cast<int32_t>(i));
  }
  if (jobs.empty()) return;
  std::sort(jobs.begin(), jobs.end(), [&](int32_t a, int32_t b) {
    const PendingJob &x = snap_.pending[a], &y = snap_.pending[b];
    return std::tie(x.submit_time, x.id) < std::tie(y.submit_time, y.id);
  });
  if (first_.empty()) first_.assign(snap_.pending.size(), false);
  for (int32_t i : jobs) {
    if (first_[i]) continue;  // a reservation's
    first_[i] = true;
    Consider(snap_.pending[i]);
    if (!options_.explain) Considered(snap_.pending[i]);
  }
}

bool CycleRun::Waits(const PendingJob& j, PendingReason& r) {
  if (auto it = nominated_.find(j.id); it != nominated_.end()) {
    if (it->second == 0) return true;  // started on its held capacity
    r.other_job = it->second;
    FillNeed(r, j);
    Explain(r, ReasonCode::kPreempting);
    return true;
  }
  if (j.held) {
    Explain(r, ReasonCode::kHeld);
    return true;
  }
  if (j.begin_time > snap_.now) {
    r.begin_time = j.begin_time;
    Explain(r, ReasonCode::kBeginTime);
    return true;
  }
  if (j.run_group_limit > 0 && GroupRunning(j.run_group) >= j.run_group_limit) {
    r.queue_limit = j.run_group_limit;
    Explain(r, ReasonCode::kArrayTaskLimit);
    return true;
  }
  if (!j.dependencies.empty()) {
    const DependencyVerdict v = EvaluateDependencies(j, snap_);
    if (v.kind == DependencyVerdict::kNever) {
      out_.failures.push_back({j.id, core::JobState::kFailed, "DependencyNeverSatisfied: " + v.why});
      return true;
    }
    if (v.kind == DependencyVerdict::kWaiting) {
      r.other_job = v.job;
      Explain(r, ReasonCode::kDependency);
      return true;
    }
  }
  return false;
}

void CycleRun::Consider(const PendingJob& j) {
  ++out_.stats.jobs_considered;
  PendingReason r;
  r.job = j.id;
  r.jobs_ahead = blocked_;
  if (Waits(j, r)) return;
  // An elastic job needs its minimum: that is what it waits, reserves
  // and preempts for; it starts with as many more as fit.
  PendingJob at_min;
  if (j.elastic()) {
    at_min = j;
    at_min.replicas = j.min_replicas;
  }
  const PendingJob& need = j.elastic() ? at_min : j;
  if (QuotaBlocks(need, j.gpu_type, r)) {
    // Larger than the limit itself: it can never run (Kueue calls such a
    // workload inadmissible; Slurm refuses it).
    return Explain(r, r.queue_limit < need.total_gpus() ? ReasonCode::kUnschedulable : ReasonCode::kQuota);
  }
  const Shape shape = ShapeOf(need);
  if (strict_blocked_) {
    if (FeasibleEver(shape)) return Explain(r, ReasonCode::kPriority);
    FillNumbers(r, need, /*ever=*/true);
    return Explain(r, ReasonCode::kUnschedulable);
  }

  const Ends end = EndsOf(j);
  PendingJob sized;
  std::optional<Placement> placed = j.elastic() ? PlaceElastic(j, end, sized) : TryPlace(shape, end, PoolFirst(j));
  if (placed) {
    const PendingJob& got = j.elastic() ? sized : j;
    // A job of any GPU type is held to its queue's limit for the type it got.
    if (j.gpu_type == core::kAnyGpuType && QuotaBlocks(got, TypeOf(*placed), r)) return Explain(r, ReasonCode::kQuota);
    // Past its guarantee, a job leaves free GPUs to a smaller or equal job
    // of a queue further below its fair share, which would otherwise
    // reclaim them at once (queue_quotas.h).
    if (options_.preemption.enabled && policy_.blocking == BlockingMode::kBackfill && !Interactive(j) &&
        quotas_.YieldsToFairShare(got, TypeOf(*placed), r)) {
      FillNeed(r, need);
      yielded_.push_back(static_cast<int32_t>(&j - snap_.pending.data()));
      return Explain(r, ReasonCode::kFairShare);
    }
    return Start(j, std::move(*placed), end);
  }

  if (!FeasibleEver(shape)) {
    FillNumbers(r, need, /*ever=*/true);
    return Explain(r, ReasonCode::kUnschedulable);
  }
  if (TryPreempt(need, shape, r)) return;
  ++blocked_;
  NoteBlocked(j);
  const JobId reserved_for = ReservedFor(shape);
  if (reserved_for != 0) r.other_job = reserved_for;
  FillNumbers(r, need, /*ever=*/false);
  switch (policy_.blocking) {
    case BlockingMode::kStrict:
      strict_blocked_ = true;
      break;
    case BlockingMode::kSkip:
      break;
    case BlockingMode::kBackfill:
      const bool ranked = static_cast<int32_t>(out_.reservations.size()) < options_.max_reservations;
      const bool starving = !ranked && starving_reserved_ < options_.max_starvation_reservations && Starving(j);
      if (ranked || starving) {
        if (starving) ++starving_reserved_;
        if (!plan_) {
          plan_.emplace(live_, snap_, std::move(started_), Predicting());
          for (NodeIndex n : admin_held_) plan_->Withhold(n);
        }
        if (auto slot = plan_->Reserve(shape, Planned(j))) {
          r.planned_start = slot->start;
          ApplyReservation(j.id, j.queue, *slot, Starving(j));
        }
      }
      break;
  }
  Explain(r, reserved_for != 0 ? ReasonCode::kReservedFor : ReasonCode::kResources);
}

void CycleRun::CountCanStillAct() {
  for (const PendingJob& j : snap_.pending) {
    if (j.per_replica.gpus == 0) ++gpu_less_left_;
    if (Starving(j)) ++starving_left_;
    if (CouldPreempt(j)) ++preemptors_left_;
  }
}

void CycleRun::Considered(const PendingJob& j) {
  if (j.per_replica.gpus == 0) --gpu_less_left_;
  if (Starving(j)) --starving_left_;
  if (CouldPreempt(j)) --preemptors_left_;
}

bool CycleRun::NothingLeftToDo() {
  // Strict FIFO: behind a blocked head nothing starts.
  if (strict_blocked_) return true;
  if (gpu_less_left_ > 0 || MaxReservedActualGpus() > 0) return false;
  if (preemptors_left_ > 0 && preemptors_ < options_.preemption.max_per_cycle) return false;
  for (int32_t t = 0; t < live_.all().num_types(); ++t) {
    if (live_.all().type(t).free_gpus > 0) return false;
  }
  if (policy_.blocking != BlockingMode::kBackfill) return true;
  return static_cast<int32_t>(out_.reservations.size()) >= options_.max_reservations &&
         (starving_left_ == 0 || starving_reserved_ >= options_.max_starvation_reservations);
}

void CycleRun::Explain(PendingReason& r, ReasonCode code) {
  // Unschedulable is always reported: the owner may end such jobs.
  if (!options_.explain && code != ReasonCode::kUnschedulable) return;
  r.code = code;
  out_.reasons.push_back(r);
}

bool CycleRun::CouldPreempt(const PendingJob& j) const {
  if (policy_.blocking != BlockingMode::kBackfill || !j.nominated.empty()) return false;
  return AnyVictimClass(snap_, j.priority_class, options_.preemption) || ByService() ||
         (options_.preemption.enabled && quotas_.HasGuarantee(j.queue, j.gpu_type));
}

bool CycleRun::QuotaBlocks(const PendingJob& j, int32_t t, PendingReason& r) {
  if (!quotas_.Blocks(j, t, r)) return false;
  FillNeed(r, j);
  return true;
}

void CycleRun::NoteBlocked(const PendingJob& j) {
  const int64_t w = snap_.classes[j.priority_class].weight;
  auto [it, fresh] = blocked_weight_.try_emplace(j.gpu_type, w);
  if (!fresh) it->second = std::max(it->second, w);
}

bool CycleRun::Starving(const PendingJob& j) const {
  if (policy_.service_bands) return j.QueuedFor(snap_.now) > options_.starvation_threshold;
  const Time eligible = std::max(j.submit_time, j.begin_time);
  return snap_.now - eligible > options_.starvation_threshold;
}

core::FeatureMask CycleRun::PoolFirst(const PendingJob& j) const {
  const core::FeatureMask pools = snap_.spot_pool | snap_.on_demand_pool;
  if (snap_.spot_pool == 0 || options_.spot_checkpoint_interval <= Duration::Zero() || (j.required_features & pools)) {
    return 0;
  }
  return j.checkpoint_interval <= options_.spot_checkpoint_interval ? snap_.spot_pool : snap_.on_demand_pool;
}

std::optional<Placement> CycleRun::TryPlace(const Shape& shape, Ends end, core::FeatureMask prefer) {
  // Capacity only shrinks within a cycle: a shape that failed on the live
  // index fails again.
  if (prefer != 0) {
    Shape first = shape;
    first.features |= prefer;
    if (!live_failed_.count(first)) {
      if (auto p = FindPlacement(Live(first), first)) return p;
      live_failed_.insert(first);
    }
  }
  std::optional<Placement> p;
  if (!live_failed_.count(shape)) {
    p = FindPlacement(Live(shape), shape);
    if (!p) live_failed_.insert(shape);
  }
  if (!p && !reserved_nodes_.empty()) p = PlaceBeforeReservation(shape, end);
  return p;
}

std::optional<Placement> CycleRun::PlaceBeforeReservation(const Shape& s, Ends end) {
  if (s.per_replica.gpus * s.replicas > MaxReservedActualGpus()) return std::nullopt;
  NodeIndex best = -1;
  for (NodeIndex n : reserved_nodes_) {
    if (end.On(res_guarded_[n]) > res_time_[n] || !Usable(n, s)) continue;
    if (s.per_replica.gpus > 0 && s.gpu_type != core::kAnyGpuType && live_.all().type_of(n) != s.gpu_type) {
      continue;
    }
    if (actual_[n].CopiesOf(s.per_replica, s.replicas) < s.replicas) continue;
    if (best < 0 || actual_[n].gpus < actual_[best].gpus) best = n;
  }
  if (best < 0) return std::nullopt;
  return Placement{{best, s.replicas, s.per_replica * s.replicas}};
}

int64_t CycleRun::MaxReservedActualGpus() {
  if (max_reserved_actual_ < 0) {
    max_reserved_actual_ = 0;
    for (NodeIndex n : reserved_nodes_) {
      max_reserved_actual_ = std::max(max_reserved_actual_, actual_[n].gpus);
    }
  }
  return max_reserved_actual_;
}

JobId CycleRun::ReservedFor(const Shape& s) {
  if (s.per_replica.gpus * s.replicas > MaxReservedActualGpus()) return 0;
  for (NodeIndex n : reserved_nodes_) {
    if (!Usable(n, s)) continue;
    if (s.per_replica.gpus > 0 && s.gpu_type != core::kAnyGpuType && live_.all().type_of(n) != s.gpu_type) {
      continue;
    }
    if (actual_[n].CopiesOf(s.per_replica, s.replicas) >= s.replicas) return res_job_[n];
  }
  return 0;
}

bool CycleRun::FeasibleEver(const Shape& s) {
  auto [it, inserted] = feasible_.try_emplace(s, false);
  if (inserted) it->second = FindPlacement(capacity_.For(s.features, snap_.nodes), s).has_value();
  return it->second;
}

void CycleRun::Take(int32_t queue, const Placement& p, Ends end) {
  max_reserved_actual_ = -1;
  for (const Allocation& a : p) {
    quotas_.Add(queue, snap_.nodes[a.node].gpu_type, a.resources.gpus);
    actual_[a.node] -= a.resources;
    if (end.On(res_guarded_[a.node]) > res_time_[a.node]) spare_[a.node] -= a.resources;
    live_.SetAvail(a.node, View(a.node));
  }
  if (plan_) {
    plan_->OnStartedNow(p, end.planned);
  } else {
    started_.push_back({end.planned, p});
  }
}

int32_t& CycleRun::GroupRunning(JobId group) {
  if (!group_running_) {
    group_running_.emplace();
    if (snap_.running != nullptr) {
      for (const auto& [id, e] : *snap_.running) {
        if (e.run_group != 0) ++(*group_running_)[e.run_group];
      }
    }
  }
  return (*group_running_)[group];
}

void CycleRun::Start(const PendingJob& j, Placement p, Ends end) {
  if (j.run_group_limit > 0) ++GroupRunning(j.run_group);
  Take(j.queue, p, end);
  ++out_.stats.placements;
  if (!out_.reservations.empty()) ++out_.stats.backfilled;
  out_.bindings.push_back({j.id, std::move(p)});
}

void CycleRun::ApplyReservation(JobId job, int32_t queue, const BackfillPlan::Slot& slot, bool guarded) {
  max_reserved_actual_ = -1;
  for (const Allocation& a : slot.allocations) {
    const NodeIndex n = a.node;
    if (res_time_[n].is_max()) {
      reserved_nodes_.push_back(n);
      res_job_[n] = job;
      res_queue_[n] = queue;
      spare_[n] = plan_->avail(n);
      res_time_[n] = slot.start;
      res_guarded_[n] = guarded;
    } else {
      res_guarded_[n] = res_guarded_[n] || guarded;
      if (res_queue_[n] != queue) res_queue_[n] = kNoQueue;
      res_time_[n] = std::min(res_time_[n], slot.start);
      spare_[n] = core::Resources::Min(spare_[n], plan_->avail(n));
    }
    live_.SetAvail(n, View(n));
  }
  out_.reservations.push_back({job, slot.start, slot.allocations});
}

void CycleRun::FillNeed(PendingReason& r, const PendingJob& j) const {
  r.replicas = j.replicas;
  r.per_replica_gpus = j.per_replica.gpus;
  r.gpu_type = j.gpu_type;
  r.scope = j.topology;
  r.features = j.required_features;
}

void CycleRun::FillNumbers(PendingReason& r, const PendingJob& j, bool ever) {
  if (!options_.explain && !ever) return;
  FillNeed(r, j);
  const FreeIndex& ix =
      ever ? capacity_.For(j.required_features, snap_.nodes) : live_.For(j.required_features, snap_.nodes);
  if (ever) {
    auto [it, inserted] = node_limits_.try_emplace({j.gpu_type, j.per_replica.gpus, j.required_features});
    NodeLimits& most = it->second;
    if (inserted) {
      for (const core::Node& n : snap_.nodes) {
        if (!n.schedulable || !core::HasFeatures(n.features, j.required_features)) continue;
        most.with_features = true;
        if (n.spec.capacity.gpus < j.per_replica.gpus) continue;
        if (j.gpu_type != core::kAnyGpuType && n.gpu_type != j.gpu_type) continue;
        most.any = true;
        most.cpu_milli = std::max(most.cpu_milli, n.spec.capacity.cpu_milli);
        most.memory_bytes = std::max(most.memory_bytes, n.spec.capacity.memory_bytes);
      }
    }
    r.no_node_with_features = j.required_features != 0 && !most.with_features;
    if (most.any) {  // else no node holds a replica's GPUs: the GPUs explain it
      r.per_replica_cpu_milli = j.per_replica.cpu_milli;
      r.per_replica_memory_bytes = j.per_replica.memory_bytes;
      r.largest_node_cpu_milli = most.cpu_milli;
      r.largest_node_memory_bytes = most.memory_bytes;
    }
  }
  for (int32_t t = 0; t < ix.num_types(); ++t) {
    if (j.gpu_type != core::kAnyGpuType && t != j.gpu_type) continue;
    r.free_gpus += ix.type(t).free_gpus;
    r.largest_node_free = std::max(r.largest_node_free, ix.LargestNodeFree(t));
    r.largest_leaf_free = std::max(r.largest_leaf_free, LargestLeafFree(ix, t));
  }
}

int64_t CycleRun::LargestLeafFree(const FreeIndex& ix, int32_t t) {
  auto& cache = leaf_cache_[&ix];
  if (cache.size() != static_cast<size_t>(ix.num_types())) cache.assign(ix.num_types(), {UINT64_MAX, 0});
  if (cache[t].first != ix.version()) cache[t] = {ix.version(), ix.LargestLeafFree(t)};
  return cache[t].second;
}

}  // namespace muster::scheduler::internal
