#include "cli/slurm_jobs.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <memory>

#include "api/array_indices.h"
#include "api/slurm_mapping.h"
#include "cli/client.h"
#include "common/quantity.h"
#include "common/rfc3339.h"
#include "core/job.h"

namespace muster::cli {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<Time> TimeOf(const json& j, const char* key) {
  const std::string s = Str(j, key);
  if (s.empty()) return std::nullopt;
  return ParseRfc3339Utc(s);
}

std::string SlurmReason(const std::string& muster, const std::string& state) {
  if (state == "HELD") return "JobHeldUser";
  if (state != "PENDING") return "None";
  static const std::map<std::string, std::string> kNames = {{"Priority", "Priority"},
                                                            {"Resources", "Resources"},
                                                            {"ReservedFor", "Resources"},
                                                            {"Dependency", "Dependency"},
                                                            {"BeginTime", "BeginTime"},
                                                            {"Held", "JobHeldUser"},
                                                            {"Unschedulable", "BadConstraints"},
                                                            {"Preempting", "Resources"},
                                                            {"Quota", "AssocGrpGRES"},
                                                            {"FairShare", "Priority"},
                                                            {"ArrayTaskLimit", "JobArrayTaskLimit"}};
  const std::string code = muster.substr(0, muster.find(':'));
  auto it = kNames.find(code);
  return it != kNames.end() ? it->second : code.empty() ? "None" : code;
}

}  // namespace

bool SlurmJob::Finished() const { return core::IsTerminalName(state); }

std::string SlurmJob::IdText() const {
  return array_job > 0 ? std::to_string(array_job) + "_" + std::to_string(array_task) : std::to_string(id);
}

SlurmJob SlurmJobFromJson(const json& j) {
  SlurmJob s;
  s.id = j.value("id", int64_t{0});
  s.name = Str(j, "name");
  s.user = Str(j, "user");
  s.state = Str(j, "state");
  const json slurm = j.contains("slurm") && j["slurm"].is_object() ? j["slurm"] : json::object();
  const std::string queue = Str(j, "queue");
  s.partition = slurm.contains("partition") ? Str(slurm, "partition") : queue;
  s.qos = slurm.contains("qos") ? Str(slurm, "qos") : Str(j, "priority");
  s.account = slurm.contains("account") ? Str(slurm, "account") : queue;
  s.slurm_state = s.state == "HELD" ? "PENDING" : s.state == "STARTING" ? "CONFIGURING" : s.state;
  static const std::map<std::string, std::string> kCodes = {
      {"PENDING", "PD"},        {"CONFIGURING", "CF"}, {"RUNNING", "R"},    {"COMPLETING", "CG"},
      {"COMPLETED", "CD"},      {"FAILED", "F"},       {"CANCELLED", "CA"}, {"TIMEOUT", "TO"},
      {"OUT_OF_MEMORY", "OOM"}, {"NODE_FAIL", "NF"},   {"PREEMPTED", "PR"}};
  auto code = kCodes.find(s.slurm_state);
  s.code = code != kCodes.end() ? code->second : "??";
  s.reason = SlurmReason(Str(j, "reason"), s.state);
  if (j.contains("allocations") && j["allocations"].is_array()) {
    for (const json& a : j["allocations"]) {
      const std::string node = Str(a, "node");
      if (std::find(s.nodes.begin(), s.nodes.end(), node) == s.nodes.end()) s.nodes.push_back(node);
    }
  }
  const int64_t replicas = j.value("replicas", int64_t{1});
  s.node_count = s.nodes.empty() ? replicas : static_cast<int64_t>(s.nodes.size());
  if (j.contains("resources") && j["resources"].is_object()) {
    const json& r = j["resources"];
    if (r.contains("cpus") && r["cpus"].is_number()) s.cpus = static_cast<int64_t>(r["cpus"].get<double>() * replicas);
    s.gpus_per_node = r.value("gpus", int64_t{0});
  }
  s.submit = TimeOf(j, "submitTime");
  s.start = TimeOf(j, "startTime");
  s.end = TimeOf(j, "endTime");
  if (auto limit = ParseDuration(Str(j, "timeLimit")); limit.ok()) s.time_limit = *limit;
  s.work_dir = Str(j, "workingDir");
  s.reservation = Str(j, "reservation");
  if (j.contains("dependencies") && j["dependencies"].is_array()) s.dependencies = j["dependencies"];
  s.dependencies_any = j.value("dependenciesAny", false);
  s.singleton = j.value("singleton", false);
  if (j.contains("arrayIndex") && j["arrayIndex"].is_number()) {
    const int32_t position = j["arrayIndex"].get<int32_t>();
    s.array_job = j.value("arrayFirstId", s.id - position);
    s.array_task = position;
    if (j.contains("array") && j["array"].is_string()) {
      if (auto a = api::ParseArrayIndices(j["array"].get<std::string>(), 1'000'000); a.ok()) {
        if (position >= 0 && position < static_cast<int32_t>(a->indices.size())) s.array_task = a->indices[position];
        s.array_limit = a->max_running;
      }
    }
  }
  if (j.contains("attemptHistory") && j["attemptHistory"].is_array() && !j["attemptHistory"].empty()) {
    const json& last = j["attemptHistory"].back();
    if (s.nodes.empty() && last.contains("replicas") && last["replicas"].is_array()) {
      for (const json& r : last["replicas"]) {
        const std::string node = Str(r, "node");
        if (std::find(s.nodes.begin(), s.nodes.end(), node) == s.nodes.end()) s.nodes.push_back(node);
      }
      if (!s.nodes.empty()) s.node_count = static_cast<int64_t>(s.nodes.size());
    }
    if (last.contains("exitCode") && last["exitCode"].is_number()) s.exit_code = last["exitCode"].get<int32_t>();
    s.exit_signal = last.value("signal", 0);
  }
  // Slurm lists a job's nodes in the cluster's order, not the job's.
  std::sort(s.nodes.begin(), s.nodes.end(), api::SlurmNodeOrderLess);
  return s;
}

namespace {

// Whether a dependency of `type` holds for a job in `state`, and whether
// it never can (as scheduler/dependencies.h).
std::pair<bool, bool> DependencyHolds(const std::string& type, const std::string& state) {
  const bool ended = core::IsTerminalName(state), ok = state == "COMPLETED";
  if (type == "afterany") return {ended, false};
  if (type == "afternotok") return {ended && !ok, ok};
  if (type == "after") return {state != "PENDING" && state != "HELD", false};
  return {ok, ended && !ok};  // afterok, aftercorr
}

}  // namespace

std::string SlurmDependencyText(const SlurmJob& j, const std::function<std::optional<json>(int64_t)>& job_of) {
  std::string out;
  auto add = [&](const std::string& item) { out += (out.empty() ? "" : j.dependencies_any ? "?" : ",") + item; };
  for (const json& d : j.dependencies) {
    if (!d.is_object()) continue;
    const std::string type = Str(d, "type");
    const int64_t id = d.value("job", int64_t{0});
    // The job, or every task of the array whose id it is.
    std::vector<json> targets;
    bool array = false;
    if (std::optional<json> first = job_of(id)) {
      array = first->value("arrayFirstId", int64_t{0}) == id;
      targets.push_back(std::move(*first));
      for (int64_t t = id + 1; array; ++t) {
        std::optional<json> task = job_of(t);
        if (!task || task->value("arrayFirstId", int64_t{0}) != id) break;
        targets.push_back(std::move(*task));
      }
    }
    bool holds = !targets.empty(), never = targets.empty();
    for (const json& t : targets) {
      const auto [ok, no] = DependencyHolds(type, Str(t, "state"));
      holds &= ok;
      never |= no;
    }
    if (holds) continue;
    std::string item = type + ":" + std::to_string(id) + (array ? "_*" : "");
    if (auto delay = ParseDuration(Str(d, "delay")); delay.ok() && *delay > Duration::Zero()) {
      item += "+" + std::to_string(delay->millis() / 60000);
    }
    add(item + (never ? "(failed)" : "(unfulfilled)"));
  }
  if (j.singleton && (j.state == "PENDING" || j.state == "HELD") && j.reason == "Dependency")
    add("singleton(unfulfilled)");
  return out.empty() ? "(null)" : out;
}

std::function<std::optional<json>(int64_t)> JobsByIdFrom(Client& client) {
  auto cache = std::make_shared<std::map<int64_t, std::optional<json>>>();
  return [&client, cache](int64_t id) -> std::optional<json> {
    auto it = cache->find(id);
    if (it != cache->end()) return it->second;
    auto r = client.Get("/v1/jobs/" + std::to_string(id));
    std::optional<json> found;
    if (r.ok() && r->status == 200 && r->body.is_object()) found = r->body;
    return cache->emplace(id, std::move(found)).first->second;
  };
}

std::string ArrayTaskRuns(const std::vector<const SlurmJob*>& tasks) {
  if (tasks.size() == 1) return std::to_string(tasks[0]->array_task);
  std::string runs;
  for (size_t i = 0; i < tasks.size();) {
    size_t k = i;
    while (k + 1 < tasks.size() && tasks[k + 1]->array_task == tasks[k]->array_task + 1) ++k;
    runs += (runs.empty() ? "" : ",") + std::to_string(tasks[i]->array_task) +
            (k > i ? "-" + std::to_string(tasks[k]->array_task) : "");
    i = k + 1;
  }
  const int32_t limit = tasks.empty() ? 0 : tasks[0]->array_limit;
  return "[" + runs + (limit > 0 ? "%" + std::to_string(limit) : "") + "]";
}

int SlurmStateRank(const std::string& s) {
  static const std::map<std::string, int> kRank = {
      {"PENDING", 0},   {"CONFIGURING", 1}, {"RUNNING", 1}, {"COMPLETING", 1}, {"SUSPENDED", 2}, {"COMPLETED", 3},
      {"CANCELLED", 4}, {"FAILED", 5},      {"TIMEOUT", 6}, {"NODE_FAIL", 7},  {"PREEMPTED", 8}, {"OUT_OF_MEMORY", 11}};
  auto it = kRank.find(s);
  return it == kRank.end() ? 12 : it->second;
}

StatusOr<std::vector<SlurmJob>> ListSlurmJobs(Client& client, const std::string& states) {
  std::vector<SlurmJob> out;
  std::string after;
  for (;;) {
    std::string path = "/v1/jobs?limit=1000";
    if (!states.empty()) path += "&state=" + states;
    if (!after.empty()) path += "&continue=" + after;
    ASSIGN_OR_RETURN(Response r, client.Get(path));
    if (r.status != 200) return Client::ErrorOf(r);
    const json& page = r.body;
    if (!page.is_object() || !page.contains("items")) return Internal("the server's job list is malformed");
    for (const json& j : page["items"]) out.push_back(SlurmJobFromJson(j));
    after = page.value("continue", "");
    if (after.empty()) break;
  }
  return out;
}

std::string SlurmDuration(int64_t seconds, bool full) {
  if (seconds < 0) seconds = 0;
  const int64_t days = seconds / 86400, h = seconds / 3600 % 24, m = seconds / 60 % 60, s = seconds % 60;
  char buf[64];
  if (days > 0) {
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(days), static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  } else if (full) {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(h), static_cast<long long>(m),
                  static_cast<long long>(s));
  } else if (h > 0) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(h), static_cast<long long>(m),
                  static_cast<long long>(s));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(m), static_cast<long long>(s));
  }
  return buf;
}

std::string SlurmTime(const std::optional<Time>& t) {
  if (!t) return "Unknown";
  const std::time_t secs = static_cast<std::time_t>(t->millis() / 1000);
  std::tm local{};
  ::localtime_r(&secs, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &local);
  return buf;
}

std::vector<FormatPiece> ParsePercentFormat(const std::string& format) {
  std::vector<FormatPiece> out;
  std::string literal;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      literal += format[i];
      continue;
    }
    FormatPiece p;
    size_t k = i + 1;
    if (format[k] == '#') {
      p.fit = true;
      ++k;
    }
    if (k < format.size() && format[k] == '.') {
      p.right = true;
      ++k;
    }
    while (k < format.size() && format[k] >= '0' && format[k] <= '9') p.width = p.width * 10 + (format[k++] - '0');
    if (k >= format.size()) {
      literal += format.substr(i);
      break;
    }
    if (!literal.empty()) out.push_back({literal});
    literal.clear();
    p.field = format[k];
    out.push_back(p);
    i = k;
  }
  if (!literal.empty()) out.push_back({literal});
  return out;
}

std::string FitField(const FormatPiece& piece, const std::string& value) {
  if (piece.width <= 0) return value;
  const size_t w = static_cast<size_t>(piece.width);
  if (value.size() >= w) return value.substr(0, w);
  const std::string pad(w - value.size(), ' ');
  return piece.right ? pad + value : value + pad;
}

}  // namespace muster::cli
