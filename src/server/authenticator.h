// Authenticator: who sent a request, from its Authorization header, before
// any other work is done for it.
//
//   Authorization: MUNGE <credential>   decoded by munged (auth/munge.h): the
//       uid it vouches for is looked up on this host; the payload must be
//       this request's digest (auth/request_binding.h); munged refuses
//       replays and expired credentials.
//   Authorization: Bearer mst_...       a token (auth/token.h): found by id,
//       its secret's SHA-256 compared in constant time, refused when
//       expired or revoked. A node's token gives a kNode identity.
//   Authorization: Bearer msj_...       a job token (auth/grants.h), signed with
//       the cluster key: a kJob identity for that job and attempt.
//   X-Muster-Act-As: USER               an admin acting for USER (checked by
//       HttpApi, recorded in the audit log).
// Anything else is kUnauthenticated with a message that says what to do.
// The X-Muster-User header of earlier versions is refused, so that an old
// client cannot be mistaken for an identity.
//
// Token records come from the store: Load() at start (and on taking over as
// leader), Put() once a created or revoked token is durable, and Merge()
// every few seconds, for tokens written into the store by another process
// (`muster token create --store` beside a running server).
//
// Thread-safety: all methods from any thread (a reader-writer lock).
#pragma once

#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "http/message.h"
#include "server/identity.h"
#include "store/store.h"

namespace muster::server {

class Authenticator {
 public:
  // `munge_socket`: "" uses the default socket when it exists; "none": off.
  Authenticator(const Clock& clock, const std::string& munge_socket);

  void Load(const std::vector<store::TokenRow>& tokens);
  void Put(const store::TokenRow& token);
  // What the store holds now, read without a lock held here: tokens not
  // known are added and revocations applied. Nothing known is dropped or
  // un-revoked (a read that began before a revocation must not undo it).
  void Merge(const std::vector<store::TokenRow>& tokens);
  // The key job tokens are signed with (kept in the store's meta).
  void SetClusterKey(std::string key);
  std::string cluster_key() const;

  StatusOr<Identity> Authenticate(const http::Request& req) const;

  // The key that signs log grants for `node`: the digest of the token its
  // agent last authenticated with ("" when none has).
  std::string NodeKey(const std::string& node) const;
  // The token record of `id`, if any.
  std::optional<store::TokenRow> Token(const std::string& id) const;
  std::vector<store::TokenRow> Tokens() const;

 private:
  StatusOr<Identity> FromToken(std::string_view text) const;
  void PutLocked(const store::TokenRow& token);  // mu_ held exclusively
  StatusOr<Identity> FromMunge(std::string_view credential, const http::Request& req) const;

  const Clock& clock_;
  std::string munge_socket_;  // "" when MUNGE is off
  mutable std::shared_mutex mu_;
  std::map<std::string, store::TokenRow> tokens_;         // guarded by mu_
  mutable std::map<std::string, std::string> node_keys_;  // guarded by mu_ (written under its unique lock)
  std::string cluster_key_;                               // guarded by mu_
};

}  // namespace muster::server
