// ControlLoop: a reloaded configuration applied (server/config_reload.h),
// and the queues admins make through the API (server/api_queues.h).
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/message_text.h"
#include "server/control_loop.h"

namespace muster::server {

Status ControlLoop::Reconfigure(const ServerOptions& next) {
  {
    std::lock_guard<std::mutex> lock(reconfigure_mu_);
    if (!started_) {
      // A standby: its state is restored later, with these.
      pending_config_ = next;
      return Status::Ok();
    }
  }
  return loop_.Call<Status>([this, &next](Done<Status> done) { done(ApplyConfig(next)); },
                            Unavailable("the server is stopping"));
}

Status ControlLoop::ApplyQueues(const core::ClusterConfig& cluster, const scheduler::FairShareOptions& fairshare) {
  const QueuesInForce queues = api_queues_.Merge(cluster.queues, fairshare.shares);
  core::ClusterConfig merged = cluster;
  merged.queues = queues.quotas;
  scheduler::FairShareOptions fs = fairshare;
  fs.shares = queues.shares;
  RETURN_IF_ERROR(state_.Reconfigure(std::move(merged)));
  fairshare_.SetOptions(fs);
  file_cluster_ = cluster;
  file_fairshare_ = fairshare;
  for (const std::string& name : queues.shadowed) {
    log::Warn("queue {} is defined in the configuration file and through the API; the file's definition is in force",
              name);
  }
  for (const std::string& why : queues.left_out) log::Warn("API queue {} is left out", why);
  dirty_ = true;  // the next cycle schedules by them
  return Status::Ok();
}

Status ControlLoop::ApplyConfig(const ServerOptions& next) {
  RETURN_IF_ERROR(ApplyQueues(next.cluster, next.fairshare));
  settings_.Set(next);
  return Status::Ok();
}

Status ControlLoop::ApplyPendingConfig() {
  std::lock_guard<std::mutex> lock(reconfigure_mu_);
  started_ = true;
  if (!pending_config_) return Status::Ok();
  const ServerOptions next = std::move(*pending_config_);
  pending_config_.reset();
  return ApplyConfig(next);
}

namespace {

Status FileQueueRefusal(const std::string& name, const std::string& config_path) {
  return FailedPrecondition("queue " + QuoteForMessage(name) + " is defined in the configuration file" +
                            (config_path.empty() ? "" : " " + config_path) +
                            "; change it there and reload (SIGHUP)");
}

bool InFileQueues(const core::ClusterConfig& file, const std::string& name) {
  for (const core::QueueConfig& q : file.queues) {
    if (q.name == name) return true;
  }
  return false;
}

}  // namespace

void ControlLoop::PutQueue(nlohmann::json body, std::string path_name, const Identity& who, store::AuditRow audit,
                           Done<StatusOr<QueueView>> done) {
  using R = StatusOr<QueueView>;
  loop_.Async<R>([this, body = std::move(body), path_name, user = who.Describe(), audit = std::move(audit)](
                     std::function<void(R)> reply) mutable {
    auto q = ApiQueueFromJson(body, path_name);
    if (!q.ok()) return reply(q.status());
    const std::string name = q->quota.name;
    if (InFileQueues(file_cluster_, name)) return reply(FileQueueRefusal(name, options_.config_path));
    const bool existed = api_queues_.Find(name) != nullptr;
    if (path_name.empty() && existed) {
      return reply(Status(StatusCode::kFailedPrecondition,
                          "queue " + QuoteForMessage(name) + " exists; PUT /v1/queues/" + name + " changes it",
                          "name"));
    }
    if (Status s = api_queues_.CheckPut(*q, file_cluster_.queues); !s.ok()) return reply(s);
    const ApiQueues before = api_queues_;
    api_queues_.Put(ApiQueue{*q, user, clock_.Now()});
    if (Status s = ApplyQueues(file_cluster_, file_fairshare_); !s.ok()) {
      api_queues_ = before;
      return reply(s);
    }
    store::WriteBatch b;
    b.meta.emplace_back(ApiQueues::kMetaKey, api_queues_.Dump());
    const std::string definition = QueueEntryJson(*q).dump();
    b.events.push_back(Event(0, existed ? "QueueChanged" : "QueueCreated", "", definition + ", by " + user));
    audit.detail = definition;
    b.audit.push_back(std::move(audit));
    QueueView view;
    view.name = name;
    view.guarantee = q->quota.guarantee;
    view.limit = q->quota.limit;
    view.parent = q->quota.parent;
    view.share = q->share;
    view.source = "api";
    view.changed_by = user;
    Persist(std::move(b), [reply, view](const Status& s) { s.ok() ? reply(view) : reply(s); });
  }, std::move(done), ShuttingDown());
}

void ControlLoop::DeleteQueue(std::string name, store::AuditRow audit, Done<StatusOr<bool>> done) {
  using R = StatusOr<bool>;
  loop_.Async<R>([this, name, audit = std::move(audit)](std::function<void(R)> reply) mutable {
    if (InFileQueues(file_cluster_, name)) return reply(FileQueueRefusal(name, options_.config_path));
    if (api_queues_.Find(name) == nullptr) return reply(false);
    if (Status s = api_queues_.CheckRemove(name, file_cluster_.queues); !s.ok()) return reply(s);
    const ApiQueues before = api_queues_;
    api_queues_.Remove(name);
    if (Status s = ApplyQueues(file_cluster_, file_fairshare_); !s.ok()) {
      api_queues_ = before;
      return reply(s);
    }
    store::WriteBatch b;
    b.meta.emplace_back(ApiQueues::kMetaKey, api_queues_.Dump());
    b.events.push_back(Event(0, "QueueDeleted", "", name + ", by " + audit.actor));
    b.audit.push_back(std::move(audit));
    Persist(std::move(b), [reply](const Status& s) { s.ok() ? reply(true) : reply(s); });
  }, std::move(done), ShuttingDown());
}

}  // namespace muster::server
