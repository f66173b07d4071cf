// The control loop's side of preemption: stopping the victims the scheduler
// chose, holding what they free for the preemptor, and dropping holds the
// preemptor did not use (server/preemption_record.h keeps them).
#include <algorithm>
#include <string>

#include "scheduler/preemption.h"
#include "server/control_loop.h"

namespace muster::server {

namespace {

std::string GpuMinutes(int64_t gpu_seconds) { return std::to_string((gpu_seconds + 59) / 60) + " GPU-minutes"; }

}  // namespace

void ControlLoop::ApplyPreemption(const core::Preemption& p, Time now, store::WriteBatch& b) {
  const core::JobRecord* preemptor = state_.Find(p.job);
  if (preemptor == nullptr || preemptor->state != core::JobState::kPending) return;
  // Why: a higher class, the preemptor's queue reclaiming its guarantee, or
  // (the las policy) less service than the victim's.
  const std::string cause = p.reclaim       ? "whose queue " + preemptor->spec.queue + " reclaims its guaranteed GPUs"
                            : p.for_service ? "which has run less, under the las policy"
                                            : "class " + preemptor->spec.priority_class;
  PreemptionRecord::Hold hold;
  Duration longest = Duration::Zero();
  int64_t lost = 0;
  std::string names;
  // Elastic jobs give back their newest replicas; they run on.
  std::string shrunk;
  for (const core::Shrink& sh : p.shrinks) {
    const lifecycle::Attempt* a = lifecycle_.Find(sh.job);
    if (a == nullptr || a->Stopping() || a->shrink_to > 0) continue;
    const int32_t number = a->number;
    if (!p.grace.is_infinite() && p.grace < a->terms.grace) {
      lifecycle_.CutGrace(sh.job, p.grace);
      preemptions_.CutGrace(sh.job, number, p.grace);
    }
    lifecycle::Effects fx;
    const std::vector<int32_t> leaving =
        lifecycle_.Shrink(sh.job, sh.keep, "for job " + std::to_string(p.job) + " (" + cause + ")", fx);
    if (leaving.empty()) continue;
    ApplyEffects(fx, b);
    longest = std::max(longest, lifecycle_.Find(sh.job)->terms.grace);
    hold.victims.push_back(sh.job);
    shrunk += (shrunk.empty() ? "" : ", ") + std::to_string(leaving.size()) + " of job " + std::to_string(sh.job) +
              "'s replicas";
  }
  for (core::JobId v : p.victims) {
    if (std::any_of(p.shrinks.begin(), p.shrinks.end(), [&](const core::Shrink& sh) { return sh.job == v; })) continue;
    const lifecycle::Attempt* a = lifecycle_.Find(v);
    auto r = state_.running().find(v);
    // The scheduler only names running jobs that are not stopping.
    if (a == nullptr || a->Stopping() || r == state_.running().end()) continue;
    const int64_t victim_lost = scheduler::LostGpuSeconds(r->second, now);
    // The preemptor's class may bound how long it waits for the victim.
    if (!p.grace.is_infinite() && p.grace < a->terms.grace) {
      lifecycle_.CutGrace(v, p.grace);
      preemptions_.CutGrace(v, a->number, p.grace);
    }
    lost += victim_lost;
    if (metrics_ != nullptr)
      metrics_->CountPreemption(state_.QueueName(r->second.queue), static_cast<double>(victim_lost));
    longest = std::max(longest, a->terms.grace);
    const std::string why = "Preempted: for job " + std::to_string(p.job) + " (" + cause + "), losing about " +
                            GpuMinutes(victim_lost) + " of work since its last checkpoint";
    b.events.push_back(Event(v, "Preempted", "", why));
    lifecycle::Effects fx;
    // An interactive job's victims go ahead of drains and other preemptions:
    // someone is waiting at a prompt.
    lifecycle_.Stop(v, std::nullopt, /*requeue=*/true, why,
                    p.interactive ? lifecycle::StopPace::kUrgent : lifecycle::StopPace::kStaggered, fx);
    ApplyEffects(fx, b);
    hold.victims.push_back(v);
    names += (names.empty() ? "" : ", ") + std::to_string(v);
  }
  if (hold.victims.empty()) return;
  if (!state_.Nominate(p.job, p.allocations, hold.victims).ok()) return;
  // The stops may be staggered behind others: allow for the queue of stops,
  // every grace period, and a few cycles.
  hold.deadline = lifecycle_.NextStopSlot() + longest + Duration::Minutes(2);
  std::string where;
  int64_t gpus = 0;
  for (const core::Allocation& a : p.allocations) {
    where += (where.empty() ? "" : ", ") + state_.nodes()[a.node].spec.name;
    gpus += a.resources.gpus;
  }
  hold.gpus = gpus;
  preemptions_.AddHold(p.job, std::move(hold));
  const std::string stopping = names.empty()
                                   ? ""
                                   : "stopping job" + std::string(names.find(',') != std::string::npos ? "s " : " ") +
                                         names + " (about " + GpuMinutes(lost) + " of work since their checkpoints)";
  b.events.push_back(Event(p.job, "Preempting", "",
                           std::string(p.reclaim ? "reclaiming its queue's guarantee: " : "") +
                               (shrunk.empty() ? "" : "taking " + shrunk + (stopping.empty() ? "" : "; ")) + stopping +
                               "; " + std::to_string(gpus) + " GPU on " + where + " held for it"));
  pacer_.Changed();
}

void ControlLoop::SweepPreemptions(Time now, store::WriteBatch& b) {
  using Preemptor = PreemptionRecord::Preemptor;
  const auto where = [this](int64_t job) {
    const core::JobRecord* rec = state_.Find(job);
    const core::JobState st = rec ? rec->state : core::JobState::kCancelled;
    // It started (and may have ended since: a short job can run and end
    // between two sweeps): the preemption served its purpose.
    if (st == core::JobState::kRunning || st == core::JobState::kCompleting ||
        (rec != nullptr && core::IsTerminal(st) && !rec->start_time.is_max())) {
      return Preemptor::kStarted;
    }
    return st == core::JobState::kPending ? Preemptor::kWaiting : Preemptor::kGone;
  };
  for (const PreemptionRecord::Lapsed& l : preemptions_.Sweep(now, where)) {
    const core::JobRecord* rec = state_.Find(l.preemptor);
    const core::JobState st = rec ? rec->state : core::JobState::kCancelled;
    if (st == core::JobState::kPending || st == core::JobState::kHeld) (void)state_.Nominate(l.preemptor, {}, {});
    for (int64_t v : l.victims) {
      if (jobs_.Find(v) == nullptr) continue;
      (void)state_.SetPreemptImmune(v, true);
      preemptions_.MarkImmune(v, now);
      b.events.push_back(Event(v, "PreemptionLapsed", "",
                               "job " + std::to_string(l.preemptor) + ", which it was preempted for, did not start (" +
                                   core::JobStateName(st) +
                                   "); it is not preempted again before its next attempt ends"));
    }
  }
}

}  // namespace muster::server
