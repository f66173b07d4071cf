#include "server/http_api.h"

#include <algorithm>
#include <charconv>
#include <future>
#include <map>
#include <nlohmann/json.hpp>

#include "common/message_text.h"
#include "common/quantity.h"
#include "core/job.h"
#include "api/json_writer.h"
#include "api/rfc3339.h"
#include "checkpoint/manifest.h"
#include "http/client.h"
#include "proto/agent_protocol.h"
#include "server/job_json.h"

namespace muster::server {
namespace {

using nlohmann::json;

constexpr size_t kMaxYamlBytes = 256 << 10;
// JSON specs up to this size are parsed on the event loop (tens of
// microseconds); larger ones and YAML on a worker thread.
constexpr size_t kInlineSpecBytes = 16 << 10;
// Agents' reports likewise (a report of many tasks goes to a worker).
constexpr size_t kInlineSyncBytes = 64 << 10;

http::Server::Options HttpOptions(const ServerOptions& o) {
  http::Server::Options h;
  h.host = o.host;
  h.port = o.port;
  h.worker_threads = o.threads;
  h.max_body_bytes = o.max_body_bytes;
  h.max_connections = static_cast<size_t>(o.max_connections);
  h.max_connections_per_client = static_cast<size_t>(o.max_connections_per_client);
  return h;
}

// The machine code of an error the HTTP server found itself.
const char* ServerErrorCode(int status) {
  switch (status) {
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 408: return "RequestTimeout";
    case 413: return "PayloadTooLarge";
    case 415: return "UnsupportedMediaType";
    case 417: return "ExpectationFailed";
    case 429: return "TooManyRequests";
    case 431: return "HeadersTooLarge";
    case 501: return "NotImplemented";
    case 503: return "Unavailable";
    case 505: return "VersionNotSupported";
    default: return status >= 500 ? "Internal" : "BadRequest";
  }
}

struct HttpError {
  int status;
  const char* code;
};

HttpError MapStatus(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return {400, "Invalid"};
    case StatusCode::kPermissionDenied: return {403, "Forbidden"};
    case StatusCode::kNotFound: return {404, "NotFound"};
    case StatusCode::kFailedPrecondition: return {409, "Conflict"};
    case StatusCode::kAlreadyExists: return {422, "IdempotencyKeyReused"};
    case StatusCode::kResourceExhausted: return {429, "TooManyRequests"};
    case StatusCode::kUnavailable: return {503, "Unavailable"};
    default: return {500, "Internal"};
  }
}

// Never throws: a byte that is not UTF-8 (a request's percent-escaped path
// or query echoed in an error) becomes U+FFFD.
void Reply(http::Response& res, int status, const json& body) {
  res.Set(status, api::JsonText(body), "application/json");
}

void ReplyError(http::Response& res, int status, const char* code, const std::string& message,
                const std::string& field = {}) {
  json e = {{"code", code}, {"message", message}};
  if (!field.empty()) e["field"] = field;
  Reply(res, status, {{"error", e}});
}

void ReplyStatus(http::Response& res, const Status& s) {
  const HttpError e = MapStatus(s);
  // The field path is in "field"; the message reads well after it.
  ReplyError(res, e.status, e.code, s.field().empty() ? s.message() : s.field() + ": " + s.message(), s.field());
}

// An async handler's answer to a request it refuses before the loop.
void ReplyNow(const http::Server::Reply& reply, const Status& s) {
  http::Response res;
  ReplyStatus(res, s);
  reply(std::move(res));
}

// The `done` of a call into the control loop: the answer is written on the
// event loop, as an error or by `write` (the call answers on the control
// loop's or the store writer's thread, and neither should build answers).
template <typename T>
std::function<void(StatusOr<T>)> Answer(http::Server::Reply reply, std::function<void(http::Response&, const T&)> write) {
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

bool ValidName(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

StatusOr<std::string> UserOf(const http::Request& req) {
  if (!req.HasHeader("X-Muster-User")) return std::string("anonymous");
  // Twice is refused: a client's own header beside one a proxy added must
  // not decide who acts.
  if (std::count_if(req.headers.begin(), req.headers.end(),
                    [](const auto& h) { return http::EqualsIgnoringCase(h.first, "X-Muster-User"); }) > 1) {
    return InvalidArgument("given more than once", "header X-Muster-User");
  }
  const std::string user(req.Header("X-Muster-User"));
  if (!ValidName(user, 64)) {
    return InvalidArgument("must be 1 to 64 of [A-Za-z0-9._-]", "header X-Muster-User");
  }
  return user;
}

// The Idempotency-Key header, bare or as an RFC 8941 string ("...").
StatusOr<std::string> IdempotencyKeyOf(const http::Request& req) {
  if (!req.HasHeader("Idempotency-Key")) return std::string();
  std::string key(req.Header("Idempotency-Key"));
  if (key.size() >= 2 && key.front() == '"' && key.back() == '"') key = key.substr(1, key.size() - 2);
  if (key.empty() || key.size() > 255) {
    return InvalidArgument("must be 1 to 255 characters", "header Idempotency-Key");
  }
  for (char c : key) {
    if (c < 0x21 || c > 0x7e) return InvalidArgument("must be printable ASCII without spaces", "header Idempotency-Key");
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

// Handlers of routes that take no query parameters: any is refused (a
// misspelt "?limit=" on the events would otherwise be silently ignored).
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

// Reads integer query parameter `name` into `out` when present; an error
// names "query.<name>" and the range.
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

// One page of a job's events (0: the cluster's): `limit` (1 to 10,000,
// default 1,000) after the `continue` token, as {"items": [...],
// "continue": "..."} ("" on the last page).
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
  Reply(res, 200, {{"items", items}, {"continue", more ? std::to_string(events->back().seq) : ""}});
}

// A request body that must be a JSON object with only `known` members.
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

constexpr int64_t kMaxAttempt = 1'000'000;
constexpr int64_t kMaxInt = int64_t{1} << 62;

// Member `key` of a body object as an integer in [lo, hi]; required unless
// `optional` (then `out` is left alone when it is absent).
template <typename Int>
Status BodyInt(const json& j, const char* key, Int& out, int64_t lo, int64_t hi, bool optional = false) {
  if (!j.contains(key) || j[key].is_null()) return optional ? Status::Ok() : InvalidArgument("is required", key);
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < lo || j[key].get<int64_t>() > hi) {
    return InvalidArgument("must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi), key);
  }
  out = static_cast<Int>(j[key].get<int64_t>());
  return Status::Ok();
}

Status BodyString(const json& j, const char* key, std::string& out, size_t max, bool required) {
  if (!j.contains(key) || j[key].is_null()) return required ? InvalidArgument("is required", key) : Status::Ok();
  if (!j[key].is_string() || j[key].get<std::string>().size() > max) {
    return InvalidArgument("must be a string of at most " + std::to_string(max) + " bytes", key);
  }
  out = j[key].get<std::string>();
  return Status::Ok();
}

json CheckpointJson(const store::CheckpointRow& c) {
  return {{"seq", c.seq},     {"attempt", c.attempt}, {"step", c.step},   {"location", c.location},
          {"manifestSha256", c.manifest_sha256},      {"files", c.files}, {"bytes", c.bytes},
          {"state", c.state}, {"note", c.note},       {"createdTime", api::FormatRfc3339Utc(Time::FromMillis(c.created_ms))}};
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

// The path's job id, when the store has that job (NotFound otherwise).
StatusOr<int64_t> StoredJobId(const http::Request& req, store::Store& store) {
  ASSIGN_OR_RETURN(int64_t id, PathId(req));
  ASSIGN_OR_RETURN(std::optional<store::JobRow> job, store.GetJob(id));
  if (!job) return NotFound("job " + std::to_string(id) + " does not exist");
  return id;
}

}  // namespace

// Token bucket per client address. Used only by the server's filter, on its
// event-loop thread: no lock.
class HttpApi::RateLimiter {
 public:
  RateLimiter(const Clock& clock, int64_t per_second, int64_t burst)
      : clock_(clock), per_second_(per_second), burst_(burst) {}
  bool Allow(const std::string& who) {
    const int64_t now = clock_.Now().millis();
    Bucket& b = buckets_.try_emplace(who, Bucket{burst_ * 1000, now}).first->second;
    // Tokens in thousandths, refilled per elapsed millisecond.
    b.milli_tokens = std::min(burst_ * 1000, b.milli_tokens + (now - b.last_ms) * per_second_);
    b.last_ms = now;
    if (b.milli_tokens < 1000) return false;
    b.milli_tokens -= 1000;
    if (buckets_.size() > sweep_at_) Sweep(now);
    return true;
  }

 private:
  struct Bucket {
    int64_t milli_tokens;
    int64_t last_ms;
  };
  // Bounds memory under address churn: forgets the buckets that have
  // refilled (a fresh one is the same, so nobody's limit is reset), and
  // sweeps again only once as many more are held.
  void Sweep(int64_t now) {
    std::erase_if(buckets_, [&](const auto& kv) {
      return kv.second.milli_tokens + (now - kv.second.last_ms) * per_second_ >= burst_ * 1000;
    });
    sweep_at_ = std::max<size_t>(100'000, 2 * buckets_.size());
  }
  const Clock& clock_;
  const int64_t per_second_, burst_;
  std::map<std::string, Bucket> buckets_;
  size_t sweep_at_ = 100'000;
};

HttpApi::HttpApi(const ServerOptions& options, const Clock& clock, ControlLoop& loop, store::Store& store)
    : options_(options),
      clock_(clock),
      loop_(loop),
      store_(store),
      http_(std::make_unique<http::Server>(HttpOptions(options))),
      limiter_(std::make_unique<RateLimiter>(clock, options.rate_per_second, options.rate_burst)) {
  Routes();
}

HttpApi::~HttpApi() { Stop(); }

Status HttpApi::Bind() {
  RETURN_IF_ERROR(http_->Bind());
  port_ = http_->port();
  return Status::Ok();
}

void HttpApi::Serve() { http_->Serve(); }

void HttpApi::Stop() {
  // Agents' waiting syncs are answered now (with their node's desired
  // state): the server stops only once every request is answered.
  loop_.EndWaits();
  if (http_) http_->Stop();
}

void HttpApi::Submit(const http::Request& req, http::Server::Reply reply) {
  auto user = UserOf(req);
  if (!user.ok()) return ReplyNow(reply, user.status());
  auto key = IdempotencyKeyOf(req);
  if (!key.ok()) return ReplyNow(reply, key.status());
  const std::string_view type = req.Header("Content-Type");
  if (!api::IsSpecMediaType(type)) {
    // `curl -d @job.json` sends application/x-www-form-urlencoded.
    http::Response res;
    ReplyError(res, 415, "UnsupportedMediaType",
               "header Content-Type: must be application/json or application/yaml, got " + QuoteForMessage(type),
               "header Content-Type");
    return reply(std::move(res));
  }
  // yaml-cpp 0.7 needs about 140 bytes of memory per input byte on some
  // documents; a job spec is small, so YAML bodies get a tighter bound.
  const size_t first = req.body.find_first_not_of(" \t\r\n");
  const bool json_body = api::IsJsonMediaType(type) ||
                         (type.empty() && first != std::string::npos && req.body[first] == '{');
  if (!json_body && req.body.size() > kMaxYamlBytes) {
    http::Response res;
    ReplyError(res, 413, "PayloadTooLarge", "YAML bodies are limited to " + std::to_string(kMaxYamlBytes) + " bytes; send JSON");
    return reply(std::move(res));
  }
  auto spec = api::ParseJobSpec(req.body, type, options_.job_defaults);
  if (!spec.ok()) return ReplyNow(reply, spec.status());
  const bool is_array = spec->array > 0;
  ControlLoop::SubmitRequest sr;
  sr.spec_json = api::JobSpecToJson(*spec);
  sr.fingerprint = checkpoint::Sha256Hex(sr.spec_json);
  sr.spec = std::move(*spec);
  sr.user = *user;
  sr.idempotency_key = *key;
  using R = ControlLoop::SubmitResult;
  loop_.Submit(std::move(sr), Answer<R>(reply, [is_array](http::Response& out, const R& result) {
    out.headers.emplace_back("Location", "/v1/jobs/" + std::to_string(result.job.id));
    if (!is_array) return out.Set(result.created ? 201 : 200, JobJsonText(result.job), "application/json");
    // An array: the answer is its first task, with the range of ids.
    json body = JobJson(result.job);
    body["arrayFirstId"] = result.job.id;
    body["arrayLastId"] = result.job.id + result.count - 1;
    Reply(out, result.created ? 201 : 200, body);
  }));
}

void HttpApi::AgentSync(const http::Request& req, http::Server::Reply reply) {
  auto parsed = proto::ParseSyncRequest(req.body);
  if (!parsed.ok()) return ReplyNow(reply, parsed.status());
  using Phase = ControlLoop::SyncPhase;
  using R = ControlLoop::SyncResult;
  auto answer = Answer<R>(reply, [](http::Response& res, const R& result) {
    res.Set(200, proto::ToJson(result.response), "application/json");
  });
  // At most a third of the lease: an idle agent still renews it in time.
  const Duration wait = std::min({Duration::Millis(parsed->wait_ms), options_.agent_sync_wait,
                                  Duration::Millis(options_.agent_lease.millis() / 3)});
  const Phase phase = parsed->wait_ms > 0 ? Phase::kMayWait : Phase::kFull;
  auto request = std::make_shared<const proto::SyncRequest>(std::move(*parsed));
  loop_.AgentSync(request, phase, [this, request, wait, answer](StatusOr<ControlLoop::SyncResult> r) {
    if (!r.ok() || !r->wait) return answer(std::move(r));
    // Nothing new for this node: the answer waits, in the control loop,
    // until its desired state changes (a bind or a stop) or the wait ends.
    loop_.WhenNodeChanges(request->node, request->version, wait,
                          [this, request, answer] { loop_.AgentSync(request, Phase::kAfterWait, answer); });
  });
}

void HttpApi::Routes() {
  http::Server& s = *http_;
  s.SetFilter([this](const http::Request& req, http::Response& res) {
    // Agents are the cluster's own infrastructure, and a liveness probe that
    // got 429 would have the server restarted: neither is rate limited.
    if (req.path != "/v1/agent/sync" && req.path != "/healthz" && !limiter_->Allow(req.remote_addr)) {
      res.headers.emplace_back("Retry-After", "1");
      ReplyError(res, 429, "TooManyRequests", "rate limit of " + std::to_string(options_.rate_per_second) +
                                                  " requests per second exceeded; retry after 1 s");
      return true;
    }
    return false;
  });
  s.SetErrorBody([](int status, const std::string& message, http::Response& res) {
    ReplyError(res, status, ServerErrorCode(status), message);
  });

  // Answered on the event loop itself: it tells whether that loop is alive.
  s.HandleAsync("GET", "/healthz", NoQueryAsync([](http::Request&&, http::Server::Reply reply) {
    http::Response res;
    Reply(res, 200, {{"status", "ok"}});
    reply(std::move(res));
  }));

  // Submits are answered from the store writer once durable, without
  // holding a thread; small JSON specs are parsed on the event loop,
  // YAML and large bodies on a worker.
  s.HandleAsync(
      "POST", "/v1/jobs",
      NoQueryAsync([this](http::Request&& req, http::Server::Reply reply) { Submit(req, std::move(reply)); }),
      [](const http::Request& req) {
        return req.body.size() > kInlineSpecBytes || !api::IsJsonMediaType(req.Header("Content-Type"));
      });

  s.Handle("GET", "/v1/jobs", [this](const http::Request& req, http::Response& res) {
    if (Status q = CheckQuery(req, {"state", "queue", "user", "name", "limit", "continue", "view"}); !q.ok()) {
      return ReplyStatus(res, q);
    }
    const std::string& view = req.Param("view");
    if (!view.empty() && view != "full" && view != "summary") {
      return ReplyStatus(res, InvalidArgument("must be full or summary, got " + QuoteForMessage(view), "query.view"));
    }
    store::JobFilter f;
    if (req.HasParam("state")) {
      std::string states = req.Param("state");
      size_t start = 0;
      while (start <= states.size()) {
        const size_t comma = std::min(states.find(',', start), states.size());
        std::string st = states.substr(start, comma - start);
        for (char& c : st) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (!core::JobStateFromName(st)) {
          return ReplyStatus(res, InvalidArgument("unknown state \"" + st.substr(0, 32) +
                                                      "\" (PENDING, HELD, RUNNING, COMPLETED, FAILED, CANCELLED, ...)",
                                                  "query.state"));
        }
        f.states.push_back(st);
        start = comma + 1;
      }
    }
    f.queue = req.Param("queue");
    f.user = req.Param("user");
    f.name = req.Param("name");
    int64_t limit = 100, after = 0;
    if (Status st = IntParam(req, "limit", limit, 1, 1000); !st.ok()) return ReplyStatus(res, st);
    // An empty token is the first page (the last page's answer carries "").
    if (!req.Param("continue").empty()) {
      if (Status st = IntParam(req, "continue", after, 0, INT64_MAX); !st.ok()) return ReplyStatus(res, st);
    }
    // Written as text: each job is its stored spec plus status fields, or its summary.
    std::string body = "{\"items\":[";
    int64_t next = 0;
    if (view == "summary") {
      auto page = store_.ListJobSummaries(f, after, static_cast<int32_t>(limit));
      if (!page.ok()) return ReplyStatus(res, page.status());
      for (size_t i = 0; i < page->items.size(); ++i) {
        if (i) body += ',';
        AppendSummaryJson(page->items[i], body);
      }
      next = page->next_after_id;
    } else {
      auto page = store_.ListJobs(f, after, static_cast<int32_t>(limit));
      if (!page.ok()) return ReplyStatus(res, page.status());
      for (size_t i = 0; i < page->items.size(); ++i) {
        if (i) body += ',';
        body += JobJsonText(page->items[i]);
      }
      next = page->next_after_id;
    }
    body += "],\"continue\":\"";
    body += next ? std::to_string(next) : "";
    body += "\"}";
    res.Set(200, std::move(body), "application/json");
  });

  // The calls into the control loop below hold no thread while they wait
  // (a scheduling cycle in progress, a change's fsync).
  s.HandleAsync("GET", "/v1/jobs/*", NoQueryAsync([this](http::Request&& req, http::Server::Reply reply) {
    auto id = PathId(req);
    if (!id.ok()) return ReplyNow(reply, id.status());
    using E = ControlLoop::Explanation;
    loop_.Explain(*id, Answer<E>(reply, [](http::Response& res, const E& e) {
      json j = JobJson(e.job);
      if (!e.reason_text.empty()) j["reasonDetail"] = e.reason_text;
      if (e.reason && !e.reason->planned_start.is_max()) {
        j["plannedStart"] = api::FormatRfc3339Utc(e.reason->planned_start);
      }
      if (e.priority) {
        j["priorityBreakdown"] = {{"class", e.priority->class_points},
                                  {"age", e.priority->age_points},
                                  {"fairShare", e.priority->fairshare_points},
                                  {"size", e.priority->size_points},
                                  {"total", e.priority->total()}};
      }
      Reply(res, 200, j);
    }));
  }));

  s.Handle("GET", "/v1/jobs/*/events", [this](const http::Request& req, http::Response& res) {
    auto id = StoredJobId(req, store_);
    if (!id.ok()) return ReplyStatus(res, id.status());
    EventsPage(req, store_, *id, res);
  });

  for (const ControlLoop::Action action : {ControlLoop::Action::kCancel, ControlLoop::Action::kHold,
                                           ControlLoop::Action::kRelease, ControlLoop::Action::kRequeue}) {
    s.HandleAsync("POST", std::string("/v1/jobs/*/") + ControlLoop::ActionName(action),
                  NoQueryAsync([this, action](http::Request&& req, http::Server::Reply reply) {
                    auto id = PathId(req);
                    if (!id.ok()) return ReplyNow(reply, id.status());
                    auto user = UserOf(req);
                    if (!user.ok()) return ReplyNow(reply, user.status());
                    loop_.Act(*id, action, *user, Answer<store::JobRow>(reply, [](http::Response& res, const store::JobRow& row) {
                      Reply(res, 200, JobJson(row));
                    }));
                  }));
  }

  // Checkpoints and progress, reported by the job itself (python/muster_job.py,
  // `muster checkpoint`, `muster progress`).
  s.HandleAsync("POST", "/v1/jobs/*/checkpoints", NoQueryAsync([this](http::Request&& req, http::Server::Reply reply) {
    auto id = PathId(req);
    if (!id.ok()) return ReplyNow(reply, id.status());
    auto user = UserOf(req);
    if (!user.ok()) return ReplyNow(reply, user.status());
    auto body = BodyObject(req, {"attempt", "step", "location", "manifestSha256", "files", "bytes"});
    if (!body.ok()) return ReplyNow(reply, body.status());
    ControlLoop::CheckpointCommit c;
    c.job = *id;
    c.user = *user;
    for (Status st : {BodyInt(*body, "attempt", c.attempt, 1, kMaxAttempt), BodyInt(*body, "step", c.step, 0, kMaxInt),
                      BodyString(*body, "location", c.location, 4096, true),
                      BodyString(*body, "manifestSha256", c.manifest_sha256, 64, true),
                      BodyInt(*body, "files", c.files, 1, kMaxInt), BodyInt(*body, "bytes", c.bytes, 0, kMaxInt)}) {
      if (!st.ok()) return ReplyNow(reply, st);
    }
    if (!checkpoint::IsSha256Hex(c.manifest_sha256)) {
      return ReplyNow(reply, InvalidArgument("must be 64 lower-case hex digits", "manifestSha256"));
    }
    loop_.CommitCheckpoint(std::move(c), Answer<store::CheckpointRow>(reply, [](http::Response& res, const store::CheckpointRow& row) {
      Reply(res, 201, CheckpointJson(row));
    }));
  }), [](const http::Request& req) { return req.body.size() > kInlineSyncBytes; });

  s.Handle("GET", "/v1/jobs/*/checkpoints", NoQuery([this](const http::Request& req, http::Response& res) {
    auto id = StoredJobId(req, store_);
    if (!id.ok()) return ReplyStatus(res, id.status());
    auto rows = store_.ListCheckpoints(*id);
    if (!rows.ok()) return ReplyStatus(res, rows.status());
    json items = json::array();
    for (const store::CheckpointRow& c : *rows) items.push_back(CheckpointJson(c));
    Reply(res, 200, {{"items", items}});
  }));

  s.HandleAsync("POST", "/v1/jobs/*/progress", NoQueryAsync([this](http::Request&& req, http::Server::Reply reply) {
    auto id = PathId(req);
    if (!id.ok()) return ReplyNow(reply, id.status());
    auto user = UserOf(req);
    if (!user.ok()) return ReplyNow(reply, user.status());
    auto body = BodyObject(req, {"attempt", "step", "metrics", "message"});
    if (!body.ok()) return ReplyNow(reply, body.status());
    ControlLoop::ProgressReport p;
    p.job = *id;
    p.user = *user;
    int64_t step = -1;
    for (Status st : {BodyInt(*body, "attempt", p.attempt, 1, kMaxAttempt),
                      BodyInt(*body, "step", step, 0, kMaxInt, /*optional=*/true),
                      BodyString(*body, "message", p.message, 1024, false)}) {
      if (!st.ok()) return ReplyNow(reply, st);
    }
    if (step >= 0) p.step = step;
    if (body->contains("metrics") && !(*body)["metrics"].is_null()) {
      const json& m = (*body)["metrics"];
      if (!m.is_object() || m.size() > 64) return ReplyNow(reply, InvalidArgument("must be an object of at most 64 numbers", "metrics"));
      for (const auto& [k, v] : m.items()) {
        if (!ValidName(k, 64)) return ReplyNow(reply, InvalidArgument("names must be 1 to 64 of [A-Za-z0-9._-]", "metrics." + k.substr(0, 64)));
        if (!v.is_number()) return ReplyNow(reply, InvalidArgument("must be a number", "metrics." + k));
      }
      p.metrics = m;
    }
    using A = ControlLoop::ProgressAnswer;
    loop_.ReportProgress(std::move(p), Answer<A>(reply, [](http::Response& res, const A& a) {
      Reply(res, 200, {{"attempt", a.attempt}, {"checkpointRequested", a.checkpoint_requested}});
    }));
  }), [](const http::Request& req) { return req.body.size() > kInlineSyncBytes; });

  s.HandleAsync("GET", "/v1/queues", NoQueryAsync([this](http::Request&&, http::Server::Reply reply) {
    using Q = std::vector<ControlLoop::QueueView>;
    loop_.Queues(Answer<Q>(reply, [](http::Response& res, const Q& queues) {
      json items = json::array();
      for (const auto& q : queues) {
        json item = {{"name", q.name}, {"pending", q.pending}, {"running", q.running}, {"gpusInUse", q.gpus_in_use},
                     {"gpusInUseByType", q.in_use_by_type}};
        if (!q.guarantee.empty()) item["guarantee"] = q.guarantee;
        if (!q.limit.empty()) item["limit"] = q.limit;
        items.push_back(std::move(item));
      }
      Reply(res, 200, {{"items", items}});
    }));
  }));

  // An agent's sync holds no thread while it waits for news (AgentSync).
  s.HandleAsync(
      "POST", "/v1/agent/sync", [this](http::Request&& req, http::Server::Reply reply) { AgentSync(req, std::move(reply)); },
      [](const http::Request& req) { return req.body.size() > kInlineSyncBytes; });

  s.Handle("GET", "/v1/jobs/*/logs", [this](const http::Request& req, http::Response& res) {
    auto id = PathId(req);
    if (!id.ok()) return ReplyStatus(res, id.status());
    if (Status q = CheckQuery(req, {"replica", "attempt", "offset", "tail"}); !q.ok()) return ReplyStatus(res, q);
    int64_t replica = 0, attempt = 0, offset = -1, tail = -1;
    for (Status st : {IntParam(req, "replica", replica, 0, 4095), IntParam(req, "attempt", attempt, 1, 1'000'000),
                      IntParam(req, "offset", offset, 0, int64_t{1} << 50), IntParam(req, "tail", tail, 0, 1'000'000)}) {
      if (!st.ok()) return ReplyStatus(res, st);
    }
    auto where = loop_.LocateReplica(*id, static_cast<int32_t>(replica), static_cast<int32_t>(attempt));
    if (!where.ok()) return ReplyStatus(res, where.status());
    const int most = std::max(1, options_.threads / 4);
    struct InFlight {
      std::atomic<int>& n;
      ~InFlight() { --n; }
    } in_flight{log_fetches_};
    if (++log_fetches_ > most) {
      res.headers.emplace_back("Retry-After", "1");
      return ReplyError(res, 503, "Unavailable",
                        std::to_string(most) + " log requests are in flight (a quarter of `threads`); retry after 1 s");
    }
    http::Client::Options o;
    o.connect_timeout = std::chrono::milliseconds(2'000);
    o.read_timeout = std::chrono::milliseconds(10'000);
    o.max_body_bytes = (4 << 20) + (64 << 10);  // an agent answers at most 4 MiB of log
    http::Client agent(where->address, where->log_port, o);
    std::string path = "/logs/" + proto::TaskKey(*id, where->attempt, static_cast<int32_t>(replica)) + "?";
    if (offset >= 0) path += "offset=" + std::to_string(offset) + "&";
    if (tail >= 0) path += "tail=" + std::to_string(tail);
    auto r = agent.Get(path);
    if (!r.ok()) {
      return ReplyStatus(res, Status(StatusCode::kUnavailable, "the agent of node " + where->node +
                                                                   " does not answer for logs (" + r.status().message() + ")"));
    }
    if (r->status != 200) {
      return ReplyError(res, r->status == 404 ? 404 : 502, r->status == 404 ? "NotFound" : "BadGateway",
                        "node " + where->node + ": no log for replica " + std::to_string(replica) + " of job " +
                            std::to_string(*id) + (r->status == 404 ? "" : " (agent answered " + std::to_string(r->status) + ")"));
    }
    res.headers.emplace_back("X-Muster-Log-Offset", std::string(r->Header("X-Muster-Log-Offset")));
    res.headers.emplace_back("X-Muster-Node", where->node);
    res.headers.emplace_back("X-Muster-Log-Attempt", std::to_string(where->attempt));
    res.Set(200, std::move(r->body), "text/plain; charset=utf-8");
  });

  s.Handle("GET", "/v1/events", [this](const http::Request& req, http::Response& res) {
    EventsPage(req, store_, 0, res);  // cluster events: nodes and GPUs
  });

  for (const std::string verb : {"cordon", "uncordon", "drain"}) {
    s.HandleAsync("POST", "/v1/nodes/*/" + verb, NoQueryAsync([this, verb](http::Request&& req, http::Server::Reply reply) {
      auto user = UserOf(req);
      if (!user.ok()) return ReplyNow(reply, user.status());
      using N = ControlLoop::NodeView;
      loop_.Cordon(req.captures[0], verb != "uncordon", *user, verb == "drain",
                   Answer<N>(reply, [](http::Response& res, const N& view) {
                     json j = {{"name", view.spec.name}, {"schedulable", view.schedulable}};
                     if (!view.cordon.empty()) j["cordon"] = view.cordon;
                     Reply(res, 200, j);
                   }));
    }));
  }

  auto node_answer = [](http::Server::Reply reply) {
    using N = ControlLoop::NodeView;
    return Answer<N>(std::move(reply), [](http::Response& res, const N& view) {
      json j = {{"name", view.spec.name}, {"schedulable", view.schedulable}, {"condition", view.condition}};
      if (!view.cordon.empty()) j["cordon"] = view.cordon;
      Reply(res, 200, j);
    });
  };
  s.HandleAsync("POST", "/v1/nodes/*/declare-lost",
                NoQueryAsync([this, node_answer](http::Request&& req, http::Server::Reply reply) {
                  auto user = UserOf(req);
                  if (!user.ok()) return ReplyNow(reply, user.status());
                  loop_.DeclareLost(req.captures[0], *user, node_answer(std::move(reply)));
                }));
  s.HandleAsync("DELETE", "/v1/nodes/*", NoQueryAsync([this, node_answer](http::Request&& req, http::Server::Reply reply) {
    auto user = UserOf(req);
    if (!user.ok()) return ReplyNow(reply, user.status());
    loop_.RemoveNode(req.captures[0], *user, node_answer(std::move(reply)));
  }));

  // Built on a worker: a thousand nodes' agent reports are too much work
  // for the event loop.
  s.Handle("GET", "/v1/nodes", NoQuery([this](const http::Request&, http::Response& res) {
    using V = std::vector<ControlLoop::NodeView>;
    auto nodes = Await<V>([this](ControlLoop::Done<StatusOr<V>> done) { loop_.Nodes(std::move(done)); });
    if (!nodes.ok()) return ReplyStatus(res, nodes.status());
    json items = json::array();
    for (const auto& n : *nodes) {
      const json agent = json::parse(n.status_json, nullptr, false);
      items.push_back({{"name", n.spec.name},
                       {"agent", agent.is_object() ? agent : json::object()},
                       {"gpuType", n.spec.gpu_type},
                       {"gpus", n.spec.capacity.gpus},
                       {"freeGpus", n.free.gpus},
                       {"cpuMilli", n.spec.capacity.cpu_milli},
                       {"memoryBytes", n.spec.capacity.memory_bytes},
                       {"leaf", n.spec.topology.leaf},
                       {"spine", n.spec.topology.spine},
                       {"schedulable", n.schedulable},
                       {"condition", n.condition},
                       {"runningJobs", n.running_jobs}});
      if (!n.cordon.empty()) items.back()["cordon"] = n.cordon;
      if (n.last_seen_ms > 0) items.back()["lastSeen"] = api::FormatRfc3339Utc(Time::FromMillis(n.last_seen_ms));
    }
    Reply(res, 200, {{"items", items}});
  }));

}

}  // namespace muster::server
