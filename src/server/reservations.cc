#include "server/reservations.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "api/slurm_mapping.h"
#include "common/message_text.h"
#include "common/quantity.h"
#include "common/rfc3339.h"
#include "server/http_api_util.h"

namespace muster::server {
namespace {

using nlohmann::json;

constexpr size_t kMaxNodes = 4096;
constexpr size_t kMaxNames = 256;

// A list of at most `max` names of [A-Za-z0-9._-], each once.
StatusOr<std::vector<std::string>> Names(const json& body, const char* key, size_t max, bool required) {
  std::vector<std::string> out;
  if (!body.contains(key) || body[key].is_null()) {
    if (required) return InvalidArgument("is required", key);
    return out;
  }
  const json& list = body[key];
  if (!list.is_array() || list.size() > max) {
    return InvalidArgument("must be a list of at most " + std::to_string(max) + " names", key);
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    if (!list[i].is_string() || !ValidName(list[i].get<std::string>(), 128)) {
      return InvalidArgument("must be a name of 1 to 128 characters of [A-Za-z0-9._-], got " +
                                 QuoteForMessage(list[i].is_string() ? list[i].get<std::string>() : list[i].dump()),
                             at);
    }
    if (!seen.insert(list[i].get<std::string>()).second) return InvalidArgument("is named twice", at);
    out.push_back(list[i].get<std::string>());
  }
  if (required && out.empty()) return InvalidArgument("must name at least one", key);
  return out;
}

StatusOr<Time> TimeField(const json& body, const char* key, Time now) {
  if (!body[key].is_string())
    return InvalidArgument("must be an RFC 3339 time such as \"2026-12-01T08:00:00Z\", or \"now\"", key);
  const std::string text = body[key].get<std::string>();
  if (text == "now") return now;
  const std::optional<Time> t = ParseRfc3339Utc(text);
  if (!t) {
    return InvalidArgument(
        "must be an RFC 3339 time such as \"2026-12-01T08:00:00Z\", or \"now\", got " + QuoteForMessage(text), key);
  }
  return *t;
}

// Slurm's reservation flags that mean something here, in the order Slurm
// prints them.
constexpr const char* kFlags[] = {"MAINT", "OVERLAP", "IGNORE_JOBS"};

StatusOr<std::vector<std::string>> Flags(const json& body) {
  std::vector<std::string> out;
  if (!body.contains("flags") || body["flags"].is_null()) return out;
  if (!body["flags"].is_array()) return InvalidArgument("must be a list of IGNORE_JOBS, MAINT or OVERLAP", "flags");
  for (size_t i = 0; i < body["flags"].size(); ++i) {
    const json& f = body["flags"][i];
    std::string name = f.is_string() ? f.get<std::string>() : f.dump();
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (std::find(std::begin(kFlags), std::end(kFlags), name) == std::end(kFlags)) {
      return InvalidArgument("must be IGNORE_JOBS, MAINT or OVERLAP, got " + QuoteForMessage(name.substr(0, 64)),
                             "flags[" + std::to_string(i) + "]");
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  auto rank = [](const std::string& f) {
    return std::find(std::begin(kFlags), std::end(kFlags), f) - std::begin(kFlags);
  };
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  return out;
}

bool Overlap(const core::AdminReservation& a, const core::AdminReservation& b) {
  return a.start < b.end && b.start < a.end;
}

}  // namespace

bool ReservationEntry::Has(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

StatusOr<ReservationEntry> ReservationFromJson(const json& body, Time now,
                                               const std::vector<std::string>& cluster_nodes, bool any_node) {
  if (!body.is_object()) return InvalidArgument("must be a JSON object", "body");
  static const std::set<std::string> kFields = {"name",     "nodes", "start",  "end",
                                                "duration", "users", "queues", "flags"};
  for (const auto& [key, value] : body.items()) {
    if (!kFields.count(key)) return InvalidArgument("unknown field", key.substr(0, 64));
  }
  ReservationEntry r;
  if (!body.contains("name") || !body["name"].is_string() || !ValidName(body["name"].get<std::string>(), 128)) {
    return InvalidArgument("must be a name of 1 to 128 characters of [A-Za-z0-9._-]", "name");
  }
  r.window.name = body["name"].get<std::string>();
  if (body.contains("nodes") && body["nodes"] == "ALL") {
    if (cluster_nodes.empty() && !any_node) return InvalidArgument("ALL: the cluster has no nodes yet", "nodes");
    r.window.nodes = cluster_nodes;
    std::sort(r.window.nodes.begin(), r.window.nodes.end(), api::SlurmNodeOrderLess);  // as Slurm lists them
    r.all_nodes = true;
  } else {
    ASSIGN_OR_RETURN(r.window.nodes, Names(body, "nodes", kMaxNodes, true));
  }
  const std::set<std::string> known(cluster_nodes.begin(), cluster_nodes.end());
  for (size_t i = 0; i < r.window.nodes.size() && !any_node; ++i) {
    if (!known.count(r.window.nodes[i])) {
      return InvalidArgument("no node " + QuoteForMessage(r.window.nodes[i]) + " in the cluster",
                             "nodes[" + std::to_string(i) + "]");
    }
  }
  r.window.start = now;
  if (body.contains("start")) {
    ASSIGN_OR_RETURN(r.window.start, TimeField(body, "start", now));
  }
  const bool has_end = body.contains("end"), has_duration = body.contains("duration");
  if (has_end == has_duration)
    return InvalidArgument("give end or duration, one of them", has_end ? "duration" : "end");
  if (has_end) {
    ASSIGN_OR_RETURN(r.window.end, TimeField(body, "end", now));
  } else {
    auto d = body["duration"].is_string() ? ParseDuration(body["duration"].get<std::string>())
                                          : StatusOr<Duration>(InvalidArgument("not a string"));
    if (!d.ok() || *d <= Duration::Zero() || d->is_infinite()) {
      return InvalidArgument("must be a duration such as \"12h\" or \"1-00:00:00\"", "duration");
    }
    r.window.end = r.window.start + *d;
  }
  if (r.window.end <= r.window.start) return InvalidArgument("must be after the start", has_end ? "end" : "duration");
  if (r.window.end <= now) return InvalidArgument("has passed already", has_end ? "end" : "duration");
  if (r.window.end - r.window.start > Duration::Hours(24 * 365)) {
    return InvalidArgument("a reservation lasts at most 365 days", has_end ? "end" : "duration");
  }
  ASSIGN_OR_RETURN(r.users, Names(body, "users", kMaxNames, false));
  ASSIGN_OR_RETURN(r.queues, Names(body, "queues", kMaxNames, false));
  if (r.users.empty() && r.queues.empty()) return InvalidArgument("name the users or queues it is for", "users");
  ASSIGN_OR_RETURN(r.flags, Flags(body));
  return r;
}

json ReservationJson(const ReservationEntry& r) {
  return {{"name", r.window.name},
          {"nodes", r.window.nodes},
          {"start", FormatRfc3339Utc(r.window.start)},
          {"end", FormatRfc3339Utc(r.window.end)},
          {"users", r.users},
          {"queues", r.queues},
          {"flags", r.flags},
          {"allNodes", r.all_nodes},
          {"createdBy", r.created_by}};
}

Status Reservations::Load(const std::string& text) {
  entries_.clear();
  if (text.empty()) return Status::Ok();
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return DataLoss("meta reservations is damaged: " + text.substr(0, 200));
  for (const json& e : j) {
    auto r = ReservationFromJson(json{{"name", e.value("name", "")},
                                      {"nodes", e.value("nodes", json::array())},
                                      {"start", e.value("start", "")},
                                      {"end", e.value("end", "")},
                                      {"users", e.value("users", json::array())},
                                      {"queues", e.value("queues", json::array())},
                                      {"flags", e.value("flags", json::array())}},
                                 Time::Zero(), {}, /*any_node=*/true);
    if (!r.ok()) return DataLoss("meta reservations is damaged: " + r.status().ToString());
    r->created_by = e.value("createdBy", "");
    r->all_nodes = e.value("allNodes", false);
    entries_.push_back(std::move(*r));
  }
  return Status::Ok();
}

std::string Reservations::Dump() const {
  json out = json::array();
  for (const ReservationEntry& r : entries_) out.push_back(ReservationJson(r));
  return out.dump();
}

Status Reservations::Add(ReservationEntry r) {
  if (Find(r.window.name) != nullptr) {
    return Status(StatusCode::kFailedPrecondition, "reservation " + r.window.name + " exists already", "name");
  }
  const bool may_overlap = r.Has("OVERLAP") || r.Has("MAINT");
  for (const ReservationEntry& other : entries_) {
    if (may_overlap || !Overlap(other.window, r.window)) continue;
    for (const std::string& n : r.window.nodes) {
      if (std::find(other.window.nodes.begin(), other.window.nodes.end(), n) != other.window.nodes.end()) {
        return Status(StatusCode::kFailedPrecondition,
                      "node " + n + " is in reservation " + other.window.name + " (" +
                          FormatRfc3339Utc(other.window.start) + " to " + FormatRfc3339Utc(other.window.end) +
                          "), whose window overlaps (flags OVERLAP or MAINT allow it)",
                      "nodes");
      }
    }
  }
  entries_.push_back(std::move(r));
  std::sort(entries_.begin(), entries_.end(), [](const ReservationEntry& a, const ReservationEntry& b) {
    return std::tie(a.window.start, a.window.name) < std::tie(b.window.start, b.window.name);
  });
  return Status::Ok();
}

bool Reservations::Remove(const std::string& name) {
  return std::erase_if(entries_, [&](const ReservationEntry& r) { return r.window.name == name; }) > 0;
}

std::vector<std::string> Reservations::RemoveEnded(Time now) {
  std::vector<std::string> ended;
  for (const ReservationEntry& r : entries_) {
    if (r.window.end <= now) ended.push_back(r.window.name);
  }
  std::erase_if(entries_, [&](const ReservationEntry& r) { return r.window.end <= now; });
  return ended;
}

const ReservationEntry* Reservations::Find(const std::string& name) const {
  for (const ReservationEntry& r : entries_) {
    if (r.window.name == name) return &r;
  }
  return nullptr;
}

Status Reservations::MayUse(const std::string& name, const std::string& user, const std::string& queue) const {
  const ReservationEntry* r = Find(name);
  if (r == nullptr) {
    std::string known;
    for (const ReservationEntry& e : entries_) known += (known.empty() ? "" : ", ") + e.window.name;
    return InvalidArgument(
        "no reservation " + QuoteForMessage(name) + " (known: " + (known.empty() ? "none" : known) + ")",
        "reservation");
  }
  const bool for_user = std::find(r->users.begin(), r->users.end(), user) != r->users.end();
  const bool for_queue = std::find(r->queues.begin(), r->queues.end(), queue) != r->queues.end();
  if (for_user || for_queue) return Status::Ok();
  auto list = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? std::string("none") : s;
  };
  return InvalidArgument("reservation " + name + " is for users " + list(r->users) + " and queues " + list(r->queues) +
                             "; not for " + user + " in queue " + queue,
                         "reservation");
}

std::vector<core::AdminReservation> Reservations::Windows() const {
  std::vector<core::AdminReservation> out;
  for (const ReservationEntry& r : entries_) out.push_back(r.window);
  return out;
}

}  // namespace muster::server
