// ControlLoop: a reloaded configuration applied (server/config_reload.h),
// and the queues admins make through the API (server/api_queues.h); what
// is in force and where it comes from is queue_admin_'s (server/queue_admin.h).
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/message_text.h"
#include "server/control_loop.h"

namespace muster::server {

Status ControlLoop::Reconfigure(const ServerOptions& next) {
  // A standby: its state is restored later, with these.
  if (queue_admin_.DeferUntilStarted(next)) return Status::Ok();
  return loop_.Call<Status>([this, &next](const Done<Status>& done) { done(ApplyConfig(next)); },
                            Unavailable("the server is stopping"));
}

Status ControlLoop::ApplyQueues(const core::ClusterConfig& cluster, const scheduler::FairShareOptions& fairshare) {
  QueueAdmin::InForce in_force = queue_admin_.Merge(cluster, fairshare);
  RETURN_IF_ERROR(state_.Reconfigure(std::move(in_force.cluster)));
  fairshare_.SetOptions(in_force.fairshare);
  queue_admin_.SetFile(cluster, fairshare);
  for (const std::string& name : in_force.shadowed) {
    log::Warn("queue {} is defined in the configuration file and through the API; the file's definition is in force",
              name);
  }
  for (const std::string& why : in_force.left_out) log::Warn("API queue {} is left out", why);
  pacer_.Changed();  // the next cycle schedules by them
  return Status::Ok();
}

Status ControlLoop::ApplyConfig(const ServerOptions& next) {
  RETURN_IF_ERROR(ApplyQueues(next.cluster, next.fairshare));
  settings_.Set(next);
  return Status::Ok();
}

Status ControlLoop::ApplyQueueChange(const std::string& event_type, const std::string& event_message,
                                     store::AuditRow audit, std::function<void(const Status&)> then) {
  if (Status s = ApplyQueues(queue_admin_.file_cluster(), queue_admin_.file_fairshare()); !s.ok()) {
    queue_admin_.Undo();
    return s;
  }
  store::WriteBatch b;
  b.meta.emplace_back(ApiQueues::kMetaKey, queue_admin_.Dump());
  b.events.push_back(Event(0, event_type, "", event_message));
  b.audit.push_back(std::move(audit));
  Persist(std::move(b), std::move(then));
  return Status::Ok();
}

void ControlLoop::PutQueue(nlohmann::json body, const std::string& path_name, const Identity& who,
                           store::AuditRow audit, Done<StatusOr<QueueView>> done) {
  using R = StatusOr<QueueView>;
  loop_.Async<R>(
      [this, body = std::move(body), path_name, user = who.Describe(),
       audit = std::move(audit)](const std::function<void(R)>& reply) mutable {
        auto q = ApiQueueFromJson(body, path_name);
        if (!q.ok()) return reply(q.status());
        const StatusOr<bool> existed = queue_admin_.Put(*q, /*create=*/path_name.empty(), user, clock_.Now());
        if (!existed.ok()) return reply(existed.status());
        const std::string definition = QueueEntryJson(*q).dump();
        audit.detail = definition;
        QueueView view;
        view.name = q->quota.name;
        view.guarantee = q->quota.guarantee;
        view.limit = q->quota.limit;
        view.parent = q->quota.parent;
        view.share = q->share;
        view.source = "api";
        view.changed_by = user;
        const Status s = ApplyQueueChange(*existed ? "QueueChanged" : "QueueCreated", definition + ", by " + user,
                                          std::move(audit), [reply, view](const Status& st) {
                                            if (st.ok()) return reply(view);
                                            reply(st);
                                          });
        if (!s.ok()) reply(s);
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::DeleteQueue(const std::string& name, store::AuditRow audit, Done<StatusOr<bool>> done) {
  using R = StatusOr<bool>;
  loop_.Async<R>(
      [this, name, audit = std::move(audit)](const std::function<void(R)>& reply) mutable {
        const StatusOr<bool> removed = queue_admin_.Remove(name);
        if (!removed.ok() || !*removed) return reply(removed);
        const std::string message = name + ", by " + audit.actor;
        const Status s = ApplyQueueChange("QueueDeleted", message, std::move(audit),
                                          [reply](const Status& st) { st.ok() ? reply(true) : reply(st); });
        if (!s.ok()) reply(s);
      },
      std::move(done), ShuttingDown());
}

}  // namespace muster::server
