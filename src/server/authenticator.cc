#include "server/authenticator.h"

#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

#include "auth/grants.h"
#include "auth/munge.h"
#include "auth/request_binding.h"
#include "auth/token.h"

namespace muster::server {
namespace {

bool IsSocket(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

constexpr const char* kHowTo =
    "send Authorization: Bearer <token> (muster token create), or run the CLI where munged runs";

}  // namespace

Authenticator::Authenticator(const Clock& clock, const std::string& munge_socket) : clock_(clock) {
  if (munge_socket.empty()) {
    if (IsSocket(auth::kDefaultMungeSocket)) munge_socket_ = auth::kDefaultMungeSocket;
  } else if (munge_socket != "none") {
    munge_socket_ = munge_socket;
  }
}

void Authenticator::Load(const std::vector<store::TokenRow>& tokens) {
  std::unique_lock lock(mu_);
  tokens_.clear();
  node_keys_.clear();
  for (const store::TokenRow& t : tokens) tokens_[t.id] = t;
}

void Authenticator::Put(const store::TokenRow& token) {
  std::unique_lock lock(mu_);
  PutLocked(token);
}

void Authenticator::PutLocked(const store::TokenRow& token) {
  tokens_[token.id] = token;
  if (token.revoked_ms != 0 && !token.node.empty()) {
    auto k = node_keys_.find(token.node);
    if (k != node_keys_.end() && k->second == token.secret_sha256) node_keys_.erase(k);
  }
}

void Authenticator::Merge(const std::vector<store::TokenRow>& tokens) {
  std::vector<const store::TokenRow*> changed;
  {
    std::shared_lock lock(mu_);
    for (const store::TokenRow& t : tokens) {
      auto known = tokens_.find(t.id);
      if (known == tokens_.end() || (t.revoked_ms != 0 && known->second.revoked_ms == 0)) changed.push_back(&t);
    }
  }
  if (changed.empty()) return;
  std::unique_lock lock(mu_);
  for (const store::TokenRow* t : changed) {
    auto known = tokens_.find(t->id);  // again: it may have changed since
    if (known != tokens_.end() && (t->revoked_ms == 0 || known->second.revoked_ms != 0)) continue;
    PutLocked(*t);
  }
}

void Authenticator::SetClusterKey(std::string key) {
  std::unique_lock lock(mu_);
  cluster_key_ = std::move(key);
}

std::string Authenticator::cluster_key() const {
  std::shared_lock lock(mu_);
  return cluster_key_;
}

std::string Authenticator::NodeKey(const std::string& node) const {
  std::shared_lock lock(mu_);
  auto k = node_keys_.find(node);
  return k == node_keys_.end() ? std::string() : k->second;
}

std::optional<store::TokenRow> Authenticator::Token(const std::string& id) const {
  std::shared_lock lock(mu_);
  auto t = tokens_.find(id);
  if (t == tokens_.end()) return std::nullopt;
  return t->second;
}

std::vector<store::TokenRow> Authenticator::Tokens() const {
  std::shared_lock lock(mu_);
  std::vector<store::TokenRow> out;
  out.reserve(tokens_.size());
  for (const auto& [_, t] : tokens_) out.push_back(t);
  return out;
}

StatusOr<Identity> Authenticator::Authenticate(const http::Request& req) const {
  if (req.HasHeader("X-Muster-User")) {
    return Unauthenticated("the X-Muster-User header is not a credential (it was, before authentication); " +
                           std::string(kHowTo));
  }
  const std::string_view header = req.Header("Authorization");
  if (header.empty()) return Unauthenticated(std::string("no credential; ") + kHowTo);
  if (std::count_if(req.headers.begin(), req.headers.end(),
                    [](const auto& h) { return http::EqualsIgnoringCase(h.first, "Authorization"); }) > 1) {
    return Unauthenticated("more than one Authorization header");
  }
  const size_t space = header.find(' ');
  const std::string_view scheme = header.substr(0, space);
  const std::string_view value = space == std::string_view::npos ? std::string_view() : header.substr(space + 1);
  Identity id;
  if (http::EqualsIgnoringCase(scheme, "Bearer")) {
    ASSIGN_OR_RETURN(id, FromToken(value));
  } else if (http::EqualsIgnoringCase(scheme, "MUNGE")) {
    ASSIGN_OR_RETURN(id, FromMunge(value, req));
  } else {
    return Unauthenticated("unknown Authorization scheme (Bearer or MUNGE)");
  }
  id.remote = req.remote_addr;
  return id;
}

StatusOr<Identity> Authenticator::FromToken(std::string_view text) const {
  Identity id;
  if (auth::IsJobToken(text)) {
    ASSIGN_OR_RETURN(auth::JobClaim claim, auth::VerifyJobToken(cluster_key(), text));
    id.kind = Identity::Kind::kJob;
    id.job = claim.job;
    id.attempt = claim.attempt;
    id.via = "job " + std::to_string(claim.job);
    return id;  // the owner is filled in by the handler, which has the job
  }
  ASSIGN_OR_RETURN(auth::Token token, auth::ParseToken(text));
  const std::string digest = auth::Sha256Hex(token.secret);
  {
    std::shared_lock lock(mu_);
    auto t = tokens_.find(token.id);
    // The same refusal for an unknown id and a wrong secret: an id alone
    // tells nothing.
    if (t == tokens_.end() || !auth::ConstantTimeEquals(t->second.secret_sha256, digest)) {
      return Unauthenticated("token " + token.id + " is not valid");
    }
    const store::TokenRow& row = t->second;
    if (row.revoked_ms != 0) return Unauthenticated("token " + token.id + " was revoked");
    if (row.expires_ms != 0 && clock_.Now().millis() >= row.expires_ms) {
      return Unauthenticated("token " + token.id + " has expired");
    }
    if (row.node.empty()) {
      id.user = row.user;
      id.via = "token " + row.id;
      return id;
    }
    id.kind = Identity::Kind::kNode;
    id.node = row.node;
    id.via = "node " + row.node;
    auto known = node_keys_.find(row.node);
    if (known != node_keys_.end() && known->second == digest) return id;  // every sync but the first
  }
  std::unique_lock lock(mu_);
  node_keys_[id.node] = digest;
  return id;
}

StatusOr<Identity> Authenticator::FromMunge(std::string_view credential, const http::Request& req) const {
  if (munge_socket_.empty()) {
    return Unauthenticated(
        "this server does not accept MUNGE credentials (no munged; server option auth.munge); "
        "use a token");
  }
  ASSIGN_OR_RETURN(auth::MungeCredential cred, auth::MungeDecode(munge_socket_, credential));
  if (!auth::ConstantTimeEquals(cred.payload, auth::RequestDigest(req.method, req.target, req.body))) {
    return Unauthenticated("munge: the credential was made for another request");
  }
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(cred.uid, &pw, buf, sizeof buf, &found) != 0 || !found) {
    return Unauthenticated("munge: uid " + std::to_string(cred.uid) + " has no account on the server's host");
  }
  Identity id;
  id.user = pw.pw_name;
  id.via = "munge";
  return id;
}

}  // namespace muster::server
