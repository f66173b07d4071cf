#include "server/job_json.h"

#include "api/rfc3339.h"

namespace muster::server {

nlohmann::json JobJson(const store::JobRow& row) {
  nlohmann::json j = nlohmann::json::parse(row.spec_json, nullptr, false);
  if (!j.is_object()) j = nlohmann::json::object();
  j["id"] = row.id;
  j["user"] = row.user;
  j["state"] = row.state;
  j["reason"] = row.reason;
  j["submitTime"] = api::FormatRfc3339Utc(Time::FromMillis(row.submit_ms));
  if (row.start_ms) j["startTime"] = api::FormatRfc3339Utc(Time::FromMillis(*row.start_ms));
  if (row.end_ms) j["endTime"] = api::FormatRfc3339Utc(Time::FromMillis(*row.end_ms));
  j["attempts"] = row.attempts;
  const nlohmann::json status = nlohmann::json::parse(row.status_json, nullptr, false);
  if (status.is_object()) {
    if (status.contains("allocations")) j["allocations"] = status["allocations"];
    if (status.contains("idempotencyKey")) j["idempotencyKey"] = status["idempotencyKey"];
  }
  return j;
}

nlohmann::json EventJson(const store::EventRow& e) {
  return {{"seq", e.seq},
          {"time", api::FormatRfc3339Utc(Time::FromMillis(e.time_ms))},
          {"type", e.type},
          {"reason", e.reason},
          {"message", e.message}};
}

}  // namespace muster::server
