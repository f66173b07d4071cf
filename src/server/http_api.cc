#include "server/http_api.h"

#include <algorithm>
#include <map>

#include "api/job_spec.h"
#include "common/message_text.h"
#include "server/http_api_util.h"
#include "server/openapi_check.h"
#include "server/web_assets.h"

namespace muster::server {
namespace {

http::Server::Options HttpOptions(const ServerOptions& o, std::shared_ptr<const http::TlsServerContext> tls) {
  http::Server::Options h;
  h.tls = std::move(tls);
  h.host = o.host;
  h.port = o.port;
  h.worker_threads = o.threads;
  h.max_body_bytes = o.max_body_bytes;
  h.max_connections = static_cast<size_t>(o.max_connections);
  h.max_connections_per_client = static_cast<size_t>(o.max_connections_per_client);
  h.max_connections_per_principal = static_cast<size_t>(o.max_connections_per_user);
  h.first_request_timeout = std::chrono::milliseconds(o.first_request_timeout.millis());
  return h;
}

// The machine code of an error the HTTP server found itself.
const char* ServerErrorCode(int status) {
  switch (status) {
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 408:
      return "RequestTimeout";
    case 413:
      return "PayloadTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 417:
      return "ExpectationFailed";
    case 429:
      return "TooManyRequests";
    case 431:
      return "HeadersTooLarge";
    case 501:
      return "NotImplemented";
    case 503:
      return "Unavailable";
    case 505:
      return "VersionNotSupported";
    default:
      return status >= 500 ? "Internal" : "BadRequest";
  }
}

}  // namespace

// Token bucket per key: an authenticated caller's principal, or the address
// of requests with no valid credential. Used only by the server's filter,
// on its event-loop thread: no lock.
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

HttpApi::HttpApi(const ServerOptions& options, const Clock& clock, ControlLoop& loop, store::Store& store,
                 const Leadership& leadership, Authenticator& authn, ServerMetrics& metrics,
                 std::shared_ptr<const http::TlsServerContext> tls)
    : options_(options),
      clock_(clock),
      loop_(loop),
      store_(store),
      leadership_(leadership),
      authn_(authn),
      metrics_(metrics),
      authz_(options),
      http_(std::make_unique<http::Server>(HttpOptions(options, std::move(tls)))),
      limiter_(std::make_unique<RateLimiter>(clock, options.rate_per_second, options.rate_burst)),
      anonymous_limiter_(std::make_unique<RateLimiter>(clock, options.unauthenticated_rate_per_second,
                                                       options.unauthenticated_rate_burst)) {
  Routes();
}

HttpApi::~HttpApi() { Stop(); }

Status HttpApi::Bind() {
  if (!options_.access_log.empty()) {
    ASSIGN_OR_RETURN(access_log_, log::LineFile::Open(options_.access_log));
    http_->SetAccessLog([file = access_log_.get()](const http::Server::Access& a) {
      // CLIENT WHO "METHOD TARGET" STATUS BYTES SECONDS; the target is
      // visible ASCII (the parser's rule), its quotes escaped.
      std::string target(a.target);
      for (size_t at = 0; (at = target.find('"', at)) != std::string::npos; at += 3) target.replace(at, 1, "%22");
      file->Write(fmt::format("{} {} \"{} {}\" {} {} {:.6f}", a.remote.empty() ? "-" : a.remote,
                              a.principal.empty() ? "-" : a.principal, a.method.empty() ? "-" : a.method,
                              target.empty() ? "-" : target, a.status, a.body_bytes, a.seconds));
    });
  }
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

bool HttpApi::RateAllows(const std::string& principal, const Request& req, Response& res) {
  const bool known = !principal.empty();
  if ((known ? *limiter_ : *anonymous_limiter_).Allow(known ? principal : req.remote_addr)) return true;
  res.headers.emplace_back("Retry-After", "1");
  const int64_t rate = known ? options_.rate_per_second : options_.unauthenticated_rate_per_second;
  ReplyError(res, 429, "TooManyRequests",
             "rate limit of " + std::to_string(rate) + " requests per second " +
                 (known ? "for " + principal : "without a valid credential from " + req.remote_addr) +
                 " exceeded; retry after 1 s");
  return false;
}

bool HttpApi::IsWebFile(std::string_view path) {
  return path == "/" || path == "/favicon.ico" || path.rfind("/ui/", 0) == 0;
}

void HttpApi::WebFile(const Request& req, Response& res) {
  // Browsers ask for /favicon.ico by themselves: the icon answers.
  const WebAsset* file = FindWebAsset(req.path == "/"              ? "/index.html"
                                      : req.path == "/favicon.ico" ? "/favicon.svg"
                                                                   : std::string_view(req.path).substr(3));
  if (file == nullptr) return ReplyError(res, 404, "NotFound", "no such file: " + QuoteForMessage(req.path));
  res.Set(200, std::string(file->bytes()), WebMediaType(file->path));
  // Its scripts and styles only from here; never framed; nothing sent to
  // other sites; revalidated, so an upgraded server's files are used.
  res.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; "
                           "form-action 'none'");
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.headers.emplace_back("Referrer-Policy", "no-referrer");
  res.headers.emplace_back("Cache-Control", "no-cache");
}

void HttpApi::OpenApi(const Request&, Response& res) { ReplyJson(res, 200, ServedOpenApi(http_->RouteTable())); }

void HttpApi::Routes() {
  http::Server& s = *http_;
  s.SetFilter([this](http::Request& req, http::Response& res) {
    // Only the leader acts, and answers reads: a standby's view would lag.
    // A standby's metrics say it is one.
    // The dashboard's files are public and the same on every server: they
    // need no credential (the page then asks for one) and no leader.
    if (IsWebFile(req.path)) return false;
    if (req.path != "/healthz" && req.path != "/metrics" && !leadership_.Leads()) {
      ReplyNotLeading(leadership_, res);
      return true;
    }
    // A liveness probe that got 429 would have the server restarted: it is
    // not rate limited, and needs no credential.
    if (req.path == "/healthz") return false;
    // Rate limited in Authenticate: each caller by who it is, requests
    // without a valid credential by their address in a budget of their own.
    return Authenticate(req, res);
  });
  // And checked again as each answer leaves: a leader paused while it
  // handled a request (or whose lease ran out meanwhile) must not answer
  // from a state another leader may have changed. The client sends the
  // request again to the leader: every request it may have acted on is
  // idempotent (submits by their key).
  s.SetAnswerFilter([this](const std::string& path, http::Response& res) {
    if (path == "/healthz" || path == "/metrics" || IsWebFile(path) || leadership_.Leads()) return;
    res = http::Response{};
    ReplyNotLeading(leadership_, res);
  });
  s.SetErrorBody([](int status, const std::string& message, http::Response& res) {
    ReplyError(res, status, ServerErrorCode(status), message);
  });

  // Handlers of two kinds: Handle runs on a worker thread and writes its
  // answer (store reads, an agent's logs); HandleAsync runs on the event
  // loop and answers through `reply`, from any thread, holding none while
  // it waits. `on_worker` moves an async handler to a worker for requests
  // too big to parse on the event loop.
  const auto sync = [this](void (HttpApi::*h)(const Request&, Response&)) {
    return [this, h](const Request& req, Response& res) { (this->*h)(req, res); };
  };
  const auto async = [this](void (HttpApi::*h)(Request&&, Reply)) {
    return [this, h](Request&& req, Reply reply) { (this->*h)(std::move(req), std::move(reply)); };
  };
  const auto larger_than = [](size_t bytes) { return [bytes](const Request& req) { return req.body.size() > bytes; }; };

  // Answered on the event loop itself: it tells whether that loop is alive.
  s.HandleAsync("GET", "/healthz", NoQueryAsync(async(&HttpApi::Health)));
  // The dashboard (web/, built into the binary).
  s.Handle("GET", "/", sync(&HttpApi::WebFile));
  s.Handle("GET", "/ui/*", sync(&HttpApi::WebFile));
  s.Handle("GET", "/favicon.ico", sync(&HttpApi::WebFile));
  s.HandleAsync("GET", "/metrics", NoQueryAsync(async(&HttpApi::Metrics)));

  s.HandleAsync("POST", "/v1/jobs", NoQueryAsync(async(&HttpApi::SubmitJob)), [](const Request& req) {
    return req.body.size() > kInlineSpecBytes || !api::IsJsonMediaType(req.Header("Content-Type"));
  });
  // A list reads the store on a worker; a watch only opens its stream.
  s.HandleAsync("GET", "/v1/jobs", async(&HttpApi::ListOrWatchJobs), [](const Request& req) { return !IsWatch(req); });
  s.HandleAsync("GET", "/v1/jobs/*", NoQueryAsync(async(&HttpApi::GetJob)));
  s.Handle("GET", "/v1/jobs/*/events", sync(&HttpApi::JobEvents));
  for (const ControlLoop::Action action : {ControlLoop::Action::kCancel, ControlLoop::Action::kHold,
                                           ControlLoop::Action::kRelease, ControlLoop::Action::kRequeue}) {
    s.HandleAsync("POST", std::string("/v1/jobs/*/") + ControlLoop::ActionName(action),
                  NoQueryAsync([this, action](Request&& req, Reply reply) {
                    ActOnJob(action, std::move(req), std::move(reply));
                  }));
  }
  s.HandleAsync("POST", "/v1/jobs/*/signal", NoQueryAsync(async(&HttpApi::SignalJob)));
  // Checkpoints and progress, reported by the job itself
  // (python/muster_job.py, `muster checkpoint`, `muster progress`).
  s.HandleAsync("POST", "/v1/jobs/*/checkpoints", NoQueryAsync(async(&HttpApi::CommitCheckpoint)),
                larger_than(kInlineSyncBytes));
  s.Handle("GET", "/v1/jobs/*/checkpoints", NoQuery(sync(&HttpApi::ListCheckpoints)));
  s.HandleAsync("POST", "/v1/jobs/*/progress", NoQueryAsync(async(&HttpApi::ReportProgress)),
                larger_than(kInlineSyncBytes));
  s.Handle("GET", "/v1/jobs/*/logs", sync(&HttpApi::JobLogs));

  s.HandleAsync("GET", "/v1/queues", NoQueryAsync(async(&HttpApi::ListQueues)));
  s.HandleAsync("POST", "/v1/queues", NoQueryAsync(async(&HttpApi::CreateQueue)));
  s.HandleAsync("PUT", "/v1/queues/*", NoQueryAsync(async(&HttpApi::PutQueue)));
  s.HandleAsync("DELETE", "/v1/queues/*", NoQueryAsync(async(&HttpApi::DeleteQueue)));
  s.Handle("GET", "/v1/slurm/partitions", NoQuery(sync(&HttpApi::SlurmPartitions)));
  s.Handle("GET", "/v1/openapi.json", NoQuery(sync(&HttpApi::OpenApi)));
  s.HandleAsync("POST", "/v1/reservations", NoQueryAsync(async(&HttpApi::CreateReservation)));
  s.Handle("GET", "/v1/reservations", NoQuery(sync(&HttpApi::ListReservations)));
  s.HandleAsync("DELETE", "/v1/reservations/*", NoQueryAsync(async(&HttpApi::DeleteReservation)));
  // Built on a worker: a thousand nodes' agent reports are too much work
  // for the event loop.
  s.Handle("GET", "/v1/nodes", NoQuery(sync(&HttpApi::ListNodes)));
  for (const std::string verb : {"cordon", "uncordon", "drain"}) {
    s.HandleAsync("POST", "/v1/nodes/*/" + verb, NoQueryAsync([this, verb](Request&& req, Reply reply) {
                    CordonNode(verb, std::move(req), std::move(reply));
                  }));
  }
  s.HandleAsync("POST", "/v1/nodes/*/reclaim", NoQueryAsync(async(&HttpApi::ReclaimNode)));
  s.HandleAsync("POST", "/v1/nodes/*/declare-lost", NoQueryAsync(async(&HttpApi::DeclareNodeLost)));
  s.HandleAsync("DELETE", "/v1/nodes/*", NoQueryAsync(async(&HttpApi::RemoveNode)));
  s.Handle("GET", "/v1/events", sync(&HttpApi::ClusterEvents));
  s.Handle("GET", "/v1/usage", sync(&HttpApi::Usage));
  s.HandleAsync("POST", "/v1/agent/sync", async(&HttpApi::AgentSync), larger_than(kInlineSyncBytes));

  s.HandleAsync("POST", "/v1/tokens", NoQueryAsync(async(&HttpApi::CreateToken)));
  s.Handle("GET", "/v1/tokens", NoQuery(sync(&HttpApi::ListTokens)));
  s.HandleAsync("DELETE", "/v1/tokens/*", NoQueryAsync(async(&HttpApi::RevokeToken)));
  s.Handle("GET", "/v1/audit", sync(&HttpApi::ListAudit));
  s.HandleAsync("GET", "/v1/whoami", NoQueryAsync(async(&HttpApi::WhoAmI)));
  s.HandleAsync("POST", "/v1/registry-credentials", NoQueryAsync(async(&HttpApi::PutRegistryCredential)));
  s.Handle("GET", "/v1/registry-credentials", NoQuery(sync(&HttpApi::ListRegistryCredentials)));
  s.HandleAsync("DELETE", "/v1/registry-credentials", async(&HttpApi::RemoveRegistryCredential));
  s.HandleAsync("POST", "/v1/images/pull", NoQueryAsync(async(&HttpApi::PullImage)));
  s.Handle("GET", "/v1/images", NoQuery(sync(&HttpApi::ListImagePulls)));
}

}  // namespace muster::server
