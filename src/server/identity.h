// Identity: who made a request, as the server's authentication found it
// (server/authenticator.h). Every handler reads it from the request; no
// header or body field a client writes is ever taken as who it is.
#pragma once

#include <cstdint>
#include <string>

namespace muster::server {

struct Identity {
  enum class Kind {
    kUser,  // a person or a service: MUNGE, or a user's token
    kNode,  // a node's agent: its node's token; may only sync as that node
    kJob,   // a job's own processes: a job token; may only report for that job
  };
  Kind kind = Kind::kUser;
  std::string user;     // kUser, kJob: the account (kJob: the job's owner)
  std::string node;     // kNode
  int64_t job = 0;      // kJob
  int32_t attempt = 0;  // kJob
  std::string via;      // "munge", "token 3f2a...", "job 12", "node n1" (audit)
  std::string remote;   // the client's address
  // An admin acting on behalf of another user (X-Muster-Act-As): requests
  // are then decided and recorded as that user's, with the admin named.
  std::string acting_for;

  // The user whose rights apply and who owns what is created.
  const std::string& effective_user() const { return acting_for.empty() ? user : acting_for; }
  // "alice", "node/n1", "root as alice": for messages and the audit log.
  std::string Describe() const {
    if (kind == Kind::kNode) return "node/" + node;
    return acting_for.empty() ? user : user + " as " + acting_for;
  }
};

}  // namespace muster::server
