// QueueAdmin: the queues in force and where each comes from, one concern of
// ControlLoop: the configuration file's queues and fair-share options (as
// of the last good reload), the queues admins make through the API
// (server/api_queues.h), and a reload that comes while the loop has not
// started yet (a standby), kept until it does.
//
// The loop gives the cluster state and fair share what Merge returns, and
// records the file's part with SetFile once that is in force. An API change
// is made tentatively (Put, Remove) after its checks; if the merge it
// leads to is refused, Undo puts the API queues back as they were.
//
// Thread-safety: DeferUntilStarted and MarkStarted from any thread; the
// rest on the loop's thread.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "common/time.h"
#include "config/queue_list.h"
#include "core/cluster_state.h"
#include "scheduler/fairshare.h"
#include "server/api_queues.h"
#include "server/options.h"

namespace muster::server {

class QueueAdmin {
 public:
  // The file's queues and fair share at start; `config_path` names the
  // file in refusals.
  explicit QueueAdmin(const ServerOptions& options);

  // The API's queues as the store keeps them ("" or absent: none);
  // DataLoss when damaged.
  Status Load(const std::string& stored);
  bool has_api_queues() const { return !api_.all().empty(); }
  // The store's document of the API's queues (ApiQueues::kMetaKey).
  std::string Dump() const { return api_.Dump(); }

  struct InForce {
    core::ClusterConfig cluster;            // the file's, with the queues in force
    scheduler::FairShareOptions fairshare;  // the file's, with every queue's share
    std::vector<std::string> shadowed;      // API queues the file names too
    std::vector<std::string> left_out;      // API queues not in force: "NAME (why)"
  };
  // The file's `cluster` and `fairshare` (a reload's, or those in force)
  // with the API's queues merged in.
  InForce Merge(const core::ClusterConfig& cluster, const scheduler::FairShareOptions& fairshare) const;
  // The file's part, once a merge of it is in force.
  void SetFile(const core::ClusterConfig& cluster, const scheduler::FairShareOptions& fairshare);
  const core::ClusterConfig& file_cluster() const { return file_cluster_; }
  const scheduler::FairShareOptions& file_fairshare() const { return file_fairshare_; }

  struct QueueSource {
    std::optional<int64_t> share;  // its fair-share share, when configured
    std::string source;            // "file", "api", or "" (a queue only jobs name)
    std::string changed_by;        // an API queue's last writer
  };
  // Where the queue `name` in force comes from.
  QueueSource SourceOf(const std::string& name) const;

  // Puts `q` through the API for `user` (created: `create`, POST; else
  // created or replaced, PUT); whether it existed. Refused, nothing
  // changed: a queue of the file (FailedPrecondition naming the file), an
  // existing one to create (FailedPrecondition, "name"), or as
  // ApiQueues::CheckPut says.
  StatusOr<bool> Put(const config::QueueEntry& q, bool create, const std::string& user, Time now);
  // Removes the API's queue `name`; false when there was none. Refused, as
  // Put, for the file's queues, and as ApiQueues::CheckRemove says.
  StatusOr<bool> Remove(const std::string& name);
  // Back to the API queues as they were before the last Put or Remove.
  void Undo() { api_ = before_; }

  // A reload while not started: kept for MarkStarted (true), or not (false:
  // apply it now).
  bool DeferUntilStarted(const ServerOptions& next);
  // The loop starts: what a reload deferred, if one did.
  std::optional<ServerOptions> MarkStarted();

 private:
  Status RefuseFileQueue(const std::string& name) const;

  const std::string config_path_;
  core::ClusterConfig file_cluster_;
  scheduler::FairShareOptions file_fairshare_;
  ApiQueues api_;
  ApiQueues before_;  // as of before the last Put or Remove
  Mutex mu_;
  bool started_ GUARDED_BY(mu_) = false;
  std::optional<ServerOptions> deferred_ GUARDED_BY(mu_);
};

}  // namespace muster::server
