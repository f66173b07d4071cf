// The REST API's vocabulary for requests and answers (server/http_api.h):
// its one error shape, the caller's identity, query parameters and body
// fields read with errors that name them, and the bridge from a call into
// the control loop to an answer written on the HTTP event loop.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "http/server.h"
#include "server/authorizer.h"
#include "server/control_loop.h"
#include "server/identity.h"
#include "server/leadership.h"
#include "store/store.h"

namespace muster::server {

// Bodies of these sizes or less are handled on the event loop (tens of
// microseconds); larger ones, and YAML specs, on a worker thread.
inline constexpr size_t kInlineSpecBytes = 16 << 10;
inline constexpr size_t kInlineSyncBytes = 64 << 10;
inline constexpr size_t kMaxYamlBytes = 256 << 10;
inline constexpr int64_t kMaxAttempt = 1'000'000;
inline constexpr int64_t kMaxInt = int64_t{1} << 62;

// Writes `body` as JSON. Never throws: a byte that is not UTF-8 (a
// request's percent-escaped path or query echoed in an error) becomes U+FFFD.
void ReplyJson(http::Response& res, int status, const nlohmann::json& body);
// The one error shape: {"error": {"code", "message", "field"}}.
void ReplyError(http::Response& res, int status, const char* code, const std::string& message,
                const std::string& field = {});
// 503 from a server that does not lead: NotLeader with the leader's address
// (the error's "leader" and the X-Muster-Leader header) when one is known,
// or Unavailable with Retry-After while this server takes over.
void ReplyNotLeading(const Leadership& leadership, http::Response& res);
// A Status as its HTTP status and code (InvalidArgument: 400 Invalid, ...).
void ReplyStatus(http::Response& res, const Status& s);
// An async handler's answer to a request it refuses before the loop.
void ReplyNow(const http::Server::Reply& reply, const Status& s);

// The `done` of a call into the control loop: the answer is written on the
// event loop, as an error or by `write` (the call answers on the control
// loop's or the store writer's thread, and neither should build answers).
template <typename T>
std::function<void(StatusOr<T>)> Answer(http::Server::Reply reply,
                                        std::function<void(http::Response&, const T&)> write) {
  return [reply, write = std::move(write)](StatusOr<T> result) {
    reply([result = std::move(result), write] {
      http::Response res;
      if (result.ok()) {
        write(res, *result);
      } else {
        ReplyStatus(res, result.status());
      }
      return res;
    });
  };
}

// Waits on a worker for a call into the control loop: for an answer too big
// to build on the event loop.
template <typename T>
StatusOr<T> Await(const std::function<void(ControlLoop::Done<StatusOr<T>>)>& call) {
  std::promise<StatusOr<T>> promise;
  std::future<StatusOr<T>> value = promise.get_future();
  call([&promise](StatusOr<T> v) { promise.set_value(std::move(v)); });
  return value.get();
}

// 1 to `max` of [A-Za-z0-9._-].
// GET /v1/jobs?watch=true (or 1): a watch, not a list.
inline bool IsWatch(const http::Request& req) {
  const std::string& w = req.Param("watch");
  return w == "true" || w == "1";
}

bool ValidName(std::string_view s, size_t max);
// "host:port" (or "[v6]:port"): a host of letters, digits and .-_:[] and a
// port 1..65535, at most 255 characters in all.
bool ValidEndpoint(std::string_view s);
// Who calls, as HttpApi's filter authenticated them.
const Identity& Caller(const http::Request& req);
// An audit entry of `who` doing `action` to `object`, outcome "ok".
store::AuditRow AuditOf(const Identity& who, const std::string& action, const std::string& object);
// "ok", or a refusal's code name ("PERMISSION_DENIED").
std::string OutcomeOf(const Status& s);
// The Idempotency-Key header, bare or as an RFC 8941 string ("..."); "" when absent.
StatusOr<std::string> IdempotencyKeyOf(const http::Request& req);
// The job id in the path ("path.id" in errors).
StatusOr<int64_t> PathId(const http::Request& req);
// The path's job from the store, when the caller may see it (NotFound,
// PermissionDenied otherwise).
StatusOr<store::JobRow> VisibleJob(const http::Request& req, store::Store& store, const Authorizer& authz,
                                   int64_t now_ms);

// Refuses a query parameter not in `known` (with the closest one
// suggested) or given twice.
Status CheckQuery(const http::Request& req, const std::vector<std::string>& known);
// Handlers of routes that take no query parameters: any is refused (a
// misspelt "?limit=" would otherwise be silently ignored).
http::Server::Handler NoQuery(http::Server::Handler h);
http::Server::AsyncHandler NoQueryAsync(http::Server::AsyncHandler h);
// Reads integer query parameter `name` into `out` when present; an error
// names "query.<name>" and the range.
Status IntParam(const http::Request& req, const char* name, int64_t& out, int64_t lo, int64_t hi);

// A request body that must be a JSON object with only `known` members.
StatusOr<nlohmann::json> BodyObject(const http::Request& req, const std::vector<std::string>& known);
// Member `key` of a body object as an integer in [lo, hi]; required unless
// `optional` (then `out` is left alone when it is absent).
template <typename Int>
Status BodyInt(const nlohmann::json& j, const char* key, Int& out, int64_t lo, int64_t hi, bool optional = false) {
  if (!j.contains(key) || j[key].is_null()) return optional ? Status::Ok() : InvalidArgument("is required", key);
  if (!j[key].is_number_integer() || j[key].template get<int64_t>() < lo || j[key].template get<int64_t>() > hi) {
    return InvalidArgument("must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi), key);
  }
  out = static_cast<Int>(j[key].template get<int64_t>());
  return Status::Ok();
}
// Member `key` as a string of at most `max` bytes.
Status BodyString(const nlohmann::json& j, const char* key, std::string& out, size_t max, bool required);

// One page of a job's events (0: the cluster's): `limit` (1 to 10,000,
// default 1,000) after the `continue` token, as {"items": [...],
// "continue": "..."} ("" on the last page).
void EventsPage(const http::Request& req, store::Store& store, int64_t job, http::Response& res);

}  // namespace muster::server
