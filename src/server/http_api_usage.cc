// GET /v1/usage: GPU-hours, cost, jobs and efficiency over a window
// (server/usage_report.h), for what the caller may see.
//
//   ?from=RFC3339&to=RFC3339   the window (default: the last 30 days, to now)
//   &by=queue|user|queue,user|job   (default queue)
//   &state=&queue=&user=&name=      as GET /v1/jobs
//   &limit=N                        by job: only the N most recent jobs
//
//   {"from": ..., "to": ..., "by": "queue",
//    "items": [{"queue": "a", "jobs": 3, "gpuSeconds": ..., "gpuHours": ..., "cost": ..., "efficiency": 0.71}, ...],
//    "total": {...}}
// With by=job each item is one job, with its name, state, times, attempts
// and exit code (Slurm's sacct).
#include <nlohmann/json.hpp>

#include "common/message_text.h"
#include "common/rfc3339.h"
#include "server/http_api.h"
#include "server/usage_report.h"

namespace muster::server {

using nlohmann::json;

namespace {

constexpr int64_t kDefaultWindowMs = 30LL * 24 * 3600 * 1000;
constexpr int32_t kPage = 500;

StatusOr<int64_t> TimeParam(const http::Request& req, const char* name, int64_t fallback) {
  if (!req.HasParam(name)) return fallback;
  const std::optional<Time> t = ParseRfc3339Utc(req.Param(name));
  if (!t) {
    return InvalidArgument(
        "must be an RFC 3339 time such as 2026-11-01T00:00:00Z, got " + QuoteForMessage(req.Param(name)),
        std::string("query.") + name);
  }
  return t->millis();
}

json TotalsJson(const UsageTotals& t) {
  const std::optional<double> e = t.Efficiency();
  return {{"jobs", t.jobs},
          {"gpuSeconds", t.gpu_seconds},
          {"gpuHours", t.gpu_seconds / 3600},
          {"cost", t.cost},
          {"efficiency", e ? json(*e) : json()}};
}

std::string TimeOrNull(const std::optional<int64_t>& ms) { return ms ? FormatRfc3339Utc(Time::FromMillis(*ms)) : ""; }

}  // namespace

void HttpApi::Usage(const Request& req, Response& res) {
  if (Status q = CheckQuery(req, {"from", "to", "by", "state", "queue", "user", "name", "labelSelector", "limit"});
      !q.ok()) {
    return ReplyStatus(res, q);
  }
  const int64_t now = clock_.Now().millis();
  auto to = TimeParam(req, "to", now);
  if (!to.ok()) return ReplyStatus(res, to.status());
  auto from = TimeParam(req, "from", *to - kDefaultWindowMs);
  if (!from.ok()) return ReplyStatus(res, from.status());
  if (*from >= *to) return ReplyStatus(res, InvalidArgument("must be before to", "query.from"));
  auto by = ParseUsageGrouping(req.HasParam("by") ? req.Param("by") : "queue");
  if (!by.ok()) return ReplyStatus(res, InvalidArgument(by.status().message(), "query.by"));
  int64_t limit = 0;
  if (Status st = IntParam(req, "limit", limit, 1, 1'000'000); !st.ok()) return ReplyStatus(res, st);
  auto filter = VisibleJobFilter(req);
  if (!filter.ok()) return ReplyStatus(res, filter.status());
  filter->active_from_ms = *from;
  filter->submitted_before_ms = *to;

  UsageReport report(*from, *to, now, *by,
                     [settings = loop_.settings().Get()](const std::string& pool, const std::string& type) {
                       return settings->prices.PerGpuHour(pool, type);
                     });
  int64_t after = 0;
  do {
    auto page = store_.ListJobs(*filter, after, kPage);
    if (!page.ok()) return ReplyStatus(res, page.status());
    for (const store::JobRow& row : page->items) report.Add(row);
    after = page->next_after_id;
  } while (after != 0);

  std::vector<UsageLine> lines = report.Lines();
  if (limit > 0 && *by == UsageGrouping::kJob && lines.size() > static_cast<size_t>(limit)) {
    lines.erase(lines.begin(), lines.end() - limit);
  }
  json items = json::array();
  for (const UsageLine& line : lines) {
    json item = TotalsJson(line.totals);
    if (ByQueue(*by)) item["queue"] = line.queue;
    if (ByUser(*by)) item["user"] = line.user;
    if (*by == UsageGrouping::kPool) item["pool"] = line.pool;
    if (*by == UsageGrouping::kJob) {
      item.erase("jobs");
      item.update({{"id", line.job},
                   {"name", line.name},
                   {"state", line.state},
                   {"reason", line.reason},
                   {"submitTime", TimeOrNull(line.submit_ms)},
                   {"startTime", TimeOrNull(line.start_ms)},
                   {"endTime", TimeOrNull(line.end_ms)},
                   {"attempts", line.attempts}});
      if (line.exit_code) item.update({{"exitCode", *line.exit_code}, {"signal", line.exit_signal}});
    }
    items.push_back(std::move(item));
  }
  ReplyJson(res, 200,
            {{"from", FormatRfc3339Utc(Time::FromMillis(*from))},
             {"to", FormatRfc3339Utc(Time::FromMillis(*to))},
             {"by", UsageGroupingName(*by)},
             {"items", std::move(items)},
             {"total", TotalsJson(report.Total())}});
}

}  // namespace muster::server
