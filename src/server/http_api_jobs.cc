// HttpApi: the job endpoints (the route table is HttpApi::Routes).
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "auth/grants.h"
#include "checkpoint/manifest.h"
#include "common/message_text.h"
#include "common/rfc3339.h"
#include "common/signal_name.h"
#include "http/client.h"
#include "proto/agent_protocol.h"
#include "server/http_api.h"
#include "server/http_api_util.h"
#include "server/job_json.h"

namespace muster::server {

using nlohmann::json;

// Submits are answered from the store writer once durable, without
// holding a thread.
void HttpApi::SubmitJob(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
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
  const bool json_body =
      api::IsJsonMediaType(type) || (type.empty() && first != std::string::npos && req.body[first] == '{');
  if (!json_body && req.body.size() > kMaxYamlBytes) {
    http::Response res;
    ReplyError(res, 413, "PayloadTooLarge",
               "YAML bodies are limited to " + std::to_string(kMaxYamlBytes) + " bytes; send JSON");
    return reply(std::move(res));
  }
  auto spec = api::ParseJobSpec(req.body, type, loop_.settings().Get()->spec_defaults);
  if (!spec.ok()) return ReplyNow(reply, spec.status());
  // The job runs as whoever submits it: nothing in the spec names its user.
  store::AuditRow audit = AuditOf(who, "submit", "queue/" + spec->queue);
  for (Status st : {authz_.MaySubmit(who, spec->queue), authz_.MayRunAsRoot(who.effective_user())}) {
    if (!st.ok()) return RefuseAudited(reply, audit, st);
  }
  const bool is_array = spec->array > 0;
  ControlLoop::SubmitRequest sr;
  sr.spec_json = api::JobSpecToJson(*spec);
  sr.fingerprint = checkpoint::Sha256Hex(sr.spec_json);
  sr.spec = std::move(*spec);
  sr.user = who.effective_user();
  sr.idempotency_key = *key;
  sr.audit = std::move(audit);
  sr.may_see = [this, who](const store::JobRow& row) {
    return authz_.MayManageJob(who, row.user, row.queue, "see").ok();
  };
  using R = ControlLoop::SubmitResult;
  const auto began = std::chrono::steady_clock::now();
  loop_.Submit(
      std::move(sr), Answer<R>(reply, [this, is_array, began](http::Response& out, const R& result) {
        metrics_.ObserveSubmit(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
        out.headers.emplace_back("Location", "/v1/jobs/" + std::to_string(result.job.id));
        if (!is_array) return out.Set(result.created ? 201 : 200, JobJsonText(result.job), "application/json");
        // An array: the answer is its first task, with the range of ids.
        json body = JobJson(result.job);
        body["arrayFirstId"] = result.job.id;
        body["arrayLastId"] = result.job.id + result.count - 1;
        ReplyJson(out, result.created ? 201 : 200, body);
      }));
}

StatusOr<store::JobFilter> HttpApi::VisibleJobFilter(const Request& req) const {
  store::JobFilter f;
  if (req.HasParam("state")) {
    std::string states = req.Param("state");
    size_t start = 0;
    while (start <= states.size()) {
      const size_t comma = std::min(states.find(',', start), states.size());
      std::string st = states.substr(start, comma - start);
      for (char& c : st) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (!core::JobStateFromName(st)) {
        return InvalidArgument(
            "unknown state \"" + st.substr(0, 32) + "\" (PENDING, HELD, RUNNING, COMPLETED, FAILED, CANCELLED, ...)",
            "query.state");
      }
      f.states.push_back(st);
      start = comma + 1;
    }
  }
  f.queue = req.Param("queue");
  f.user = req.Param("user");
  f.name = req.Param("name");
  if (req.HasParam("labelSelector")) {
    ASSIGN_OR_RETURN(f.labels, store::ParseLabelSelector(req.Param("labelSelector"), "query.labelSelector"));
  }
  // Users list their own jobs, queue admins their queue's; operators and
  // admins every job.
  const std::string& me = Caller(req).effective_user();
  if (!authz_.IsOperator(me) && !(!f.queue.empty() && authz_.IsQueueAdmin(me, f.queue))) {
    if (!f.user.empty() && f.user != me) {
      return PermissionDenied(me + " may list only their own jobs (or, as a queue's admin, its jobs with queue=)");
    }
    f.user = me;
  }
  return f;
}

void HttpApi::ListOrWatchJobs(Request&& req, Reply reply) {
  if (IsWatch(req)) return WatchJobs(req, reply);
  if (const std::string& w = req.Param("watch"); req.HasParam("watch") && w != "false" && w != "0") {
    return ReplyNow(reply, InvalidArgument("must be true or false, got " + QuoteForMessage(w), "query.watch"));
  }
  Response res;
  ListJobs(req, res);
  reply(std::move(res));
}

void HttpApi::WatchJobs(const Request& req, const Reply& reply) {
  if (Status q = CheckQuery(req, {"watch", "resourceVersion", "state", "queue", "user", "name", "labelSelector"});
      !q.ok()) {
    return ReplyNow(reply, q);
  }
  auto filter = VisibleJobFilter(req);
  if (!filter.ok()) return ReplyNow(reply, filter.status());
  const Status watching = loop_.watch().Watch(*filter, req.Param("resourceVersion"), [&] {
    Response head;
    head.status = 200;
    head.content_type = "application/x-ndjson";
    head.headers.emplace_back("Cache-Control", "no-store");
    return reply.Start(std::move(head));
  });
  if (watching.code() == StatusCode::kOutOfRange) {
    Response res;
    ReplyError(res, 410, "Expired", watching.field() + ": " + watching.message(), watching.field());
    return reply(std::move(res));
  }
  if (!watching.ok()) return ReplyNow(reply, watching);
}

void HttpApi::ListJobs(const Request& req, Response& res) {
  if (Status q = CheckQuery(
          req, {"watch", "state", "queue", "user", "name", "labelSelector", "limit", "continue", "view", "order"});
      !q.ok()) {
    return ReplyStatus(res, q);
  }
  const std::string& order = req.Param("order");
  if (!order.empty() && order != "oldest" && order != "newest") {
    return ReplyStatus(res, InvalidArgument("must be oldest or newest, got " + QuoteForMessage(order), "query.order"));
  }
  const std::string& view = req.Param("view");
  if (!view.empty() && view != "full" && view != "summary") {
    return ReplyStatus(res, InvalidArgument("must be full or summary, got " + QuoteForMessage(view), "query.view"));
  }
  auto filter = VisibleJobFilter(req);
  if (!filter.ok()) return ReplyStatus(res, filter.status());
  filter->newest_first = order == "newest";
  const store::JobFilter& f = *filter;
  int64_t limit = 100, after = 0;
  if (Status st = IntParam(req, "limit", limit, 1, 1000); !st.ok()) return ReplyStatus(res, st);
  // An empty token is the first page (the last page's answer carries "").
  if (!req.Param("continue").empty()) {
    if (Status st = IntParam(req, "continue", after, 0, INT64_MAX); !st.ok()) return ReplyStatus(res, st);
  }
  // Every change up to this version is in the store read below: a watch
  // from it misses nothing.
  const std::string version = loop_.watch().ListVersion();
  // Written as text: each job is its stored spec plus status fields, or its summary.
  std::string body = "{\"resourceVersion\":\"" + version + "\",\"items\":[";
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
}

void HttpApi::GetJob(Request&& req, Reply reply) {
  auto id = PathId(req);
  if (!id.ok()) return ReplyNow(reply, id.status());
  using E = ControlLoop::Explanation;
  loop_.Explain(*id, Answer<E>(reply, [this, who = Caller(req)](http::Response& res, const E& e) {
    // A job's own token reads that job (the route allows no other), for a
    // while after it ends.
    const bool own = who.kind == Identity::Kind::kJob;
    if (Status may = own ? authz_.MayJobTokenRead(who, e.job, clock_.Now().millis())
                         : authz_.MayManageJob(who, e.job.user, e.job.queue, "see");
        !may.ok()) {
      return ReplyStatus(res, may);
    }
    json j = JobJson(e.job);
    if (!e.reason_text.empty()) j["reasonDetail"] = e.reason_text;
    if (e.reason && !e.reason->planned_start.is_max()) {
      j["plannedStart"] = FormatRfc3339Utc(e.reason->planned_start);
    }
    if (e.priority) {
      j["priorityBreakdown"] = {{"class", e.priority->class_points},
                                {"age", e.priority->age_points},
                                {"fairShare", e.priority->fairshare_points},
                                {"size", e.priority->size_points},
                                {"total", e.priority->total()}};
    }
    if (e.attained_gpu_seconds) {
      j["service"] = {{"gpuHours", static_cast<double>(*e.attained_gpu_seconds) / 3600.0},
                      {"queuedSeconds", e.queued.millis() / 1000}};
    }
    ReplyJson(res, 200, j);
  }));
}

void HttpApi::JobEvents(const Request& req, Response& res) {
  auto job = VisibleJob(req, store_, authz_, clock_.Now().millis());
  if (!job.ok()) return ReplyStatus(res, job.status());
  EventsPage(req, store_, job->id, res);
}

void HttpApi::ActOnJob(ControlLoop::Action action, Request&& req, Reply reply) {
  auto id = PathId(req);
  if (!id.ok()) return ReplyNow(reply, id.status());
  const Identity& who = Caller(req);
  using R = store::JobRow;
  loop_.Act(*id, action, who,
            Audited<R>(AuditOf(who, ControlLoop::ActionName(action), "job/" + std::to_string(*id)),
                       Answer<R>(reply, [](http::Response& res, const R& row) { ReplyJson(res, 200, JobJson(row)); })));
}

void HttpApi::SignalJob(Request&& req, Reply reply) {
  auto id = PathId(req);
  if (!id.ok()) return ReplyNow(reply, id.status());
  auto body = BodyObject(req, {"signal", "to"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  std::string name, to_name;
  for (Status st : {BodyString(*body, "signal", name, 16, true), BodyString(*body, "to", to_name, 16, false)}) {
    if (!st.ok()) return ReplyNow(reply, st);
  }
  const std::optional<int> signal = SignalNumber(name);
  if (!signal) {
    return ReplyNow(reply, InvalidArgument("must be a signal name (USR1, SIGTERM, ...) or number from 1 to 64, got " +
                                               QuoteForMessage(name),
                                           "signal"));
  }
  std::optional<api::SignalTarget> to;
  if (!to_name.empty()) {
    to = api::SignalTargetFromName(to_name);
    if (!to)
      return ReplyNow(reply, InvalidArgument("must be all, batch or steps, got " + QuoteForMessage(to_name), "to"));
  }
  const Identity& who = Caller(req);
  using A = ControlLoop::SignalAnswer;
  loop_.SignalJob(*id, *signal, to, who,
                  Audited<A>(AuditOf(who, "signal", "job/" + std::to_string(*id)),
                             Answer<A>(reply, [id = *id, signal = *signal](http::Response& res, const A& a) {
                               ReplyJson(res, 202,
                                         {{"job", id},
                                          {"attempt", a.attempt},
                                          {"signal", SignalName(signal)},
                                          {"to", api::SignalTargetName(a.to)},
                                          {"nodes", a.nodes}});
                             })));
}

void HttpApi::CommitCheckpoint(Request&& req, Reply reply) {
  auto id = PathId(req);
  if (!id.ok()) return ReplyNow(reply, id.status());
  const Identity& who = Caller(req);
  auto body = BodyObject(req, {"attempt", "step", "location", "manifestSha256", "files", "bytes"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  CheckpointCatalog::Commit c;
  c.job = *id;
  for (Status st : {BodyInt(*body, "attempt", c.attempt, 1, kMaxAttempt), BodyInt(*body, "step", c.step, 0, kMaxInt),
                    BodyString(*body, "location", c.location, 4096, true),
                    BodyString(*body, "manifestSha256", c.manifest_sha256, 64, true),
                    BodyInt(*body, "files", c.files, 1, kMaxInt), BodyInt(*body, "bytes", c.bytes, 0, kMaxInt)}) {
    if (!st.ok()) return ReplyNow(reply, st);
  }
  if (!checkpoint::IsSha256Hex(c.manifest_sha256)) {
    return ReplyNow(reply, InvalidArgument("must be 64 lower-case hex digits", "manifestSha256"));
  }
  if (who.kind == Identity::Kind::kJob && who.attempt != c.attempt) {
    return ReplyNow(reply, PermissionDenied("this job token is for attempt " + std::to_string(who.attempt)));
  }
  loop_.CommitCheckpoint(std::move(c), who,
                         Answer<store::CheckpointRow>(reply, [](http::Response& res, const store::CheckpointRow& row) {
                           ReplyJson(res, 201, CheckpointJson(row));
                         }));
}

void HttpApi::ListCheckpoints(const Request& req, Response& res) {
  auto job = VisibleJob(req, store_, authz_, clock_.Now().millis());
  if (!job.ok()) return ReplyStatus(res, job.status());
  auto rows = store_.ListCheckpoints(job->id);
  if (!rows.ok()) return ReplyStatus(res, rows.status());
  json items = json::array();
  for (const store::CheckpointRow& c : *rows) items.push_back(CheckpointJson(c));
  ReplyJson(res, 200, {{"items", items}});
}

void HttpApi::ReportProgress(Request&& req, Reply reply) {
  auto id = PathId(req);
  if (!id.ok()) return ReplyNow(reply, id.status());
  auto body = BodyObject(req, {"attempt", "replica", "step", "metrics", "message", "endpoints"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  ControlLoop::ProgressReport p;
  p.job = *id;
  p.who = Caller(req);
  int64_t step = -1, replica = -1;
  for (Status st : {BodyInt(*body, "attempt", p.attempt, 1, kMaxAttempt),
                    BodyInt(*body, "replica", replica, 0, 4095, /*optional=*/true),
                    BodyInt(*body, "step", step, 0, kMaxInt, /*optional=*/true),
                    BodyString(*body, "message", p.message, 1024, false)}) {
    if (!st.ok()) return ReplyNow(reply, st);
  }
  if (step >= 0) p.step = step;
  if (replica >= 0) p.replica = static_cast<int32_t>(replica);
  if (p.who.kind == Identity::Kind::kJob && p.who.attempt != p.attempt) {
    return ReplyNow(reply, PermissionDenied("this job token is for attempt " + std::to_string(p.who.attempt)));
  }
  if (body->contains("metrics") && !(*body)["metrics"].is_null()) {
    const json& m = (*body)["metrics"];
    if (!m.is_object() || m.size() > 64)
      return ReplyNow(reply, InvalidArgument("must be an object of at most 64 numbers", "metrics"));
    for (const auto& [k, v] : m.items()) {
      if (!ValidName(k, 64))
        return ReplyNow(reply,
                        InvalidArgument("names must be 1 to 64 of [A-Za-z0-9._-]", "metrics." + k.substr(0, 64)));
      if (!v.is_number()) return ReplyNow(reply, InvalidArgument("must be a number", "metrics." + k));
    }
    p.metrics = m;
  }
  if (body->contains("endpoints") && !(*body)["endpoints"].is_null()) {
    const json& e = (*body)["endpoints"];
    if (!e.is_object() || e.size() > 16) {
      return ReplyNow(reply, InvalidArgument("must be an object of at most 16 \"host:port\" strings", "endpoints"));
    }
    for (const auto& [k, v] : e.items()) {
      if (!ValidName(k, 64))
        return ReplyNow(reply,
                        InvalidArgument("names must be 1 to 64 of [A-Za-z0-9._-]", "endpoints." + k.substr(0, 64)));
      if (!v.is_string() || !ValidEndpoint(v.get<std::string>())) {
        return ReplyNow(
            reply, InvalidArgument("must be \"host:port\" (at most 255 characters, port 1..65535)", "endpoints." + k));
      }
    }
    p.endpoints = e;
  }
  using A = ControlLoop::ProgressAnswer;
  loop_.ReportProgress(std::move(p), Answer<A>(reply, [](http::Response& res, const A& a) {
                         ReplyJson(res, 200, {{"attempt", a.attempt}, {"checkpointRequested", a.checkpoint_requested}});
                       }));
}

void HttpApi::JobLogs(const Request& req, Response& res) {
  auto job = VisibleJob(req, store_, authz_, clock_.Now().millis());
  if (!job.ok()) return ReplyStatus(res, job.status());
  if (Status may = authz_.MayReadLogs(Caller(req), job->user, job->queue); !may.ok()) return ReplyStatus(res, may);
  const int64_t* id = &job->id;
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
  // TLS to the key the agent reported over its own authenticated sync.
  o.tls.pin = where->log_tls_pin;
  http::Client agent(where->address, where->log_port, o, /*tls=*/!where->log_tls_pin.empty());
  const std::string task = proto::TaskKey(*id, where->attempt, static_cast<int32_t>(replica));
  std::string path = "/logs/" + task + "?";
  if (offset >= 0) path += "offset=" + std::to_string(offset) + "&";
  if (tail >= 0) path += "tail=" + std::to_string(tail);
  // The agent serves a log only with the server's grant for that task,
  // signed with the node's key (auth/grants.h).
  const std::string key = authn_.NodeKey(where->node);
  if (key.empty()) {
    return ReplyStatus(
        res, Status(StatusCode::kUnavailable,
                    "the agent of node " + where->node + " has not synced with this server yet; retry shortly"));
  }
  const std::string grant = auth::SignLogGrant(key, task, clock_.Now().millis() + 60'000);
  auto r = agent.Get(path, {{"X-Muster-Grant", grant}});
  if (!r.ok()) {
    return ReplyStatus(
        res, Status(StatusCode::kUnavailable, "the agent of node " + where->node + " does not answer for logs (" +
                                                  r.status().message() + ")" + where->Elsewhere()));
  }
  if (r->status != 200) {
    return ReplyError(
        res, r->status == 404 ? 404 : 502, r->status == 404 ? "NotFound" : "BadGateway",
        "node " + where->node + ": no log for replica " + std::to_string(replica) + " of job " + std::to_string(*id) +
            (r->status == 404 ? "" : " (agent answered " + std::to_string(r->status) + ")") + where->Elsewhere());
  }
  res.headers.emplace_back("X-Muster-Log-Offset", std::string(r->Header("X-Muster-Log-Offset")));
  res.headers.emplace_back("X-Muster-Node", where->node);
  res.headers.emplace_back("X-Muster-Log-Attempt", std::to_string(where->attempt));
  res.Set(200, std::move(r->body), "text/plain; charset=utf-8");
}

}  // namespace muster::server
