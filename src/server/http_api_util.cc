#include "server/http_api_util.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "api/json_writer.h"
#include "common/message_text.h"
#include "common/quantity.h"
#include "server/job_json.h"

namespace muster::server {

using nlohmann::json;

namespace {

struct HttpError {
  int status;
  const char* code;
};

HttpError MapStatus(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return {400, "Invalid"};
    case StatusCode::kUnauthenticated:
      return {401, "Unauthenticated"};
    case StatusCode::kPermissionDenied:
      return {403, "Forbidden"};
    case StatusCode::kNotFound:
      return {404, "NotFound"};
    case StatusCode::kFailedPrecondition:
      return {409, "Conflict"};
    case StatusCode::kAlreadyExists:
      return {422, "IdempotencyKeyReused"};
    case StatusCode::kResourceExhausted:
      return {429, "TooManyRequests"};
    case StatusCode::kUnavailable:
      return {503, "Unavailable"};
    default:
      return {500, "Internal"};
  }
}

}  // namespace

void ReplyJson(http::Response& res, int status, const json& body) {
  res.Set(status, api::JsonText(body), "application/json");
}

void ReplyError(http::Response& res, int status, const char* code, const std::string& message,
                const std::string& field) {
  json e = {{"code", code}, {"message", message}};
  if (!field.empty()) e["field"] = field;
  ReplyJson(res, status, {{"error", e}});
}

void ReplyNotLeading(const Leadership& leadership, http::Response& res) {
  const Leadership::Role role = leadership.role();
  // The header tells a client (http/failover_client.h) to ask another server.
  res.headers.emplace_back("X-Muster-Role", Leadership::RoleName(role));
  if (role == Leadership::Role::kTakingOver) {
    res.headers.emplace_back("Retry-After", "1");
    return ReplyError(res, 503, "Unavailable", "this server is taking over as leader (restoring its state); retry");
  }
  const std::string leader = leadership.leader_address();
  const bool stepped_down = role != Leadership::Role::kStandby;
  std::string message = stepped_down ? "this server lost its leadership and is stopping" : "this server is a standby";
  json e = {{"code", "NotLeader"}};
  if (!leader.empty() && !stepped_down) {
    e["leader"] = leader;
    res.headers.emplace_back("X-Muster-Leader", leader);
    message += "; the leader is " + leader;
  } else {
    message += "; try another server";
  }
  e["message"] = message;
  ReplyJson(res, 503, {{"error", e}});
}

void ReplyStatus(http::Response& res, const Status& s) {
  const HttpError e = MapStatus(s);
  // The field path is in "field"; the message reads well after it.
  ReplyError(res, e.status, e.code, s.field().empty() ? s.message() : s.field() + ": " + s.message(), s.field());
}

void ReplyNow(const http::Server::Reply& reply, const Status& s) {
  http::Response res;
  ReplyStatus(res, s);
  reply(std::move(res));
}

bool ValidName(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

bool ValidEndpoint(std::string_view s) {
  const size_t colon = s.rfind(':');
  if (s.size() > 255 || colon == std::string_view::npos || colon == 0 || colon + 1 == s.size() ||
      s.size() - colon - 1 > 5) {
    return false;
  }
  int64_t port = 0;
  for (char c : s.substr(colon + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    port = port * 10 + (c - '0');
  }
  for (char c : s.substr(0, colon)) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' ||
          c == ']')) {
      return false;
    }
  }
  return port >= 1 && port <= 65535;
}

const Identity& Caller(const http::Request& req) {
  // Set by HttpApi's filter for every request that reaches a handler.
  static const Identity kNobody{};
  const Identity* who = std::any_cast<Identity>(&req.context);
  return who ? *who : kNobody;
}

store::AuditRow AuditOf(const Identity& who, const std::string& action, const std::string& object) {
  store::AuditRow a;
  a.actor = who.kind == Identity::Kind::kNode ? "node/" + who.node : who.user;
  a.as_user = who.acting_for;
  a.via = who.via;
  a.remote = who.remote;
  a.action = action;
  a.object = object;
  a.outcome = "ok";
  return a;
}

std::string OutcomeOf(const Status& s) {
  if (s.ok()) return "ok";
  return StatusCodeName(s.code());
}

StatusOr<std::string> IdempotencyKeyOf(const http::Request& req) {
  if (!req.HasHeader("Idempotency-Key")) return std::string();
  std::string key(req.Header("Idempotency-Key"));
  if (key.size() >= 2 && key.front() == '"' && key.back() == '"') key = key.substr(1, key.size() - 2);
  if (key.empty() || key.size() > 255) {
    return InvalidArgument("must be 1 to 255 characters", "header Idempotency-Key");
  }
  for (char c : key) {
    if (c < 0x21 || c > 0x7e)
      return InvalidArgument("must be printable ASCII without spaces", "header Idempotency-Key");
  }
  return key;
}

Status CheckQuery(const http::Request& req, const std::vector<std::string>& known) {
  for (size_t i = 0; i < req.params.size(); ++i) {
    const std::string& k = req.params[i].first;
    for (size_t j = 0; j < i; ++j) {
      if (req.params[j].first == k) {
        return InvalidArgument("given more than once; list several values with commas (state=PENDING,HELD)",
                               "query." + k);
      }
    }
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string msg = "unknown query parameter";
    const std::string close = ClosestMatch(k, known);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    return InvalidArgument(msg, "query." + k);
  }
  return Status::Ok();
}

http::Server::Handler NoQuery(http::Server::Handler h) {
  return [h = std::move(h)](const http::Request& req, http::Response& res) {
    if (Status q = CheckQuery(req, {}); !q.ok()) return ReplyStatus(res, q);
    h(req, res);
  };
}
http::Server::AsyncHandler NoQueryAsync(http::Server::AsyncHandler h) {
  return [h = std::move(h)](http::Request&& req, http::Server::Reply reply) {
    if (Status q = CheckQuery(req, {}); !q.ok()) return ReplyNow(reply, q);
    h(std::move(req), std::move(reply));
  };
}

Status IntParam(const http::Request& req, const char* name, int64_t& out, int64_t lo, int64_t hi) {
  if (!req.HasParam(name)) return Status::Ok();
  const std::string& v = req.Param(name);
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < lo || out > hi) {
    return InvalidArgument("must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
                               QuoteForMessage(v, 32),
                           std::string("query.") + name);
  }
  return Status::Ok();
}

void EventsPage(const http::Request& req, store::Store& store, int64_t job, http::Response& res) {
  if (Status q = CheckQuery(req, {"limit", "continue"}); !q.ok()) return ReplyStatus(res, q);
  int64_t limit = 1000, after = 0;
  if (Status st = IntParam(req, "limit", limit, 1, 10'000); !st.ok()) return ReplyStatus(res, st);
  if (!req.Param("continue").empty()) {
    if (Status st = IntParam(req, "continue", after, 0, INT64_MAX); !st.ok()) return ReplyStatus(res, st);
  }
  auto events = store.ListEvents(job, after, static_cast<int32_t>(limit) + 1);
  if (!events.ok()) return ReplyStatus(res, events.status());
  const bool more = static_cast<int64_t>(events->size()) > limit;
  if (more) events->pop_back();
  json items = json::array();
  for (const store::EventRow& e : *events) items.push_back(EventJson(e));
  ReplyJson(res, 200, {{"items", items}, {"continue", more ? std::to_string(events->back().seq) : ""}});
}

StatusOr<json> BodyObject(const http::Request& req, const std::vector<std::string>& known) {
  json j = json::parse(req.body, nullptr, false);
  if (!j.is_object()) return InvalidArgument("the body must be a JSON object", "body");
  for (const auto& [k, v] : j.items()) {
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string msg = "unknown field";
    const std::string close = ClosestMatch(k, known);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    return InvalidArgument(msg, k);
  }
  return j;
}

Status BodyString(const json& j, const char* key, std::string& out, size_t max, bool required) {
  if (!j.contains(key) || j[key].is_null()) return required ? InvalidArgument("is required", key) : Status::Ok();
  if (!j[key].is_string() || j[key].get<std::string>().size() > max) {
    return InvalidArgument("must be a string of at most " + std::to_string(max) + " bytes", key);
  }
  out = j[key].get<std::string>();
  return Status::Ok();
}

StatusOr<int64_t> PathId(const http::Request& req) {
  const std::string& s = req.captures[0];
  int64_t id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || p != s.data() + s.size() || id <= 0) {
    return InvalidArgument("must be a positive job id, got " + QuoteForMessage(s), "path.id");
  }
  return id;
}

StatusOr<store::JobRow> VisibleJob(const http::Request& req, store::Store& store, const Authorizer& authz,
                                   int64_t now_ms) {
  ASSIGN_OR_RETURN(int64_t id, PathId(req));
  ASSIGN_OR_RETURN(std::optional<store::JobRow> job, store.GetJob(id));
  if (!job) return NotFound("job " + std::to_string(id) + " does not exist");
  const Identity& who = Caller(req);
  if (who.kind == Identity::Kind::kJob) {
    RETURN_IF_ERROR(authz.MayJobTokenRead(who, *job, now_ms));
    return *job;
  }
  RETURN_IF_ERROR(authz.MayManageJob(who, job->user, job->queue, "see"));
  return *job;
}

}  // namespace muster::server
