// HttpApi: who calls, and the identity endpoints: tokens, the audit log,
// whoami (the route table is HttpApi::Routes).
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "auth/token.h"
#include "common/log.h"
#include "common/message_text.h"
#include "common/quantity.h"
#include "common/rfc3339.h"
#include "server/http_api.h"
#include "server/http_api_util.h"

namespace muster::server {

using nlohmann::json;

namespace {

// Whether `path` is one a job token of `job` may reach: that job's
// checkpoints and progress, and reading the job itself (scontrol show job
// inside it).
bool JobTokenRoute(const std::string& method, const std::string& path, int64_t job) {
  const std::string base = "/v1/jobs/" + std::to_string(job);
  return path == base + "/checkpoints" || path == base + "/progress" || (method == "GET" && path == base);
}

json TokenJson(const store::TokenRow& t) {
  json j = {{"id", t.id}, {"createdBy", t.created_by}, {"created", FormatRfc3339Utc(Time::FromMillis(t.created_ms))}};
  if (!t.user.empty()) j["user"] = t.user;
  if (!t.node.empty()) j["node"] = t.node;
  if (!t.description.empty()) j["description"] = t.description;
  if (t.expires_ms != 0) j["expires"] = FormatRfc3339Utc(Time::FromMillis(t.expires_ms));
  if (t.revoked_ms != 0) j["revoked"] = FormatRfc3339Utc(Time::FromMillis(t.revoked_ms));
  return j;
}

}  // namespace

namespace {

// Who sent a request, in one word for the access log: alice, alice/as/bob,
// node/n17, job/12.
std::string PrincipalOf(const Identity& who) {
  switch (who.kind) {
    case Identity::Kind::kNode:
      return "node/" + who.node;
    case Identity::Kind::kJob:
      return "job/" + std::to_string(who.job);
    case Identity::Kind::kUser:
      break;
  }
  return who.acting_for.empty() ? who.user : who.user + "/as/" + who.acting_for;
}

}  // namespace

bool HttpApi::Authenticate(Request& req, Response& res) {
  const bool sync = req.path == "/v1/agent/sync";
  StatusOr<Identity> who = authn_.Authenticate(req);
  // Agents are the cluster's own infrastructure: their syncs are not rate
  // limited once they prove to be an agent's. Every other request is
  // charged to who sent it, and one without a valid credential to its
  // address, in a budget of its own: a flood of those leaves every caller
  // at that address (a login node, a job's node) its own budget.
  if (!(sync && who.ok() && who->kind == Identity::Kind::kNode) &&
      !RateAllows(who.ok() ? PrincipalOf(*who) : std::string(), req, res)) {
    return true;
  }
  if (!who.ok()) {
    // Said on stderr at most once a second, with how many since; never
    // the credential itself.
    ++auth_failures_;
    const int64_t now = clock_.Now().millis();
    if (now - auth_failure_said_ms_ >= 1000) {
      log::Warn("refused {} unauthenticated request(s); the last from {}: {}", auth_failures_, req.remote_addr,
                who.status().message());
      auth_failures_ = 0;
      auth_failure_said_ms_ = now;
    }
    res.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"muster\"");
    ReplyStatus(res, who.status());
    return true;
  }
  Status scope;
  if (who->kind == Identity::Kind::kNode && !sync) {
    scope = PermissionDenied("a node's credential may only sync its node (POST /v1/agent/sync)");
  } else if (who->kind != Identity::Kind::kNode && sync) {
    scope = PermissionDenied("only a node's agent may sync, with its node's token (muster token create --node)");
  } else if (who->kind == Identity::Kind::kJob && !JobTokenRoute(req.method, req.path, who->job)) {
    scope = PermissionDenied("a job token may only read job " + std::to_string(who->job) +
                             " and report its progress and checkpoints");
  }
  if (scope.ok() && req.HasHeader("X-Muster-Act-As")) {
    const std::string as(req.Header("X-Muster-Act-As"));
    if (who->kind != Identity::Kind::kUser || !authz_.IsAdmin(who->user)) {
      scope = PermissionDenied("only an admin may act for another user (X-Muster-Act-As); " + who->Describe() +
                               " is not one");
    } else if (!ValidName(as, 64)) {
      scope = InvalidArgument("must be a user name (1 to 64 of [A-Za-z0-9._-])", "header X-Muster-Act-As");
    } else if (as != who->user) {
      who->acting_for = as;
    }
  }
  if (!scope.ok()) {
    req.principal = PrincipalOf(*who);
    // Recorded: a credential used beyond its reach is worth an operator's look.
    store::AuditRow row = AuditOf(*who, req.method + " " + req.path.substr(0, 200), "");
    row.outcome = OutcomeOf(scope);
    row.detail = scope.message();
    store::WriteBatch b;
    b.audit.push_back(std::move(row));
    loop_.Record(std::move(b), nullptr);
    ReplyStatus(res, scope);
    return true;
  }
  req.principal = PrincipalOf(*who);
  req.context = std::move(*who);
  return false;
}

void HttpApi::RefuseAudited(const Reply& reply, store::AuditRow row, const Status& s) {
  Audited<bool>(std::move(row), [reply](StatusOr<bool> r) { ReplyNow(reply, r.status()); })(s);
}

void HttpApi::WhoAmI(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  json j = {{"user", who.effective_user()}, {"via", who.via}};
  if (!who.acting_for.empty()) j["actingAdmin"] = who.user;
  if (who.kind == Identity::Kind::kUser) {
    json roles = json::array({"user"});
    if (authz_.IsOperator(who.effective_user())) roles.push_back("operator");
    if (authz_.IsAdmin(who.effective_user())) roles.push_back("admin");
    j["roles"] = roles;
  }
  http::Response res;
  ReplyJson(res, 200, j);
  reply(std::move(res));
}

void HttpApi::CreateToken(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  auto body = BodyObject(req, {"user", "node", "expiresIn", "description"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  store::TokenRow row;
  std::string expires_in;
  for (Status st : {BodyString(*body, "user", row.user, 64, false), BodyString(*body, "node", row.node, 253, false),
                    BodyString(*body, "expiresIn", expires_in, 32, false),
                    BodyString(*body, "description", row.description, 256, false)}) {
    if (!st.ok()) return ReplyNow(reply, st);
  }
  if (!row.user.empty() && !ValidName(row.user, 64)) {
    return ReplyNow(reply, InvalidArgument("must be a user name (1 to 64 of [A-Za-z0-9._-])", "user"));
  }
  if (!row.node.empty() && !ValidName(row.node, 253)) {
    return ReplyNow(reply, InvalidArgument("must be a node name ([A-Za-z0-9._-])", "node"));
  }
  if (!row.user.empty() && !row.node.empty()) {
    return ReplyNow(reply, InvalidArgument("a token is for a user or for a node, not both", "node"));
  }
  const bool for_self = row.node.empty() && (row.user.empty() || row.user == who.effective_user());
  if (row.node.empty() && row.user.empty()) row.user = who.effective_user();
  store::AuditRow audit = AuditOf(who, "token.create", row.node.empty() ? "user/" + row.user : "node/" + row.node);
  if (!for_self) {
    if (Status s =
            authz_.MustBeAdmin(who, row.node.empty() ? "create a token for another user" : "create a node's token");
        !s.ok()) {
      return RefuseAudited(reply, audit, s);
    }
  }
  // A user's token lasts 30 days unless asked otherwise; a node's a year.
  // "never" is for admins, and so is a user's token past limits.tokenLifetime.
  const bool admin = authz_.IsAdmin(who.effective_user());
  Duration lifetime = row.node.empty() ? Duration::Hours(24 * 30) : Duration::Hours(24 * 365);
  if (expires_in == "never") {
    if (Status s = authz_.MustBeAdmin(who, "create a token that never expires"); !s.ok()) {
      return RefuseAudited(reply, audit, s);
    }
    lifetime = Duration::Zero();
  } else if (!expires_in.empty()) {
    auto d = ParseDuration(expires_in);
    if (!d.ok() || *d < Duration::Minutes(1) || *d > Duration::Hours(24 * 3650)) {
      return ReplyNow(reply, InvalidArgument("must be a duration from 1m to 3650d (30d, 12h) or never", "expiresIn"));
    }
    if (!admin && row.node.empty() && *d > options_.max_token_lifetime) {
      return ReplyNow(reply, InvalidArgument("must be at most " + options_.max_token_lifetime.ToString() +
                                                 " (this server's limits.tokenLifetime; an admin may make longer ones)",
                                             "expiresIn"));
    }
    lifetime = *d;
  }
  if (row.node.empty() && !admin && options_.max_tokens_per_user > 0) {
    const int64_t now_ms = clock_.Now().millis();
    int64_t live = 0;
    for (const store::TokenRow& t : authn_.Tokens()) {
      live += t.node.empty() && t.user == row.user && t.revoked_ms == 0 && (t.expires_ms == 0 || t.expires_ms > now_ms);
    }
    if (live >= options_.max_tokens_per_user) {
      return RefuseAudited(reply, audit,
                           PermissionDenied(row.user + " has " + std::to_string(live) + " live tokens, this server's " +
                                            "limit (limits.tokensPerUser); revoke some first (muster token list, " +
                                            "muster token revoke ID)"));
    }
  }
  const auth::Token token = auth::NewToken();
  const int64_t now = clock_.Now().millis();
  row.id = token.id;
  row.secret_sha256 = auth::Sha256Hex(token.secret);
  row.created_by = who.Describe();
  row.created_ms = now;
  row.expires_ms = lifetime == Duration::Zero() ? 0 : now + lifetime.millis();
  audit.object = "token/" + row.id;
  audit.detail = row.node.empty() ? "for user " + row.user : "for node " + row.node;
  store::WriteBatch b;
  b.tokens.push_back(row);
  b.audit.push_back(audit);
  const std::string text = auth::FormatToken(token);
  loop_.Record(std::move(b), [this, row, text, reply](const Status& s) {
    if (!s.ok()) return ReplyNow(reply, s);
    authn_.Put(row);
    json j = TokenJson(row);
    j["token"] = text;  // shown this once; the server keeps only its digest
    reply([j] {
      http::Response res;
      ReplyJson(res, 201, j);
      return res;
    });
  });
}

void HttpApi::ListTokens(const Request& req, Response& res) {
  const Identity& who = Caller(req);
  const bool all = authz_.IsAdmin(who.effective_user());
  json items = json::array();
  for (const store::TokenRow& t : authn_.Tokens()) {
    if (all || (t.node.empty() && t.user == who.effective_user())) items.push_back(TokenJson(t));
  }
  ReplyJson(res, 200, {{"items", items}});
}

void HttpApi::RevokeToken(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  const std::string id = req.captures.empty() ? "" : req.captures[0];
  store::AuditRow audit = AuditOf(who, "token.revoke", "token/" + id.substr(0, 32));
  std::optional<store::TokenRow> row = authn_.Token(id);
  const bool mine = row && row->node.empty() && row->user == who.effective_user();
  if (!row || (!mine && !authz_.IsAdmin(who.effective_user()))) {
    // Another's token is answered as one that does not exist: ids are not
    // for probing.
    return RefuseAudited(reply, audit, NotFound("token " + QuoteForMessage(id, 32) + " does not exist"));
  }
  if (row->revoked_ms == 0) row->revoked_ms = clock_.Now().millis();
  store::WriteBatch b;
  b.tokens.push_back(*row);
  b.audit.push_back(audit);
  loop_.Record(std::move(b), [this, row = *row, reply](const Status& s) {
    if (!s.ok()) return ReplyNow(reply, s);
    authn_.Put(row);
    reply([row] {
      http::Response res;
      ReplyJson(res, 200, TokenJson(row));
      return res;
    });
  });
}

void HttpApi::ListAudit(const Request& req, Response& res) {
  if (Status q = CheckQuery(req, {"actor", "object", "limit", "continue"}); !q.ok()) return ReplyStatus(res, q);
  const Identity& who = Caller(req);
  store::AuditFilter f{req.Param("actor"), req.Param("object")};
  if (!authz_.IsOperator(who.effective_user())) {
    // Users see what they did themselves.
    if (!f.actor.empty() && f.actor != who.effective_user()) {
      return ReplyStatus(res, PermissionDenied("only operators and admins may read others' audit entries"));
    }
    f.actor = who.effective_user();
  }
  int64_t limit = 100, after = 0;
  if (Status st = IntParam(req, "limit", limit, 1, 1000); !st.ok()) return ReplyStatus(res, st);
  if (!req.Param("continue").empty()) {
    if (Status st = IntParam(req, "continue", after, 0, INT64_MAX); !st.ok()) return ReplyStatus(res, st);
  }
  auto rows = store_.ListAudit(f, after, static_cast<int32_t>(limit));
  if (!rows.ok()) return ReplyStatus(res, rows.status());
  json items = json::array();
  for (const store::AuditRow& a : *rows) {
    json j = {{"seq", a.seq},       {"time", FormatRfc3339Utc(Time::FromMillis(a.time_ms))},
              {"actor", a.actor},   {"via", a.via},
              {"remote", a.remote}, {"action", a.action},
              {"object", a.object}, {"outcome", a.outcome}};
    if (!a.as_user.empty()) j["asUser"] = a.as_user;
    if (!a.detail.empty()) j["detail"] = a.detail;
    items.push_back(std::move(j));
  }
  const std::string next = static_cast<int64_t>(rows->size()) == limit ? std::to_string(rows->back().seq) : "";
  ReplyJson(res, 200, {{"items", items}, {"continue", next}});
}

}  // namespace muster::server
