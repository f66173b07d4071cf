#include "server/job_json.h"

#include <algorithm>

#include "api/rfc3339.h"

namespace muster::server {

std::string JobJsonText(const store::JobRow& row) {
  nlohmann::json status = {{"id", row.id},
                           {"user", row.user},
                           {"state", row.state},
                           {"reason", row.reason},
                           {"submitTime", api::FormatRfc3339Utc(Time::FromMillis(row.submit_ms))},
                           {"attempts", row.attempts}};
  if (row.start_ms) status["startTime"] = api::FormatRfc3339Utc(Time::FromMillis(*row.start_ms));
  if (row.end_ms) status["endTime"] = api::FormatRfc3339Utc(Time::FromMillis(*row.end_ms));
  const nlohmann::json detail = nlohmann::json::parse(row.status_json, nullptr, false);
  if (detail.is_object()) {
    if (detail.contains("allocations")) status["allocations"] = detail["allocations"];
    if (detail.contains("idempotencyKey")) status["idempotencyKey"] = detail["idempotencyKey"];
    if (detail.contains("arrayFirstId")) status["arrayFirstId"] = detail["arrayFirstId"];
    if (detail.contains("arrayIndex")) status["arrayIndex"] = detail["arrayIndex"];
    if (detail.contains("retries")) status["retries"] = detail["retries"];
    if (detail.contains("attempt") && detail["attempt"].is_object()) {
      const nlohmann::json& a = detail["attempt"];
      if (a.contains("resumedFrom")) status["resumedFrom"] = a["resumedFrom"];
      if (a.contains("progress") && a["progress"].is_object()) {
        nlohmann::json p = a["progress"];
        if (p.contains("timeMs") && p["timeMs"].is_number_integer()) {
          p["time"] = api::FormatRfc3339Utc(Time::FromMillis(p["timeMs"].get<int64_t>()));
          p.erase("timeMs");
        }
        status["progress"] = p;
      }
    }
    if (detail.contains("requeues")) status["requeues"] = detail["requeues"];
    if (detail.contains("notBeforeMs") && detail["notBeforeMs"].is_number_integer() && row.state == "PENDING") {
      status["notBefore"] = api::FormatRfc3339Utc(Time::FromMillis(detail["notBeforeMs"].get<int64_t>()));
    }
    if (detail.contains("attemptHistory") && detail["attemptHistory"].is_array()) {
      nlohmann::json history = detail["attemptHistory"];
      for (nlohmann::json& a : history) {
        for (const char* k : {"startTime", "endTime"}) {
          if (a.contains(k) && a[k].is_number_integer()) a[k] = api::FormatRfc3339Utc(Time::FromMillis(a[k].get<int64_t>()));
        }
      }
      status["attemptHistory"] = history;
    }
  }
  std::string out = status.dump();
  // The stored spec is a canonical JSON object: splice its members in front.
  const size_t open = row.spec_json.find('{');
  const size_t close = row.spec_json.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close <= open) return out;
  std::string members = row.spec_json.substr(open + 1, close - open - 1);
  if (members.find_first_not_of(" \t\r\n") == std::string::npos) return out;
  return "{" + members + "," + out.substr(1);
}

namespace {

// `s` as a JSON string. Names, states and reasons are plain ASCII; anything
// else goes through the JSON library (escapes, invalid UTF-8 replaced).
void AppendString(std::string_view s, std::string& out) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  });
  if (!plain) {
    out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

void AppendMember(const char* key, std::string_view value, std::string& out) {
  out += ",\"";
  out += key;
  out += "\":";
  AppendString(value, out);
}

}  // namespace

void AppendSummaryJson(const store::JobSummary& j, std::string& out) {
  out += "{\"id\":";
  out += std::to_string(j.id);
  AppendMember("name", j.name, out);
  AppendMember("user", j.user, out);
  AppendMember("queue", j.queue, out);
  AppendMember("priority", j.priority_class, out);
  AppendMember("state", j.state, out);
  AppendMember("reason", j.reason, out);
  AppendMember("submitTime", api::FormatRfc3339Utc(Time::FromMillis(j.submit_ms)), out);
  if (j.start_ms) AppendMember("startTime", api::FormatRfc3339Utc(Time::FromMillis(*j.start_ms)), out);
  if (j.end_ms) AppendMember("endTime", api::FormatRfc3339Utc(Time::FromMillis(*j.end_ms)), out);
  out += ",\"gpus\":";
  out += std::to_string(j.gpus);
  out += ",\"replicas\":";
  out += std::to_string(j.replicas);
  out += ",\"nodes\":[";
  for (size_t i = 0; i < j.nodes.size(); ++i) {
    if (i) out += ',';
    AppendString(j.nodes[i], out);
  }
  out += "]}";
}

nlohmann::json JobJson(const store::JobRow& row) {
  nlohmann::json j = nlohmann::json::parse(JobJsonText(row), nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

nlohmann::json EventJson(const store::EventRow& e) {
  return {{"seq", e.seq},
          {"time", api::FormatRfc3339Utc(Time::FromMillis(e.time_ms))},
          {"type", e.type},
          {"reason", e.reason},
          {"message", e.message}};
}

}  // namespace muster::server
