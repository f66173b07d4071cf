// HttpApi: queues, listed for everyone and made, changed and deleted
// through the API by admins (server/api_queues.h).
#include <nlohmann/json.hpp>

#include "common/message_text.h"
#include "server/http_api.h"
#include "server/http_api_util.h"

namespace muster::server {

using nlohmann::json;

namespace {

json QueueViewJson(const ControlLoop::QueueView& q) {
  json item = {{"name", q.name},
               {"pending", q.pending},
               {"running", q.running},
               {"gpusInUse", q.gpus_in_use},
               {"gpusInUseByType", q.in_use_by_type}};
  if (!q.guarantee.empty()) item["guarantee"] = q.guarantee;
  if (!q.limit.empty()) item["limit"] = q.limit;
  if (!q.parent.empty()) item["parent"] = q.parent;
  if (q.share) item["share"] = *q.share;
  if (!q.source.empty()) item["source"] = q.source;
  if (!q.changed_by.empty()) item["changedBy"] = q.changed_by;
  return item;
}

}  // namespace

void HttpApi::ListQueues(Request&&, Reply reply) {
  using Q = std::vector<ControlLoop::QueueView>;
  loop_.Queues(Answer<Q>(reply, [](http::Response& res, const Q& queues) {
    json items = json::array();
    for (const auto& q : queues) items.push_back(QueueViewJson(q));
    ReplyJson(res, 200, {{"items", items}});
  }));
}

void HttpApi::CreateQueue(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  auto body = BodyObject(req, {"name", "parent", "guarantee", "limit", "share"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  const std::string name = (*body).value("name", json()).is_string() ? (*body)["name"].get<std::string>() : "";
  store::AuditRow audit = AuditOf(who, "queue.create", "queue/" + name.substr(0, 128));
  if (Status s = authz_.MustBeAdmin(who, "create queues"); !s.ok()) return RefuseAudited(reply, audit, s);
  loop_.PutQueue(std::move(*body), "", who, std::move(audit),
                 Answer<ControlLoop::QueueView>(reply, [](http::Response& res, const ControlLoop::QueueView& q) {
                   ReplyJson(res, 201, QueueViewJson(q));
                 }));
}

void HttpApi::PutQueue(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  const std::string name = req.captures[0];
  auto body = BodyObject(req, {"name", "parent", "guarantee", "limit", "share"});
  if (!body.ok()) return ReplyNow(reply, body.status());
  store::AuditRow audit = AuditOf(who, "queue.put", "queue/" + name.substr(0, 128));
  if (Status s = authz_.MustBeAdmin(who, "change queues"); !s.ok()) return RefuseAudited(reply, audit, s);
  loop_.PutQueue(std::move(*body), name, who, std::move(audit),
                 Answer<ControlLoop::QueueView>(reply, [](http::Response& res, const ControlLoop::QueueView& q) {
                   ReplyJson(res, 200, QueueViewJson(q));
                 }));
}

void HttpApi::DeleteQueue(Request&& req, Reply reply) {
  const Identity& who = Caller(req);
  const std::string name = req.captures[0];
  store::AuditRow audit = AuditOf(who, "queue.delete", "queue/" + name.substr(0, 128));
  if (Status s = authz_.MustBeAdmin(who, "delete queues"); !s.ok()) return RefuseAudited(reply, audit, s);
  loop_.DeleteQueue(name, std::move(audit), Answer<bool>(reply, [name](http::Response& res, bool existed) {
                      if (!existed)
                        return ReplyStatus(res,
                                           NotFound("no queue " + QuoteForMessage(name) + " made through the API"));
                      ReplyJson(res, 200, {{"name", name}, {"deleted", true}});
                    }));
}

}  // namespace muster::server
