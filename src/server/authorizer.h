// Authorizer: what an authenticated identity may do, from the server's
// configuration (admins, server/auth_options.h). Every decision is made for
// the identity's effective user (an admin acting for another user has that
// user's rights, as Kubernetes' impersonation does); refusals are
// kPermissionDenied saying who may.
//
//                       user   queue admin   operator   admin
//   submit to a queue   its access list      any        any
//   see, act on a job   own    its queue's   any        any
//   read a job's logs   own    its queue's   -          any
//   cordon, drain       -      -             yes        yes
//   declare-lost, remove nodes, tokens for others, act for others: admins
//
// A job runs as its owner; an owner of uid 0 (root) only when named in
// auth.rootJobs.
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "server/identity.h"
#include "server/options.h"
#include "store/store.h"

namespace muster::server {

class Authorizer {
 public:
  explicit Authorizer(const ServerOptions& options) : options_(options) {}

  bool IsAdmin(std::string_view user) const;
  // Operators and admins.
  bool IsOperator(std::string_view user) const;
  bool IsQueueAdmin(std::string_view user, const std::string& queue) const;

  Status MaySubmit(const Identity& who, const std::string& queue) const;
  // See or act on (`verb`: "cancel", "see", ...) a job of `owner` in `queue`.
  Status MayManageJob(const Identity& who, const std::string& owner, const std::string& queue,
                      const std::string& verb) const;
  Status MayReadLogs(const Identity& who, const std::string& owner, const std::string& queue) const;
  // Cordon, uncordon, drain.
  Status MayOperateNodes(const Identity& who, const std::string& verb) const;
  // What only admins do (`verb` for the message).
  Status MustBeAdmin(const Identity& who, const std::string& verb) const;
  // A job owned by `user` may run as root (uid 0) only if configured.
  Status MayRunAsRoot(const std::string& user) const;
  // A job's own token (`who` of kind kJob) reading `job`: its own job only,
  // and no longer than limits.jobTokenAfterEnd after the job ended (at
  // `now_ms`). Refusals name the job.
  Status MayJobTokenRead(const Identity& who, const store::JobRow& job, int64_t now_ms) const;

 private:
  const ServerOptions& options_;
};

}  // namespace muster::server
