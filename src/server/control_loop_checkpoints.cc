// ControlLoop: checkpoint commits (who may commit; the entries are the
// CheckpointCatalog's), the checkpoint each attempt resumed from, and
// progress (see "Checkpoints and progress" in control_loop.h).
#include <nlohmann/json.hpp>

#include "server/control_loop.h"

#include <fmt/format.h>

#include "common/log.h"

namespace muster::server {

using core::JobState;
using nlohmann::json;
using store::JobRow;

void ControlLoop::CommitCheckpoint(CheckpointCatalog::Commit c, Identity who,
                                   Done<StatusOr<store::CheckpointRow>> done) {
  using R = StatusOr<store::CheckpointRow>;
  loop_.Async<R>(
      [this, c = std::move(c), who = std::move(who)](std::function<void(R)> reply) {
        const std::string job_name = "job " + std::to_string(c.job);
        if (auto managed = ManagedJob(c.job, who, "commit checkpoints for"); !managed.ok())
          return reply(managed.status());
        // Fencing: only the attempt that runs now may commit.
        auto a = details_.find(c.job);
        const lifecycle::Attempt* running = lifecycle_.Find(c.job);
        if (a == details_.end() || running == nullptr || running->number != c.attempt) {
          const std::string now_running =
              running == nullptr ? "it has no running attempt" : "it runs attempt " + std::to_string(running->number);
          return reply(FailedPrecondition("attempt " + std::to_string(c.attempt) + " of " + job_name +
                                          " is not the current one (" + now_running + "); its checkpoint is refused"));
        }
        if (!a->second.spec || !a->second.spec->checkpoint) {
          return reply(FailedPrecondition(job_name + " has no checkpoint.dir in its spec"));
        }
        const Time now = clock_.Now();
        store::WriteBatch b;
        const StatusOr<CheckpointCatalog::Committed> added =
            checkpoints_.Add(c, a->second.spec->checkpoint->dir, a->second.spec->checkpoint->keep, now, b);
        if (!added.ok()) return reply(added.status());
        if (added->repeated) return reply(added->entry);  // a retried request
        (void)state_.NoteCheckpoint(c.job, now);          // what a preemption would lose starts here
        lifecycle_.NoteCheckpointSize(c.job, c.bytes);    // what its next one writes (the storage's budget)
        // The checkpoints retention dropped are deleted once the catalog no
        // longer offers them durably.
        Persist(std::move(b), [this, reply, entry = added->entry, dropped = added->dropped](const Status& s) {
          if (!s.ok()) return reply(s);
          for (const auto& [location, sha] : dropped) janitor_->Remove(location, sha, entry.job_id);
          reply(entry);
        });
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::RecordResume(int64_t job, const proto::TaskReport& t, store::WriteBatch& b) {
  AttemptDetail& a = details_.at(job);
  checkpoints_.MarkCorrupt(job, t.replica, t.skipped, clock_.Now(), b);
  if (a.resume_recorded) {
    const int64_t first = a.resumed_from.is_object() ? a.resumed_from.value("seq", int64_t{0}) : 0;
    if (first != t.resumed_seq) {
      b.events.push_back(Event(job, "ResumeMismatch", "",
                               "replica " + std::to_string(t.replica) + " resumed from checkpoint " +
                                   std::to_string(t.resumed_seq) + ", another replica from " + std::to_string(first)));
    }
    return;
  }
  a.resume_recorded = true;
  if (const store::CheckpointRow* e = t.resumed_seq > 0 ? checkpoints_.Find(job, t.resumed_seq) : nullptr) {
    a.resumed_from = {{"seq", e->seq}, {"step", e->step}, {"location", e->location}};
    b.events.push_back(Event(job, "Resumed", "",
                             "attempt " + std::to_string(t.attempt) + " resumes from " +
                                 CheckpointCatalog::Describe(*e) + " at " + e->location));
  } else {
    a.resumed_from = nullptr;
    b.events.push_back(Event(job, "Resumed", "NoCheckpoint",
                             "attempt " + std::to_string(t.attempt) +
                                 " starts from the beginning: none of its checkpoints passed verification"));
  }
  jobs_.Write(job, b);
}

void ControlLoop::RecordImageState(int64_t job, const proto::TaskReport& t, const std::string& node,
                                   store::WriteBatch& b) {
  const AttemptDetail& d = details_.at(job);
  const std::string image = d.spec && d.spec->image ? *d.spec->image : "its image";
  const std::string where = "replica " + std::to_string(t.replica) + " on " + node;
  if (t.image_state == "pulling") {
    b.events.push_back(Event(job, "PullingImage", "", where + " is pulling image " + image));
  } else if (t.image_state == "pulled" && t.pull_ms >= 0) {
    b.events.push_back(
        Event(job, "PulledImage", "", fmt::format("{} pulled image {} in {:.1f} s", where, image, t.pull_ms / 1000.0)));
  }
}

void ControlLoop::OnStraggler(const StragglerDetector::Change& c, store::WriteBatch& b) {
  const lifecycle::Attempt* a = lifecycle_.Find(c.job);
  if (a == nullptr || a->number != c.attempt || c.replica >= static_cast<int32_t>(a->replicas.size())) return;
  const std::string& node = state_.nodes()[a->replicas[c.replica].node].spec.name;
  const std::string replica = "replica " + std::to_string(c.replica) + " on " + node;
  if (!c.straggling) {
    b.events.push_back(Event(c.job, "StragglerRecovered", "", replica + " keeps pace with its siblings again"));
    return;
  }
  const std::string why = fmt::format("{} trains at {:.3g} steps/s, {:.0f}% of its siblings' median ({:.3g} steps/s)",
                                      replica, c.rate, 100 * c.rate / c.siblings_rate, c.siblings_rate);
  b.events.push_back(Event(c.job, "Straggler", "", why));
  log::Warn("job {}: {}", c.job, why);
  if (metrics_ != nullptr) metrics_->CountStraggler(jobs_.at(c.job).queue);
  if (!options_.stragglers.cordon) return;
  // The policy: no new work on its node (the job runs on; admins look and uncordon).
  AgentRegistry::Agent* agent = agents_.Find(node);
  if (agent == nullptr || !agent->cordon.empty()) return;
  const std::string cordon = "cordoned for a straggler: job " + std::to_string(c.job) + " " + why;
  if (std::optional<std::string> status = agents_.SetCordon(*agent, cordon)) {
    b.nodes.push_back({node, *status, "READY", clock_.Now().millis()});
  }
  if (const std::optional<core::NodeIndex> index = state_.FindNode(node)) UpdateSchedulable(*index);
  b.events.push_back({0, 0, clock_.Now().millis(), "NodeCordoned", "Straggler", node + " " + cordon});
}

void ControlLoop::ReportProgress(ProgressReport p, Done<StatusOr<ProgressAnswer>> done) {
  using R = StatusOr<ProgressAnswer>;
  loop_.Async<R>(
      [this, p = std::move(p)](std::function<void(R)> reply) {
        const std::string job_name = "job " + std::to_string(p.job);
        auto managed = ManagedJob(p.job, p.who, "report progress for");
        if (!managed.ok()) return reply(managed.status());
        auto a = details_.find(p.job);
        const lifecycle::Attempt* running = lifecycle_.Find(p.job);
        if (a == details_.end() || running == nullptr || running->number != p.attempt) {
          return reply(
              FailedPrecondition("attempt " + std::to_string(p.attempt) + " of " + job_name + " is not running"));
        }
        AttemptDetail& at = a->second;
        const Time now_time = clock_.Now();
        const int64_t now = now_time.millis();
        lifecycle_.NoteProgress(p.job, p.step);
        if (!p.metrics.empty()) at.metrics = p.metrics;
        if (!p.message.empty()) at.progress_message = p.message;
        // Where the job serves something (a shell relay waiting for its user) is
        // written at once; other progress at most every 10 s.
        const bool new_endpoints = p.endpoints.is_object() && p.endpoints != at.endpoints;
        if (new_endpoints) at.endpoints = p.endpoints;
        ProgressAnswer answer{running->number, running->StopReleased(now_time)};
        store::WriteBatch events;
        if (p.replica && p.step && *p.replica < static_cast<int32_t>(running->replicas.size())) {
          stragglers_.Note(p.job, p.attempt, *p.replica, *p.step, now_time);
          for (const StragglerDetector::Change& c : stragglers_.Evaluate(p.job, now_time)) OnStraggler(c, events);
        }
        if (!events.empty()) Persist(std::move(events), nullptr);
        // GET /v1/jobs/{id} builds the job's status from the loop's state
        // (Explain); the store (lists) gets progress at most every 10 s a job:
        // it is not a promise that needs to be durable before the answer.
        if (new_endpoints || now - at.progress_persisted_ms >= 10'000) {
          at.progress_persisted_ms = now;
          store::WriteBatch b;
          jobs_.Write(p.job, b);
          Persist(std::move(b), nullptr);
        }
        reply(answer);
      },
      std::move(done), ShuttingDown());
}

}  // namespace muster::server
