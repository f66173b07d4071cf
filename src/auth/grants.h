// Claims the server signs, with HMAC-SHA-256 under a key it shares with
// whoever checks them:
//
// Job tokens, "msj_<job>_<attempt>_<mac>": the credential a job's own
// processes get (MUSTER_TOKEN in their environment) to report progress and
// commit checkpoints for that job, as its owner, and nothing else. Signed
// with the cluster's key (kept in the store, shared by every server); the
// server also refuses them once the attempt is no longer the job's current
// one, so they end with the attempt.
//
// Log grants, "<expires_ms>.<mac>": the server's permission for one read of
// one task's log from the agent's log port, valid for a minute. Signed with
// the node's key: the SHA-256 of the agent's token secret, which the server
// keeps and the agent can compute; nobody else can make one.
//
// Thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::auth {

std::string SignJobToken(std::string_view key, int64_t job, int32_t attempt);
struct JobClaim {
  int64_t job = 0;
  int32_t attempt = 0;
};
bool IsJobToken(std::string_view text);
// kUnauthenticated when malformed or not signed with `key`.
StatusOr<JobClaim> VerifyJobToken(std::string_view key, std::string_view token);

std::string SignLogGrant(std::string_view key, std::string_view task, int64_t expires_ms);
// kUnauthenticated when malformed, not signed with `key` for `task`, or expired at `now_ms`.
Status VerifyLogGrant(std::string_view key, std::string_view task, std::string_view grant, int64_t now_ms);

}  // namespace muster::auth
