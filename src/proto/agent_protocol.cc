#include "proto/agent_protocol.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "common/message_text.h"

namespace muster::proto {

using nlohmann::json;

namespace {

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Whether `v` is an integer that type T holds (a number past int64 parses
// as a float, and converting that to an integer is undefined).
template <typename T>
bool FitsInteger(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  if (!v.is_number_integer()) return false;
  const int64_t x = v.get<int64_t>();
  if constexpr (std::is_unsigned_v<T>) return x >= 0 && static_cast<uint64_t>(x) <= std::numeric_limits<T>::max();
  return x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max();
}

template <typename>
struct IntegerVector : std::false_type {};
template <typename U>
struct IntegerVector<std::vector<U>> : std::bool_constant<std::is_integral_v<U> && !std::is_same_v<U, bool>> {};

// Reads optional field `key` of object `j` into `out`; a present field of
// the wrong type, or an integer out of its type's range, is an error naming
// `path.key`.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  template <typename T>
  void Get(const json& j, const char* key, T& out) {
    if (!status_.ok() || !j.contains(key) || j[key].is_null()) return;
    const json& v = j[key];
    const std::string field = path_.empty() ? key : path_ + "." + key;
    bool ok = false;
    if constexpr (std::is_same_v<T, bool>) {
      ok = v.is_boolean();
    } else if constexpr (std::is_integral_v<T>) {
      ok = FitsInteger<T>(v);
    } else if constexpr (IntegerVector<T>::value) {
      ok = v.is_array() &&
           std::all_of(v.begin(), v.end(), [](const json& e) { return FitsInteger<typename T::value_type>(e); });
    } else if constexpr (std::is_same_v<T, std::string>) {
      ok = v.is_string();
    } else {
      ok = true;  // containers: checked by get<> below
    }
    if (!ok) {
      status_ = InvalidArgument("wrong type or out of range, got " + std::string(v.type_name()), field);
      return;
    }
    try {
      out = v.get<T>();
    } catch (const json::exception&) {
      status_ = InvalidArgument("wrong type", field);
    }
  }
  template <typename T, typename F>
  void List(const json& j, const char* key, std::vector<T>& out, F read_one) {
    if (!status_.ok() || !j.contains(key) || j[key].is_null()) return;
    const std::string field = path_.empty() ? key : path_ + "." + key;
    if (!j[key].is_array()) {
      status_ = InvalidArgument(field + ": must be an array", field);
      return;
    }
    for (size_t i = 0; i < j[key].size() && status_.ok(); ++i) {
      const json& e = j[key][i];
      const std::string at = field + "[" + std::to_string(i) + "]";
      if (!e.is_object()) {
        status_ = InvalidArgument(at + ": must be an object", at);
        return;
      }
      Reader r(at);
      T v;
      read_one(r, e, v);
      if (!r.status_.ok()) {
        status_ = r.status_;
        return;
      }
      out.push_back(std::move(v));
    }
  }
  const Status& status() const { return status_; }

 private:
  std::string path_;
  Status status_;
};

}  // namespace

std::string TaskKey(int64_t job, int32_t attempt, int32_t replica) {
  return "j" + std::to_string(job) + ".a" + std::to_string(attempt) + ".r" + std::to_string(replica);
}

std::string ToJson(const SyncRequest& r) {
  json gpus = json::array();
  for (const GpuReport& g : r.gpus) {
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"name", g.name},
                    {"memoryBytes", g.memory_bytes},
                    {"numaNode", g.numa_node},
                    {"nvlinks", g.nvlinks},
                    {"healthy", g.healthy},
                    {"health", g.health}});
  }
  json events = json::array();
  for (const HealthEventReport& e : r.health_events) {
    events.push_back({{"uuid", e.uuid}, {"xid", e.xid}, {"kind", e.kind}, {"fatal", e.fatal}, {"timeMs", e.time_ms}});
  }
  json pulls = json::array();
  for (const ImagePullReport& p : r.pulls) {
    pulls.push_back({{"image", p.image}, {"state", p.state}, {"message", p.message}, {"ms", p.ms}});
  }
  json tasks = json::array();
  for (const TaskReport& t : r.tasks) {
    json task = {{"job", t.job},         {"attempt", t.attempt},  {"replica", t.replica},
                 {"running", t.running}, {"startMs", t.start_ms}, {"exitCode", t.exit_code},
                 {"signal", t.signal},   {"oom", t.oom},          {"stopReason", t.stop_reason},
                 {"message", t.message}, {"endMs", t.end_ms}};
    if (t.gpu_utilization >= 0) task["gpuUtilization"] = t.gpu_utilization;
    if (t.resume_known) {
      json skipped = json::array();
      for (const SkippedCheckpoint& k : t.skipped) skipped.push_back({{"seq", k.seq}, {"reason", k.reason}});
      task["resume"] = {{"seq", t.resumed_seq}, {"skipped", skipped}};
    }
    if (!t.image_state.empty()) {
      task["image"] = t.image_state;
      task["pullMs"] = t.pull_ms;
    }
    tasks.push_back(std::move(task));
  }
  return Dump({{"node", r.node},
               {"agentId", r.agent_id},
               {"agentVersion", r.agent_version},
               {"address", r.address},
               {"logPort", r.log_port},
               {"logTlsPin", r.log_tls_pin},
               {"gpuType", r.gpu_type},
               {"gpuSource", r.gpu_source},
               {"gpuNote", r.gpu_note},
               {"gpus", gpus},
               {"cpuMilli", r.cpu_milli},
               {"memoryBytes", r.memory_bytes},
               {"labels", r.labels},
               {"cgroups", r.cgroups},
               {"containers", r.containers},
               {"containersNote", r.containers_note},
               {"features", r.features},
               {"healthEvents", events},
               {"tasks", tasks},
               {"pulls", pulls},
               {"reclaimInMs", r.reclaim_in_ms},
               {"reclaimSource", r.reclaim_source},
               {"reportSeq", r.report_seq},
               {"epoch", r.epoch},
               {"version", r.version},
               {"reportsVersion", r.reports_version},
               {"waitMs", r.wait_ms}});
}

namespace {

json ResumeJson(const std::vector<ResumeCandidate>& candidates) {
  json out = json::array();
  for (const ResumeCandidate& c : candidates) {
    out.push_back({{"seq", c.seq}, {"step", c.step}, {"location", c.location}, {"manifestSha256", c.manifest_sha256}});
  }
  return out;
}

void ReadCandidate(Reader& c, const json& co, ResumeCandidate& r) {
  c.Get(co, "seq", r.seq);
  c.Get(co, "step", r.step);
  c.Get(co, "location", r.location);
  c.Get(co, "manifestSha256", r.manifest_sha256);
}

json TaskJson(const TaskAssignment& t) {
  json j = {{"job", t.job},
            {"attempt", t.attempt},
            {"replica", t.replica},
            {"epoch", t.epoch},
            {"user", t.user},
            {"argv", t.argv},
            {"script", t.script},
            {"image", t.image},
            {"env", t.env},
            {"workingDir", t.working_dir},
            {"gpus", t.gpus},
            {"cpuMilli", t.cpu_milli},
            {"memoryBytes", t.memory_bytes},
            {"timeLimitMs", t.time_limit_ms},
            {"stopSignal", t.stop_signal},
            {"graceMs", t.grace_ms},
            {"resume", ResumeJson(t.resume)}};
  if (!t.mounts.empty()) {
    json mounts = json::array();
    for (const TaskAssignment::Mount& m : t.mounts) {
      mounts.push_back({{"hostPath", m.host_path}, {"containerPath", m.container_path}, {"readOnly", m.read_only}});
    }
    j["mounts"] = std::move(mounts);
  }
  if (!t.registry_auth.registry.empty()) {
    j["registryAuth"] = {{"registry", t.registry_auth.registry},
                         {"username", t.registry_auth.username},
                         {"password", t.registry_auth.password}};
  }
  if (!t.stdout_path.empty()) j["stdout"] = t.stdout_path;
  if (!t.stderr_path.empty()) j["stderr"] = t.stderr_path;
  if (t.limit_signal > 0) {
    j["limitSignal"] = {{"signal", t.limit_signal}, {"beforeMs", t.limit_signal_before_ms}, {"to", t.limit_signal_to}};
  }
  return j;
}

}  // namespace

std::string ToJson(const TaskAssignment& t) { return Dump(TaskJson(t)); }

std::string ToJson(const std::vector<ResumeCandidate>& candidates) { return Dump(ResumeJson(candidates)); }

StatusOr<std::vector<ResumeCandidate>> ParseResumeCandidates(const std::string& text) {
  const json j = {{"resume", json::parse(text, nullptr, false)}};
  if (!j["resume"].is_array()) return InvalidArgument("resume: must be an array", "resume");
  std::vector<ResumeCandidate> out;
  Reader rd("");
  rd.List(j, "resume", out, ReadCandidate);
  RETURN_IF_ERROR(rd.status());
  return out;
}

std::string ToJson(const SyncResponse& r) {
  json recorded = json::array();
  for (const TaskRef& t : r.recorded)
    recorded.push_back({{"job", t.job}, {"attempt", t.attempt}, {"replica", t.replica}});
  // {"tasks":[...],"epoch":...}: the encoded tasks are spliced in as they are.
  std::string out = "{\"tasks\":[";
  bool first = true;
  for (const TaskAssignment& t : r.tasks) {
    out += (first ? "" : ",") + Dump(TaskJson(t));
    first = false;
  }
  for (const auto& t : r.encoded_tasks) {
    if (!first) out += ",";
    out += *t;
    first = false;
  }
  json rest = {{"epoch", r.epoch},
               {"version", r.version},
               {"leaseMs", r.lease_ms},
               {"recorded", recorded},
               {"healthEventsRecorded", r.health_events_recorded}};
  if (!r.pulls.empty()) rest["pulls"] = r.pulls;
  if (r.reclaim_in_ms > 0) rest["reclaimInMs"] = r.reclaim_in_ms;
  if (!r.grace_cuts.empty()) {
    json cuts = json::array();
    for (const GraceCut& c : r.grace_cuts)
      cuts.push_back({{"job", c.job}, {"attempt", c.attempt}, {"graceMs", c.grace_ms}});
    rest["graceCuts"] = std::move(cuts);
  }
  if (!r.signals.empty()) {
    json signals = json::array();
    for (const SignalOrder& s : r.signals) {
      signals.push_back({{"job", s.job},
                         {"attempt", s.attempt},
                         {"replica", s.replica},
                         {"seq", s.seq},
                         {"signal", s.signal},
                         {"to", s.to}});
    }
    rest["signals"] = std::move(signals);
  }
  out += "],";
  out += Dump(rest).substr(1);
  return out;
}

StatusOr<SyncRequest> ParseSyncRequest(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument("sync: the body must be a JSON object", "sync");
  SyncRequest r;
  Reader rd("");
  rd.Get(j, "node", r.node);
  rd.Get(j, "agentId", r.agent_id);
  rd.Get(j, "agentVersion", r.agent_version);
  rd.Get(j, "address", r.address);
  rd.Get(j, "logPort", r.log_port);
  rd.Get(j, "logTlsPin", r.log_tls_pin);
  rd.Get(j, "gpuType", r.gpu_type);
  rd.Get(j, "gpuSource", r.gpu_source);
  rd.Get(j, "gpuNote", r.gpu_note);
  rd.List(j, "gpus", r.gpus, [](Reader& e, const json& o, GpuReport& g) {
    e.Get(o, "index", g.index);
    e.Get(o, "uuid", g.uuid);
    e.Get(o, "name", g.name);
    e.Get(o, "memoryBytes", g.memory_bytes);
    e.Get(o, "numaNode", g.numa_node);
    e.Get(o, "nvlinks", g.nvlinks);
    e.Get(o, "healthy", g.healthy);
    e.Get(o, "health", g.health);
  });
  rd.Get(j, "cpuMilli", r.cpu_milli);
  rd.Get(j, "memoryBytes", r.memory_bytes);
  rd.Get(j, "labels", r.labels);
  rd.Get(j, "cgroups", r.cgroups);
  rd.Get(j, "containers", r.containers);
  rd.Get(j, "containersNote", r.containers_note);
  rd.Get(j, "features", r.features);
  rd.Get(j, "reclaimInMs", r.reclaim_in_ms);
  rd.Get(j, "reclaimSource", r.reclaim_source);
  rd.List(j, "healthEvents", r.health_events, [](Reader& e, const json& o, HealthEventReport& h) {
    e.Get(o, "uuid", h.uuid);
    e.Get(o, "xid", h.xid);
    e.Get(o, "kind", h.kind);
    e.Get(o, "fatal", h.fatal);
    e.Get(o, "timeMs", h.time_ms);
  });
  rd.List(j, "tasks", r.tasks, [](Reader& e, const json& o, TaskReport& t) {
    e.Get(o, "job", t.job);
    e.Get(o, "attempt", t.attempt);
    e.Get(o, "replica", t.replica);
    e.Get(o, "running", t.running);
    e.Get(o, "startMs", t.start_ms);
    e.Get(o, "exitCode", t.exit_code);
    e.Get(o, "signal", t.signal);
    e.Get(o, "oom", t.oom);
    e.Get(o, "stopReason", t.stop_reason);
    e.Get(o, "message", t.message);
    e.Get(o, "endMs", t.end_ms);
    e.Get(o, "gpuUtilization", t.gpu_utilization);
    if (t.gpu_utilization > 1) t.gpu_utilization = 1;
    e.Get(o, "image", t.image_state);
    e.Get(o, "pullMs", t.pull_ms);
    if (o.contains("resume") && o["resume"].is_object()) {
      t.resume_known = true;
      e.Get(o["resume"], "seq", t.resumed_seq);
      e.List(o["resume"], "skipped", t.skipped, [](Reader& k, const json& ko, SkippedCheckpoint& s) {
        k.Get(ko, "seq", s.seq);
        k.Get(ko, "reason", s.reason);
      });
    }
  });
  rd.List(j, "pulls", r.pulls, [](Reader& e, const json& o, ImagePullReport& p) {
    e.Get(o, "image", p.image);
    e.Get(o, "state", p.state);
    e.Get(o, "message", p.message);
    e.Get(o, "ms", p.ms);
  });
  if (r.pulls.size() > 256) return InvalidArgument("pulls: at most 256", "pulls");
  if (r.features.size() > 16) return InvalidArgument("features: at most 16", "features");
  for (size_t i = 0; i < r.features.size(); ++i) {
    const std::string& f = r.features[i];
    const std::string field = "features[" + std::to_string(i) + "]";
    if (f.empty() || f.size() > 64 || !std::all_of(f.begin(), f.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
        })) {
      return InvalidArgument(field + ": a feature is 1..64 letters, digits, '-', '.' or '_', got " + QuoteForMessage(f),
                             field);
    }
  }
  rd.Get(j, "reportSeq", r.report_seq);
  rd.Get(j, "epoch", r.epoch);
  rd.Get(j, "version", r.version);
  rd.Get(j, "reportsVersion", r.reports_version);
  rd.Get(j, "waitMs", r.wait_ms);
  RETURN_IF_ERROR(rd.status());
  if (r.node.empty() || r.node.size() > 253)
    return InvalidArgument("node: must be a name of 1..253 characters", "node");
  for (char c : r.node) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') {
      return InvalidArgument("node: may use letters, digits, '-', '.' and '_', got " + QuoteForMessage(r.node), "node");
    }
  }
  if (r.gpus.size() > 1024) return InvalidArgument("gpus: at most 1024", "gpus");
  if (r.cpu_milli < 0 || r.memory_bytes < 0) return InvalidArgument("cpuMilli, memoryBytes: must be >= 0", "cpuMilli");
  if (r.wait_ms < 0 || r.wait_ms > 60'000) return InvalidArgument("waitMs: must be 0..60000", "waitMs");
  return r;
}

StatusOr<SyncResponse> ParseSyncResponse(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgument("sync response: not a JSON object", "sync");
  SyncResponse r;
  Reader rd("");
  rd.Get(j, "epoch", r.epoch);
  rd.Get(j, "version", r.version);
  rd.Get(j, "leaseMs", r.lease_ms);
  rd.Get(j, "reclaimInMs", r.reclaim_in_ms);
  rd.List(j, "tasks", r.tasks, [](Reader& e, const json& o, TaskAssignment& t) {
    e.Get(o, "job", t.job);
    e.Get(o, "attempt", t.attempt);
    e.Get(o, "replica", t.replica);
    e.Get(o, "epoch", t.epoch);
    e.Get(o, "user", t.user);
    e.Get(o, "argv", t.argv);
    e.Get(o, "script", t.script);
    e.Get(o, "image", t.image);
    e.List(o, "mounts", t.mounts, [](Reader& m, const json& mo, TaskAssignment::Mount& mount) {
      m.Get(mo, "hostPath", mount.host_path);
      m.Get(mo, "containerPath", mount.container_path);
      m.Get(mo, "readOnly", mount.read_only);
    });
    if (o.contains("registryAuth") && o["registryAuth"].is_object()) {
      e.Get(o["registryAuth"], "registry", t.registry_auth.registry);
      e.Get(o["registryAuth"], "username", t.registry_auth.username);
      e.Get(o["registryAuth"], "password", t.registry_auth.password);
    }
    e.Get(o, "env", t.env);
    e.Get(o, "workingDir", t.working_dir);
    e.Get(o, "stdout", t.stdout_path);
    e.Get(o, "stderr", t.stderr_path);
    e.Get(o, "gpus", t.gpus);
    e.Get(o, "cpuMilli", t.cpu_milli);
    e.Get(o, "memoryBytes", t.memory_bytes);
    e.Get(o, "timeLimitMs", t.time_limit_ms);
    e.Get(o, "stopSignal", t.stop_signal);
    e.Get(o, "graceMs", t.grace_ms);
    if (o.contains("limitSignal") && o["limitSignal"].is_object()) {
      e.Get(o["limitSignal"], "signal", t.limit_signal);
      e.Get(o["limitSignal"], "beforeMs", t.limit_signal_before_ms);
      e.Get(o["limitSignal"], "to", t.limit_signal_to);
    }
    e.List(o, "resume", t.resume, ReadCandidate);
  });
  rd.Get(j, "pulls", r.pulls);
  rd.List(j, "recorded", r.recorded, [](Reader& e, const json& o, TaskRef& t) {
    e.Get(o, "job", t.job);
    e.Get(o, "attempt", t.attempt);
    e.Get(o, "replica", t.replica);
  });
  rd.Get(j, "healthEventsRecorded", r.health_events_recorded);
  rd.List(j, "graceCuts", r.grace_cuts, [](Reader& e, const json& o, GraceCut& c) {
    e.Get(o, "job", c.job);
    e.Get(o, "attempt", c.attempt);
    e.Get(o, "graceMs", c.grace_ms);
  });
  rd.List(j, "signals", r.signals, [](Reader& e, const json& o, SignalOrder& s) {
    e.Get(o, "job", s.job);
    e.Get(o, "attempt", s.attempt);
    e.Get(o, "replica", s.replica);
    e.Get(o, "seq", s.seq);
    e.Get(o, "signal", s.signal);
    e.Get(o, "to", s.to);
  });
  RETURN_IF_ERROR(rd.status());
  return r;
}

}  // namespace muster::proto
