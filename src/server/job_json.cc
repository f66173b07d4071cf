#include "server/job_json.h"

#include <algorithm>

#include "api/json_writer.h"
#include "common/rfc3339.h"

namespace muster::server {
namespace {

std::string TimeText(int64_t ms) { return FormatRfc3339Utc(Time::FromMillis(ms)); }

}  // namespace

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
  std::string out;
  out.reserve(row.spec_json.size() + 256);
  api::JsonWriter w(out);
  w.BeginObject();
  // The stored spec is a canonical JSON object: its members go first, then
  // the status, its keys in alphabetical order.
  const size_t open = row.spec_json.find('{');
  const size_t close = row.spec_json.rfind('}');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    std::string_view members = std::string_view(row.spec_json).substr(open + 1, close - open - 1);
    // Secret variables are never shown: their values are masked (the slow
    // path, for specs that have them).
    std::string masked;
    if (members.find("\"secretEnv\"") != std::string_view::npos) {
      nlohmann::json spec = nlohmann::json::parse(row.spec_json, nullptr, false);
      if (spec.is_object() && spec.contains("secretEnv") && spec["secretEnv"].is_object()) {
        for (auto& [_, v] : spec["secretEnv"].items()) v = "(hidden)";
      }
      masked = api::JsonText(spec);
      members = std::string_view(masked).substr(1, masked.size() - 2);
    }
    if (members.find_first_not_of(" \t\r\n") != std::string_view::npos) w.Raw(members);
  }
  const auto copy = [&](const char* key) {
    if (const nlohmann::json* v = raw(key)) w.Key(key).Raw(api::JsonText(*v));
  };
  copy("allocations");
  copy("arrayFirstId");
  copy("arrayIndex");
  if (const nlohmann::json* h = raw("attemptHistory"); h && h->is_array()) {
    nlohmann::json history = *h;
    auto times = [](nlohmann::json& o) {
      for (const char* k : {"startTime", "endTime"}) {
        if (o.is_object() && o.contains(k) && o[k].is_number_integer()) o[k] = TimeText(o[k].get<int64_t>());
      }
    };
    for (nlohmann::json& a : history) {
      times(a);
      // An elastic job's replicas added or given back have spans of their own.
      if (a.is_object() && a.contains("replicas") && a["replicas"].is_array()) {
        for (nlohmann::json& r : a["replicas"]) times(r);
      }
    }
    w.Key("attemptHistory").Raw(api::JsonText(history));
  }
  w.Key("attempts").Int(row.attempts);
  if (row.end_ms) w.Key("endTime").String(TimeText(*row.end_ms));
  const nlohmann::json* attempt = raw("attempt");
  if (attempt && !attempt->is_object()) attempt = nullptr;
  // The running attempt's mean GPU utilization so far, as its agents measure it.
  if (attempt && attempt->contains("gpuUtilization"))
    w.Key("gpuUtilization").Raw(api::JsonText((*attempt)["gpuUtilization"]));
  w.Key("id").Int(row.id);
  copy("idempotencyKey");
  if (const nlohmann::json* nb = raw("notBeforeMs"); nb && nb->is_number_integer() && row.state == "PENDING") {
    w.Key("notBefore").String(TimeText(nb->get<int64_t>()));
  }
  if (attempt && attempt->contains("progress") && (*attempt)["progress"].is_object()) {
    nlohmann::json p = (*attempt)["progress"];
    if (p.contains("timeMs") && p["timeMs"].is_number_integer()) {
      p["time"] = TimeText(p["timeMs"].get<int64_t>());
      p.erase("timeMs");
    }
    w.Key("progress").Raw(api::JsonText(p));
  }
  w.Key("reason").String(row.reason);
  // Each replica's steps and step rate, stragglers marked (server/straggler_detector.h).
  if (attempt && attempt->contains("replicaProgress"))
    w.Key("replicaProgress").Raw(api::JsonText((*attempt)["replicaProgress"]));
  copy("requeues");
  if (attempt && attempt->contains("resumedFrom")) w.Key("resumedFrom").Raw(api::JsonText((*attempt)["resumedFrom"]));
  copy("retries");
  if (row.start_ms) w.Key("startTime").String(TimeText(*row.start_ms));
  w.Key("state").String(row.state);
  w.Key("submitTime").String(TimeText(row.submit_ms));
  w.Key("user").String(row.user).EndObject();
  return out;
}

void AppendSummaryJson(const store::JobSummary& j, std::string& out) {
  api::JsonWriter w(out);
  w.BeginObject().Key("id").Int(j.id).Key("name").String(j.name).Key("user").String(j.user);
  w.Key("queue").String(j.queue).Key("priority").String(j.priority_class).Key("state").String(j.state);
  w.Key("reason").String(j.reason).Key("submitTime").String(TimeText(j.submit_ms));
  if (j.start_ms) w.Key("startTime").String(TimeText(*j.start_ms));
  if (j.end_ms) w.Key("endTime").String(TimeText(*j.end_ms));
  w.Key("gpus").Int(j.gpus).Key("replicas").Int(j.replicas).Key("nodes").BeginArray();
  for (const std::string& n : j.nodes) w.String(n);
  w.EndArray().EndObject();
}

nlohmann::json JobJson(const store::JobRow& row) {
  nlohmann::json j = nlohmann::json::parse(JobJsonText(row), nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

nlohmann::json EventJson(const store::EventRow& e) {
  return {
      {"seq", e.seq}, {"time", TimeText(e.time_ms)}, {"type", e.type}, {"reason", e.reason}, {"message", e.message}};
}

nlohmann::json CheckpointJson(const store::CheckpointRow& c) {
  return {{"seq", c.seq},
          {"attempt", c.attempt},
          {"step", c.step},
          {"location", c.location},
          {"manifestSha256", c.manifest_sha256},
          {"files", c.files},
          {"bytes", c.bytes},
          {"state", c.state},
          {"note", c.note},
          {"createdTime", FormatRfc3339Utc(Time::FromMillis(c.created_ms))}};
}

}  // namespace muster::server
