// HttpApi: the REST API of `muster server` (JSON over HTTP, prefix /v1).
//
//   POST /v1/jobs                     submit (JSON or YAML by Content-Type);
//                                     201 + job; Idempotency-Key: replay 200,
//                                     same key for another body 422, in flight 409
//   GET  /v1/jobs?state=&queue=&user=&name=&limit=&continue=&view=
//                                     {"items": [...], "continue": "..."};
//                                     view=summary: a table's fields only
//   GET  /v1/jobs/{id}                the job, with its pending reason and
//                                     priority breakdown
//   GET  /v1/jobs/{id}/events         {"items": [...], "continue": "..."} (also /v1/events)
//   POST /v1/jobs/{id}/cancel|hold|release|requeue
//   GET  /v1/queues, GET /v1/nodes
//   GET  /healthz                     {"status": "ok", "role": "leader"|"standby"|..., "epoch", "leader"}
//   (every route and its handler: HttpApi::Routes, and docs/api.md)
//
// Every error has one shape:
//   {"error": {"code": "Invalid", "message": "...", "field": "spec.resources.gpus"}}
// with codes Invalid (400), Forbidden (403), NotFound (404), Conflict (409),
// IdempotencyKeyReused (422), PayloadTooLarge (413), TooManyRequests (429,
// with Retry-After), Unavailable (503), NotLeader (503, from a standby: the
// error's "leader" and the X-Muster-Leader header give the leader's
// address), Internal (500). Unknown query
// parameters are rejected with a suggestion. Bodies over max_body_bytes are
// refused with 413 (YAML bodies over 256 KiB too); each client address gets rate_per_second
// requests per second (burst rate_burst).
//
// Identity: every request but GET /healthz is authenticated before any
// work (server/authenticator.h: MUNGE, a token, a node's token, a job
// token) and then authorized (server/authorizer.h): a node's credential
// reaches only POST /v1/agent/sync, for its own node; a job token only its
// job's checkpoints and progress; users everything else, as their roles
// allow. Changes and refusals go to the audit log (GET /v1/audit).
//
//   POST   /v1/tokens {user?, node?, expiresIn?, description?}   a token, shown once
//   GET    /v1/tokens, DELETE /v1/tokens/{id}                    list, revoke
//   GET    /v1/audit?actor=&object=&limit=&continue=             the audit log
//   GET    /v1/whoami                                            the caller's identity
//
// Reads (lists, events) are served from the store's read connections;
// changes and one job's live state go through the ControlLoop. Requests are
// served by http::Server (src/http): calls into the ControlLoop answer from
// its event loop without holding a thread; store reads, an agent's logs and
// the node list run on its worker threads.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "http/server.h"
#include "server/authenticator.h"
#include "server/authorizer.h"
#include "server/control_loop.h"
#include "server/http_api_util.h"
#include "server/leadership.h"
#include "server/options.h"
#include "server/server_metrics.h"
#include "store/store.h"

namespace muster::server {

class HttpApi {
 public:
  // Every request but GET /healthz is answered only while `leadership`
  // leads; a standby points to the leader (503 NotLeader with its address).
  // `tls`: HTTPS with that certificate; null: plain HTTP.
  HttpApi(const ServerOptions& options, const Clock& clock, ControlLoop& loop, store::Store& store,
          const Leadership& leadership, Authenticator& authn, ServerMetrics& metrics,
          std::shared_ptr<const http::TlsServerContext> tls = nullptr);
  ~HttpApi();

  // Binds the listening socket (port 0 picks a free one).
  Status Bind();
  int port() const { return port_; }
  // Serves until Stop(); blocks.
  void Serve();
  void Stop();

 private:
  using Request = http::Request;
  using Response = http::Response;
  using Reply = http::Server::Reply;

  // The route table: one handler below per endpoint.
  void Routes();

  // Jobs (http_api_jobs.cc). Calls into the control loop hold no thread
  // while they wait (a scheduling cycle in progress, a change's fsync);
  // reads of lists are served from the store on a worker.
  void SubmitJob(Request&& req, Reply reply);        // POST /v1/jobs
  void ListOrWatchJobs(Request&& req, Reply reply);  // GET  /v1/jobs[?watch=true]
  void ListJobs(const Request& req, Response& res);
  void WatchJobs(const Request& req, const Reply& reply);
  // The filter of a job list's query (state, queue, user, name), narrowed
  // to what the caller may see: users their own jobs, queue admins their
  // queue's, operators and admins all.
  StatusOr<store::JobFilter> VisibleJobFilter(const Request& req) const;
  void GetJob(Request&& req, Reply reply);                   // GET  /v1/jobs/{id}
  void JobEvents(const Request& req, Response& res);         // GET  /v1/jobs/{id}/events
  void SlurmPartitions(const Request& req, Response& res);   // GET /v1/slurm/partitions
  void OpenApi(const Request& req, Response& res);           // GET /v1/openapi.json (server/openapi_check.h)
  void CreateReservation(Request&& req, Reply reply);        // POST /v1/reservations
  void ListReservations(const Request& req, Response& res);  // GET /v1/reservations
  void DeleteReservation(Request&& req, Reply reply);        // DELETE /v1/reservations/{name}
  void ActOnJob(ControlLoop::Action action, Request&& req,
                Reply reply);                               // POST /v1/jobs/{id}/cancel|hold|release|requeue
  void SignalJob(Request&& req, Reply reply);               // POST /v1/jobs/{id}/signal
  void CommitCheckpoint(Request&& req, Reply reply);        // POST /v1/jobs/{id}/checkpoints
  void ListCheckpoints(const Request& req, Response& res);  // GET  /v1/jobs/{id}/checkpoints
  void ReportProgress(Request&& req, Reply reply);          // POST /v1/jobs/{id}/progress
  void JobLogs(const Request& req, Response& res);          // GET  /v1/jobs/{id}/logs

  // The dashboard's files (web/, server/web_assets.h): GET / and /ui/{file}.
  static bool IsWebFile(std::string_view path);
  void WebFile(const Request& req, Response& res);

  // The cluster (http_api_cluster.cc).
  void Health(Request&& req, Reply reply);   // GET  /healthz
  void Metrics(Request&& req, Reply reply);  // GET  /metrics
  // Queues (http_api_queues.cc).
  void ListQueues(Request&& req, Reply reply);                           // GET  /v1/queues
  void CreateQueue(Request&& req, Reply reply);                          // POST /v1/queues (admins)
  void PutQueue(Request&& req, Reply reply);                             // PUT  /v1/queues/{name} (admins)
  void DeleteQueue(Request&& req, Reply reply);                          // DELETE /v1/queues/{name} (admins)
  void ListNodes(const Request& req, Response& res);                     // GET  /v1/nodes
  void CordonNode(const std::string& verb, Request&& req, Reply reply);  // POST /v1/nodes/{name}/cordon|uncordon|drain
  void ReclaimNode(Request&& req, Reply reply);           // POST /v1/nodes/{name}/reclaim {"deadlineSeconds": 120}
  void DeclareNodeLost(Request&& req, Reply reply);       // POST /v1/nodes/{name}/declare-lost
  void RemoveNode(Request&& req, Reply reply);            // DELETE /v1/nodes/{name}
  void ClusterEvents(const Request& req, Response& res);  // GET  /v1/events
  void Usage(const Request& req, Response& res);          // GET  /v1/usage (http_api_usage.cc)
  // A sync that waits for news holds no thread.
  void AgentSync(Request&& req, Reply reply);  // POST /v1/agent/sync

  // Identity (http_api_auth.cc).
  // Authenticates the request and decides which routes its credential may
  // reach; true when it answered (401, 403, or 429 for an agent's sync that
  // is not an agent's).
  bool Authenticate(Request& req, Response& res);
  // The client address's rate limit; false when it answered 429.
  // Charges one request to `principal`'s budget (empty: the budget of
  // unauthenticated requests from its address); false, with a 429 in `res`,
  // when it is spent.
  bool RateAllows(const std::string& principal, const Request& req, Response& res);
  void CreateToken(Request&& req, Reply reply);        // POST   /v1/tokens
  void ListTokens(const Request& req, Response& res);  // GET    /v1/tokens
  void RevokeToken(Request&& req, Reply reply);        // DELETE /v1/tokens/{id}
  void ListAudit(const Request& req, Response& res);   // GET    /v1/audit
  void WhoAmI(Request&& req, Reply reply);             // GET    /v1/whoami
  // Container images: registry logins and pre-pulls (http_api_images.cc).
  void PutRegistryCredential(Request&& req, Reply reply);           // POST   /v1/registry-credentials
  void ListRegistryCredentials(const Request& req, Response& res);  // GET    /v1/registry-credentials
  void RemoveRegistryCredential(Request&& req, Reply reply);        // DELETE /v1/registry-credentials
  void PullImage(Request&& req, Reply reply);                       // POST   /v1/images/pull
  void ListImagePulls(const Request& req, Response& res);           // GET    /v1/images
  StatusOr<std::pair<std::string, std::string>> CredentialOwner(const Identity& who, const std::string& queue,
                                                                const std::string& user);
  // `done`, once `row` (with the call's outcome) is durable in the audit log.
  template <typename T>
  std::function<void(StatusOr<T>)> Audited(store::AuditRow row, std::function<void(StatusOr<T>)> done) {
    return [this, row, done](StatusOr<T> result) mutable {
      row.outcome = OutcomeOf(result.status());
      if (!result.ok()) row.detail = result.status().message().substr(0, 512);
      store::WriteBatch b;
      b.audit.push_back(row);
      loop_.Record(std::move(b), [done, result](const Status&) mutable { done(std::move(result)); });
    };
  }
  // Records a refusal found before the loop, then answers it.
  void RefuseAudited(const Reply& reply, store::AuditRow row, const Status& s);

  class RateLimiter;

  const ServerOptions& options_;
  const Clock& clock_;
  ControlLoop& loop_;
  store::Store& store_;
  const Leadership& leadership_;
  Authenticator& authn_;
  ServerMetrics& metrics_;
  std::unique_ptr<log::LineFile> access_log_;
  const Authorizer authz_;
  // Unauthenticated requests refused since the last one said on stderr
  // (at most one line a second). Event-loop thread only.
  int64_t auth_failures_ = 0;
  int64_t auth_failure_said_ms_ = 0;
  std::unique_ptr<http::Server> http_;
  std::unique_ptr<RateLimiter> limiter_;            // by principal
  std::unique_ptr<RateLimiter> anonymous_limiter_;  // by address, without a valid credential
  // Log fetches in flight: each holds a worker while its agent answers, so
  // they may take only a quarter of the workers (an agent that never
  // answers must not stall every list and view).
  std::atomic<int> log_fetches_{0};
  int port_ = 0;
};

}  // namespace muster::server
