#include "scheduler/backfill_plan.h"

#include <algorithm>

namespace muster::scheduler {

BackfillPlan::BackfillPlan(const FeatureViews& now_free, const core::ClusterSnapshot& snap,
                           std::vector<PlannedRelease> started, bool predicted)
    : snap_(snap),
      plan_(now_free),
      cursor_(snap.now),
      running_(predicted ? *snap.running_by_predicted_end : *snap.running_by_end),
      next_running_(running_.begin()) {
  for (PlannedRelease& r : started) Push(r.at, std::move(r.allocations));
  if (!predicted) return;
  // Jobs that ran past their prediction are planned to run to their limit
  // (or, past that too, to end at once).
  for (; next_running_ != running_.end() && next_running_->first < snap.now; ++next_running_) {
    const core::RunningJob& r = snap.running->at(next_running_->second);
    Push(r.expected_end, r.allocations);
  }
}

void BackfillPlan::Push(Time at, std::vector<core::Allocation> allocations) {
  if (at.is_max()) return;  // held for good
  extra_.push(Pending{at, seq_++, std::move(allocations)});
}

bool BackfillPlan::AdvanceOnce(std::vector<NodeIndex>& grown) {
  const Time running_next = next_running_ == running_.end() ? Time::Max() : next_running_->first;
  const Time extra_next = extra_.empty() ? Time::Max() : extra_.top().at;
  const Time t = std::min(running_next, extra_next);
  if (t.is_max()) return false;
  auto give = [&](const core::Allocation& a) {
    if (!plan_.all().indexed(a.node)) return;  // node not schedulable: nothing to gain
    plan_.SetAvail(a.node, plan_.all().avail(a.node) + a.resources);
    grown.push_back(a.node);
  };
  while (next_running_ != running_.end() && next_running_->first == t) {
    const core::RunningJob& r = snap_.running->at(next_running_->second);
    for (const core::Allocation& a : r.allocations) give(a);
    ++next_running_;
    ++walked_;
  }
  while (!extra_.empty() && extra_.top().at == t) {
    for (const core::Allocation& a : extra_.top().allocations) give(a);
    extra_.pop();
    ++walked_;
  }
  // Jobs past their limit are expected to end at once, not in the past.
  cursor_ = std::max(cursor_, t);
  return true;
}

std::optional<BackfillPlan::Slot> BackfillPlan::Reserve(const Shape& shape, Duration limit) {
  std::vector<NodeIndex> grown;
  bool try_now = true;
  const FreeIndex& view = plan_.For(shape.features, snap_.nodes);
  while (true) {
    if (try_now) {
      if (auto p = FindPlacement(view, shape)) {
        for (const core::Allocation& a : *p) plan_.Take(a.node, a.resources);
        Push(cursor_ + limit, *p);
        return Slot{cursor_, std::move(*p)};
      }
    }
    grown.clear();
    if (!AdvanceOnce(grown)) return std::nullopt;
    try_now = false;
    for (NodeIndex n : grown) {
      if (MayFitAfterGrowth(view, shape, n)) {
        try_now = true;
        break;
      }
    }
  }
}

void BackfillPlan::OnStartedNow(const std::vector<core::Allocation>& allocations, Time end) {
  if (end <= cursor_) return;  // already released in the plan's present
  for (const core::Allocation& a : allocations) {
    if (plan_.all().indexed(a.node)) plan_.Take(a.node, a.resources);
  }
  Push(end, allocations);
}

}  // namespace muster::scheduler
