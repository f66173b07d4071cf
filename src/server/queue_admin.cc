#include "server/queue_admin.h"

#include <algorithm>

#include "common/message_text.h"

namespace muster::server {

QueueAdmin::QueueAdmin(const ServerOptions& options)
    : config_path_(options.config_path), file_cluster_(options.cluster), file_fairshare_(options.fairshare) {}

Status QueueAdmin::Load(const std::string& stored) {
  RETURN_IF_ERROR(api_.Load(stored));
  before_ = api_;
  return Status::Ok();
}

QueueAdmin::InForce QueueAdmin::Merge(const core::ClusterConfig& cluster,
                                      const scheduler::FairShareOptions& fairshare) const {
  QueuesInForce queues = api_.Merge(cluster.queues, fairshare.shares);
  InForce in_force{cluster, fairshare, std::move(queues.shadowed), std::move(queues.left_out)};
  in_force.cluster.queues = std::move(queues.quotas);
  in_force.fairshare.shares = std::move(queues.shares);
  return in_force;
}

void QueueAdmin::SetFile(const core::ClusterConfig& cluster, const scheduler::FairShareOptions& fairshare) {
  file_cluster_ = cluster;
  file_fairshare_ = fairshare;
}

QueueAdmin::QueueSource QueueAdmin::SourceOf(const std::string& name) const {
  const QueuesInForce in_force = api_.Merge(file_cluster_.queues, file_fairshare_.shares);
  QueueSource out;
  // Configured shares are integers.
  if (auto share = in_force.shares.find(name); share != in_force.shares.end())
    out.share = static_cast<int64_t>(share->second);
  if (auto source = in_force.source.find(name); source != in_force.source.end()) out.source = source->second;
  if (out.source == "api") out.changed_by = api_.Find(name)->changed_by;
  return out;
}

Status QueueAdmin::RefuseFileQueue(const std::string& name) const {
  return FailedPrecondition("queue " + QuoteForMessage(name) + " is defined in the configuration file" +
                            (config_path_.empty() ? "" : " " + config_path_) + "; change it there and reload (SIGHUP)");
}

StatusOr<bool> QueueAdmin::Put(const config::QueueEntry& q, bool create, const std::string& user, Time now) {
  const std::string& name = q.quota.name;
  const auto in_file = [&](const core::QueueConfig& c) { return c.name == name; };
  if (std::any_of(file_cluster_.queues.begin(), file_cluster_.queues.end(), in_file)) return RefuseFileQueue(name);
  const bool existed = api_.Find(name) != nullptr;
  if (create && existed) {
    return Status(StatusCode::kFailedPrecondition,
                  "queue " + QuoteForMessage(name) + " exists; PUT /v1/queues/" + name + " changes it", "name");
  }
  RETURN_IF_ERROR(api_.CheckPut(q, file_cluster_.queues));
  before_ = api_;
  api_.Put(ApiQueue{q, user, now});
  return existed;
}

StatusOr<bool> QueueAdmin::Remove(const std::string& name) {
  const auto in_file = [&](const core::QueueConfig& c) { return c.name == name; };
  if (std::any_of(file_cluster_.queues.begin(), file_cluster_.queues.end(), in_file)) return RefuseFileQueue(name);
  if (api_.Find(name) == nullptr) return false;
  RETURN_IF_ERROR(api_.CheckRemove(name, file_cluster_.queues));
  before_ = api_;
  api_.Remove(name);
  return true;
}

bool QueueAdmin::DeferUntilStarted(const ServerOptions& next) {
  MutexLock lock(mu_);
  if (started_) return false;
  deferred_ = next;
  return true;
}

std::optional<ServerOptions> QueueAdmin::MarkStarted() {
  MutexLock lock(mu_);
  started_ = true;
  std::optional<ServerOptions> next = std::move(deferred_);
  deferred_.reset();
  return next;
}

}  // namespace muster::server
