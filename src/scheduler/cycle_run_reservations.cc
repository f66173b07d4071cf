// CycleRun: admin reservations (core::AdminReservation): their jobs first,
// on their nodes, then the nodes held for everyone else.
#include "scheduler/cycle_run.h"

namespace muster::scheduler::internal {

void CycleRun::ConsiderReservations() {
  std::vector<int32_t> members;
  for (size_t i = 0; i < snap_.pending.size(); ++i) {
    if (snap_.pending[i].reservation != core::kNoReservation) members.push_back(static_cast<int32_t>(i));
  }
  if (!members.empty()) {
    std::sort(members.begin(), members.end(), [&](int32_t a, int32_t b) {
      const PendingJob &x = snap_.pending[a], &y = snap_.pending[b];
      return std::tie(x.submit_time, x.id) < std::tie(y.submit_time, y.id);
    });
    first_.assign(snap_.pending.size(), false);
    for (int32_t i : members) {
      first_[i] = true;
      ConsiderMember(snap_.pending[i]);
      if (!options_.explain) Considered(snap_.pending[i]);
    }
  }
  for (const core::ReservationWindow& w : snap_.reservations) {
    if (w.end <= snap_.now) continue;
    for (NodeIndex n : w.nodes) HoldForReservation(n, std::max(w.start, snap_.now));
  }
}

void CycleRun::ConsiderMember(const PendingJob& j) {
  ++out_.stats.jobs_considered;
  PendingReason r;
  r.job = j.id;
  if (j.reservation == core::kReservationGone) return Explain(r, ReasonCode::kReservation);
  if (Waits(j, r)) return;
  const core::ReservationWindow& w = snap_.reservations[j.reservation];
  r.reservation = w.name;
  if (w.start > snap_.now) {
    r.begin_time = w.start;
    return Explain(r, ReasonCode::kReservation);
  }
  if (j.time_limit.is_infinite() || snap_.now + j.time_limit > w.end) {
    r.reservation_end = w.end;
    return Explain(r, ReasonCode::kReservation);
  }
  if (QuotaBlocks(j, j.gpu_type, r)) {
    return Explain(r, r.queue_limit < j.total_gpus() ? ReasonCode::kUnschedulable : ReasonCode::kQuota);
  }
  const Shape shape = ShapeOf(j);
  FreeIndex on_its_nodes = Live(shape);
  for (size_t n = 0; n < on_its_nodes.num_nodes(); ++n) {
    const auto node = static_cast<NodeIndex>(n);
    if (on_its_nodes.indexed(node) && std::find(w.nodes.begin(), w.nodes.end(), node) == w.nodes.end()) {
      on_its_nodes.Drop(node);
    }
  }
  if (auto placed = FindPlacement(on_its_nodes, shape)) {
    if (j.gpu_type == core::kAnyGpuType && QuotaBlocks(j, TypeOf(*placed), r)) return Explain(r, ReasonCode::kQuota);
    return Start(j, std::move(*placed), EndsOf(j));
  }
  FillNumbers(r, j, /*ever=*/false);
  Explain(r, ReasonCode::kResources);
}

void CycleRun::HoldForReservation(NodeIndex n, Time from) {
  if (!live_.all().indexed(n)) return;  // not schedulable: nothing to hold
  admin_held_.push_back(n);
  max_reserved_actual_ = -1;
  if (res_time_[n].is_max()) {
    reserved_nodes_.push_back(n);
    res_job_[n] = 0;
  }
  res_time_[n] = std::min(res_time_[n], from);
  spare_[n] = core::Resources{};
  res_guarded_[n] = true;
  res_queue_[n] = kNoQueue;
  live_.SetAvail(n, View(n));
}

}  // namespace muster::scheduler::internal
