#include "server/job_json.h"

#include <algorithm>

#include "api/json_writer.h"
#include "api/rfc3339.h"

namespace muster::server {

std::string JobJsonText(const store::JobRow& row) {
  // The stored status detail (allocations, attempts, retries ...): absent
  // on a fresh job, so most of a submit's answer needs no JSON tree.
  nlohmann::json detail;
  if (row.status_json.size() > 2) detail = nlohmann::json::parse(row.status_json, nullptr, false);
  if (!detail.is_object()) detail = nlohmann::json::object();
  const auto raw = [&detail](const char* key) -> const nlohmann::json* {
    auto it = detail.find(key);
    return it == detail.end() ? nullptr : &*it;
  };
  const auto dump = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  const auto time_text = [](int64_t ms) { return api::FormatRfc3339Utc(Time::FromMillis(ms)); };

  std::string out;
  out.reserve(row.spec_json.size() + 256);
  api::JsonWriter w(out);
  w.BeginObject();
  // The stored spec is a canonical JSON object: its members go first, then
  // the status, its keys in alphabetical order.
  const size_t open = row.spec_json.find('{');
  const size_t close = row.spec_json.rfind('}');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    const std::string_view members = std::string_view(row.spec_json).substr(open + 1, close - open - 1);
    if (members.find_first_not_of(" \t\r\n") != std::string_view::npos) w.Raw(members);
  }
  const auto copy = [&](const char* key) {
    if (const nlohmann::json* v = raw(key)) w.Key(key).Raw(dump(*v));
  };
  copy("allocations");
  copy("arrayFirstId");
  copy("arrayIndex");
  if (const nlohmann::json* h = raw("attemptHistory"); h && h->is_array()) {
    nlohmann::json history = *h;
    for (nlohmann::json& a : history) {
      for (const char* k : {"startTime", "endTime"}) {
        if (a.is_object() && a.contains(k) && a[k].is_number_integer()) a[k] = time_text(a[k].get<int64_t>());
      }
    }
    w.Key("attemptHistory").Raw(dump(history));
  }
  w.Key("attempts").Int(row.attempts);
  if (row.end_ms) w.Key("endTime").String(time_text(*row.end_ms));
  w.Key("id").Int(row.id);
  copy("idempotencyKey");
  if (const nlohmann::json* nb = raw("notBeforeMs"); nb && nb->is_number_integer() && row.state == "PENDING") {
    w.Key("notBefore").String(time_text(nb->get<int64_t>()));
  }
  const nlohmann::json* attempt = raw("attempt");
  if (attempt && !attempt->is_object()) attempt = nullptr;
  if (attempt && attempt->contains("progress") && (*attempt)["progress"].is_object()) {
    nlohmann::json p = (*attempt)["progress"];
    if (p.contains("timeMs") && p["timeMs"].is_number_integer()) {
      p["time"] = time_text(p["timeMs"].get<int64_t>());
      p.erase("timeMs");
    }
    w.Key("progress").Raw(dump(p));
  }
  w.Key("reason").String(row.reason);
  copy("requeues");
  if (attempt && attempt->contains("resumedFrom")) w.Key("resumedFrom").Raw(dump((*attempt)["resumedFrom"]));
  copy("retries");
  if (row.start_ms) w.Key("startTime").String(time_text(*row.start_ms));
  w.Key("state").String(row.state);
  w.Key("submitTime").String(time_text(row.submit_ms));
  w.Key("user").String(row.user).EndObject();
  return out;
}

namespace {

void AppendMember(const char* key, std::string_view value, std::string& out) {
  out += ",\"";
  out += key;
  out += "\":";
  api::AppendJsonString(value, out);
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
    api::AppendJsonString(j.nodes[i], out);
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
