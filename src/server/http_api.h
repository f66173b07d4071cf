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
// Identity: until authentication lands (the security issue), the caller
// names itself in the X-Muster-User header ([A-Za-z0-9._-], 1..64 chars;
// "anonymous" when absent). Owners manage their jobs; admins all jobs.
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
#include "common/status.h"
#include "http/server.h"
#include "server/control_loop.h"
#include "server/leadership.h"
#include "server/options.h"
#include "store/store.h"

namespace muster::server {

class HttpApi {
 public:
  // Every request but GET /healthz is answered only while `leadership`
  // leads; a standby points to the leader (503 NotLeader with its address).
  HttpApi(const ServerOptions& options, const Clock& clock, ControlLoop& loop, store::Store& store,
          const Leadership& leadership);
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
  void SubmitJob(Request&& req, Reply reply);                 // POST /v1/jobs
  void ListJobs(const Request& req, Response& res);           // GET  /v1/jobs
  void GetJob(Request&& req, Reply reply);                    // GET  /v1/jobs/{id}
  void JobEvents(const Request& req, Response& res);          // GET  /v1/jobs/{id}/events
  void ActOnJob(ControlLoop::Action action, Request&& req, Reply reply);  // POST /v1/jobs/{id}/cancel|hold|release|requeue
  void CommitCheckpoint(Request&& req, Reply reply);          // POST /v1/jobs/{id}/checkpoints
  void ListCheckpoints(const Request& req, Response& res);    // GET  /v1/jobs/{id}/checkpoints
  void ReportProgress(Request&& req, Reply reply);            // POST /v1/jobs/{id}/progress
  void JobLogs(const Request& req, Response& res);            // GET  /v1/jobs/{id}/logs

  // The cluster (http_api_cluster.cc).
  void Health(Request&& req, Reply reply);                    // GET  /healthz
  void ListQueues(Request&& req, Reply reply);                // GET  /v1/queues
  void ListNodes(const Request& req, Response& res);          // GET  /v1/nodes
  void CordonNode(const std::string& verb, Request&& req, Reply reply);  // POST /v1/nodes/{name}/cordon|uncordon|drain
  void DeclareNodeLost(Request&& req, Reply reply);           // POST /v1/nodes/{name}/declare-lost
  void RemoveNode(Request&& req, Reply reply);                // DELETE /v1/nodes/{name}
  void ClusterEvents(const Request& req, Response& res);      // GET  /v1/events
  // A sync that waits for news holds no thread.
  void AgentSync(Request&& req, Reply reply);                 // POST /v1/agent/sync

  class RateLimiter;

  const ServerOptions& options_;
  const Clock& clock_;
  ControlLoop& loop_;
  store::Store& store_;
  const Leadership& leadership_;
  std::unique_ptr<http::Server> http_;
  std::unique_ptr<RateLimiter> limiter_;
  // Log fetches in flight: each holds a worker while its agent answers, so
  // they may take only a quarter of the workers (an agent that never
  // answers must not stall every list and view).
  std::atomic<int> log_fetches_{0};
  int port_ = 0;
};

}  // namespace muster::server
