// Container images: registry logins and pre-pulls.
//
// Registry credentials (server/registry_credentials.h):
//   POST   /v1/registry-credentials  {registry, username, password, queue?, user?}
//   GET    /v1/registry-credentials
//   DELETE /v1/registry-credentials?registry=R[&queue=Q|&user=U]
// A user sets and removes their own; a queue's, or another user's, are an
// admin's to set. No answer ever carries a password.
//
// Pre-pulls (server/image_pulls.h):
//   POST   /v1/images/pull  {image, nodes?}   admins: nodes pull it ahead of its jobs
//   GET    /v1/images                          every pull asked, with its outcome
#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/message_text.h"
#include "common/rfc3339.h"
#include "server/http_api.h"
#include "server/http_api_util.h"

namespace muster::server {

using nlohmann::json;

namespace {

// A registry host, optionally with a port: "nvcr.io", "10.0.0.5:5000".
bool ValidRegistry(const std::string& r) {
  if (r.empty() || r.size() > 253 + 6 || !std::isalnum(static_cast<unsigned char>(r.front()))) return false;
  return r.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:") == std::string::npos;
}

bool Printable(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

json CredentialJson(const RegistryCredential& c) {
  return {{"scope", c.scope},          {c.scope == "queue" ? "queue" : "user", c.owner},
          {"registry", c.registry},    {"username", c.username},
          {"createdBy", c.created_by}, {"created", FormatRfc3339Utc(Time::FromMillis(c.created_ms))}};
}

}  // namespace

// The owner a request names: its `queue`, else its `user`, else the caller.
// Errors: a bad name, both named, or an owner the caller may not act for.
StatusOr<std::pair<std::string, std::string>> HttpApi::CredentialOwner(const Identity& who, const std::string& queue,
                                                                       const std::string& user) {
  if (!queue.empty() && !user.empty())
    return InvalidArgument("a credential is a queue's or a user's, not both", "queue");
  if (!queue.empty()) {
    if (!ValidName(queue, 128)) return InvalidArgument("must be a queue name ([A-Za-z0-9._-])", "queue");
    RETURN_IF_ERROR(authz_.MustBeAdmin(who, "manage a queue's registry credentials"));
    return std::pair<std::string, std::string>{"queue", queue};
  }
  if (user.empty() || user == who.effective_user())
    return std::pair<std::string, std::string>{"user", who.effective_user()};
  if (!ValidName(user, 64)) return InvalidArgument("must be a user name ([A-Za-z0-9._-])", "user");
  RETURN_IF_ERROR(authz_.MustBeAdmin(who, "manage another user's registry credentials"));
  return std::pair<std::string, std::string>{"user", user};
}

void HttpApi::PutRegistryCredential(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  auto body = BodyObject(req, {"registry", "username", "password", "queue", "user"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  RegistryCredential c;
  std::string queue, user;
  for (Status st :
       {BodyString(*body, "registry", c.registry, 260, true), BodyString(*body, "username", c.username, 256, true),
        BodyString(*body, "password", c.password, 8192, true), BodyString(*body, "queue", queue, 128, false),
        BodyString(*body, "user", user, 64, false)}) {
    if (!st.ok()) return ReplyNow(reply, st);
  }
  if (!ValidRegistry(c.registry)) {
    return ReplyNow(reply, InvalidArgument("must be a registry host such as nvcr.io or 10.0.0.5:5000, got " +
                                               QuoteForMessage(c.registry),
                                           "registry"));
  }
  if (c.username.empty() || !Printable(c.username)) {
    return ReplyNow(reply, InvalidArgument("must be 1 to 256 characters without control characters", "username"));
  }
  if (c.password.empty() || !Printable(c.password)) {
    return ReplyNow(reply, InvalidArgument("must be 1 to 8192 characters without control characters", "password"));
  }
  auto owner = CredentialOwner(who, queue, user);
  store::AuditRow audit = AuditOf(who, "registry-credential.set", "registry/" + c.registry);
  if (!owner.ok()) return RefuseAudited(reply, audit, owner.status());
  std::tie(c.scope, c.owner) = *owner;
  audit.detail = "for " + c.scope + " " + c.owner + " as " + c.username;
  c.created_by = who.Describe();
  c.created_ms = clock_.Now().millis();
  const json answer = CredentialJson(c);
  loop_.PutRegistryCredential(std::move(c), std::move(audit), [reply, answer](Status s) {
    if (!s.ok()) return ReplyNow(reply, s);
    reply([answer] {
      http::Response res;
      ReplyJson(res, 200, answer);
      return res;
    });
  });
}

void HttpApi::ListRegistryCredentials(const Request& req, Response& res) {
  const Identity& who = Caller(req);
  auto all =
      Await<std::vector<RegistryCredential>>([this](ControlLoop::Done<StatusOr<std::vector<RegistryCredential>>> done) {
        loop_.RegistryCredentialList(std::move(done));
      });
  if (!all.ok()) return ReplyStatus(res, all.status());
  const bool admin = authz_.IsAdmin(who.effective_user());
  json items = json::array();
  for (const RegistryCredential& c : *all) {
    if (admin || (c.scope == "user" && c.owner == who.effective_user())) items.push_back(CredentialJson(c));
  }
  ReplyJson(res, 200, {{"items", items}});
}

void HttpApi::RemoveRegistryCredential(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  if (Status q = CheckQuery(req, {"registry", "queue", "user"}); !q.ok()) return ReplyNow(reply, q);
  const std::string registry = req.Param("registry");
  if (!ValidRegistry(registry)) return ReplyNow(reply, InvalidArgument("must name a registry host", "registry"));
  store::AuditRow audit = AuditOf(who, "registry-credential.remove", "registry/" + registry);
  auto owner = CredentialOwner(who, req.Param("queue"), req.Param("user"));
  if (!owner.ok()) return RefuseAudited(reply, audit, owner.status());
  audit.detail = "for " + owner->first + " " + owner->second;
  const std::string what = "no credential for " + registry + " of " + owner->first + " " + owner->second;
  loop_.RemoveRegistryCredential(owner->first, owner->second, registry, std::move(audit),
                                 Answer<bool>(reply, [what](http::Response& res, const bool& removed) {
                                   if (!removed) return ReplyStatus(res, NotFound(what));
                                   ReplyJson(res, 200, {{"removed", true}});
                                 }));
}

void HttpApi::PullImage(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  auto body = BodyObject(req, {"image", "nodes"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  std::string image;
  if (Status st = BodyString(*body, "image", image, 512, true); !st.ok()) return ReplyNow(reply, st);
  if (!api::ValidImageReference(image)) {
    return ReplyNow(reply, InvalidArgument("must be an image reference such as nvcr.io/nvidia/pytorch:24.05-py3, got " +
                                               QuoteForMessage(image),
                                           "image"));
  }
  std::vector<std::string> nodes;
  if (body->contains("nodes")) {
    const json& n = (*body)["nodes"];
    if (!n.is_array() || n.size() > 100'000)
      return ReplyNow(reply, InvalidArgument("must be a list of node names", "nodes"));
    for (const json& name : n) {
      if (!name.is_string() || !ValidName(name.get<std::string>(), 253)) {
        return ReplyNow(reply, InvalidArgument("must be a list of node names", "nodes"));
      }
      nodes.push_back(name.get<std::string>());
    }
  }
  store::AuditRow audit = AuditOf(who, "image.pull", "image/" + image);
  if (Status s = authz_.MustBeAdmin(who, "pull images on nodes"); !s.ok()) return RefuseAudited(reply, audit, s);
  audit.detail = nodes.empty() ? "on every node" : "on " + std::to_string(nodes.size()) + " node(s)";
  using Nodes = std::vector<std::string>;
  loop_.PullImage(image, nodes, who, std::move(audit),
                  Answer<Nodes>(reply, [image](http::Response& res, const Nodes& asked) {
                    ReplyJson(res, 200, {{"image", image}, {"nodes", asked}});
                  }));
}

void HttpApi::ListImagePulls(const Request&, Response& res) {
  auto all = Await<std::vector<ImagePull>>(
      [this](ControlLoop::Done<StatusOr<std::vector<ImagePull>>> done) { loop_.ImagePullList(std::move(done)); });
  if (!all.ok()) return ReplyStatus(res, all.status());
  json items = json::array();
  for (const ImagePull& p : *all) {
    json item = {{"node", p.node},
                 {"image", p.image},
                 {"state", p.state},
                 {"requestedBy", p.requested_by},
                 {"requested", FormatRfc3339Utc(Time::FromMillis(p.requested_ms))}};
    if (p.state == "pulled") item["seconds"] = p.ms / 1000.0;
    if (!p.message.empty()) item["message"] = p.message;
    items.push_back(std::move(item));
  }
  ReplyJson(res, 200, {{"items", items}});
}

}  // namespace muster::server
