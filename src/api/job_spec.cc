// The job spec codec's entry points: format dispatch, canonical JSON output,
// the core mapping and equality. Parsing is two steps, the same for both
// formats: text -> SpecTree (spec_tree_json.cc / spec_tree_yaml.cc), then
// SpecTree -> JobSpec (job_spec_schema.cc).
#include "api/job_spec.h"

#include "core/node.h"

#include <cctype>

#include <algorithm>
#include <exception>

#include "api/job_spec_schema.h"
#include "api/json_writer.h"
#include "api/spec_tree.h"
#include "common/rfc3339.h"
#include "common/signal_name.h"

namespace muster::api {
namespace {

StatusOr<JobSpec> FromTree(StatusOr<TreePtr> tree, const SpecDefaults& defaults = {}) {
  if (!tree.ok()) return tree.status();
  try {
    return JobSpecFromTree(**tree, defaults);
  } catch (const std::exception& e) {
    // The schema does not throw; this is allocation failure or a bug. Either
    // way the caller gets a value, not an exception.
    return InvalidArgument("could not read the spec: " + SanitizeForMessage(e.what()), "spec");
  }
}

// "Application/JSON; charset=utf-8" -> "application/json".
std::string MediaType(std::string_view content_type) {
  std::string_view t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  std::string out(t);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); });
  return out;
}

bool LooksLikeJson(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

std::string DurationText(Duration d) { return d.is_infinite() ? "unlimited" : d.ToString(); }

void AppendStringMap(JsonWriter& w, const char* key, const std::map<std::string, std::string>& m) {
  w.Key(key).BeginObject();
  for (const auto& [k, v] : m) w.Key(k).String(v);
  w.EndObject();
}

}  // namespace

const char* SignalTargetName(SignalTarget t) {
  switch (t) {
    case SignalTarget::kAll:
      return "all";
    case SignalTarget::kBatch:
      return "batch";
    case SignalTarget::kSteps:
      return "steps";
  }
  return "all";
}

std::optional<SignalTarget> SignalTargetFromName(std::string_view name) {
  for (SignalTarget t : {SignalTarget::kAll, SignalTarget::kBatch, SignalTarget::kSteps}) {
    if (name == SignalTargetName(t)) return t;
  }
  return std::nullopt;
}

const char* CheckpointSignalName(CheckpointSignal s) {
  switch (s) {
    case CheckpointSignal::kSigUsr1:
      return "SIGUSR1";
    case CheckpointSignal::kSigUsr2:
      return "SIGUSR2";
    case CheckpointSignal::kSigTerm:
      return "SIGTERM";
    case CheckpointSignal::kSigInt:
      return "SIGINT";
  }
  return "?";
}

bool operator==(const JobSpec& a, const JobSpec& b) {
  return a.name == b.name && a.queue == b.queue && a.priority == b.priority && a.replicas == b.replicas &&
         a.min_replicas == b.min_replicas && a.array == b.array && a.array_indices == b.array_indices &&
         a.resources == b.resources && a.command == b.command && a.script == b.script &&
         a.script_args == b.script_args && a.image == b.image && a.mounts == b.mounts && a.env == b.env &&
         a.secret_env == b.secret_env && a.working_dir == b.working_dir && a.stdout_path == b.stdout_path &&
         a.stderr_path == b.stderr_path && a.time_limit == b.time_limit && a.topology == b.topology &&
         a.stall_timeout == b.stall_timeout && a.checkpoint == b.checkpoint && a.limit_signal == b.limit_signal &&
         a.retry == b.retry && a.dependencies == b.dependencies && a.dependencies_any == b.dependencies_any &&
         a.begin_time == b.begin_time && a.hold == b.hold && a.spot == b.spot && a.one_per_node == b.one_per_node &&
         a.exclusive == b.exclusive && a.features == b.features && a.singleton == b.singleton && a.slurm == b.slurm &&
         a.reservation == b.reservation && a.labels == b.labels;
}

StatusOr<JobSpec> ParseJobSpecJson(std::string_view text) { return FromTree(LoadJsonTree(text)); }

StatusOr<JobSpec> ParseJobSpecYaml(std::string_view text) { return FromTree(LoadYamlTree(text)); }

bool IsJsonMediaType(std::string_view content_type) { return MediaType(content_type) == "application/json"; }

bool IsSpecMediaType(std::string_view content_type) {
  const std::string type = MediaType(content_type);
  return type.empty() || type == "application/json" || type == "application/yaml" || type == "application/x-yaml" ||
         type == "text/yaml";
}

StatusOr<JobSpec> ParseJobSpec(std::string_view text, std::string_view content_type, const SpecDefaults& defaults) {
  const std::string type = MediaType(content_type);
  if (type == "application/json") return FromTree(LoadJsonTree(text), defaults);
  if (type == "application/yaml" || type == "application/x-yaml" || type == "text/yaml") {
    return FromTree(LoadYamlTree(text), defaults);
  }
  if (!type.empty()) {
    return InvalidArgument(
        "unsupported content type " + QuoteForMessage(content_type) + "; expected application/json or application/yaml",
        "spec");
  }
  return FromTree(LooksLikeJson(text) ? LoadJsonTree(text) : LoadYamlTree(text), defaults);
}

std::string JobSpecToJson(const JobSpec& s) {
  std::string out;
  out.reserve(512);
  JsonWriter w(out);
  const auto optional_string = [&w](const char* key, const std::optional<std::string>& v) {
    w.Key(key);
    v.has_value() ? w.String(*v) : w.Null();
  };
  w.BeginObject();
  w.Key("name").String(s.name);
  w.Key("queue").String(s.queue);
  w.Key("priority").String(s.priority);
  if (s.min_replicas > 0) {
    w.Key("replicas").BeginObject().Key("min").Int(s.min_replicas).Key("max").Int(s.replicas).EndObject();
  } else {
    w.Key("replicas").Int(s.replicas);
  }
  w.Key("array");
  if (s.array_indices) {
    w.String(ArrayIndicesText(*s.array_indices));
  } else {
    s.array > 0 ? w.Int(s.array) : w.Null();
  }
  const int64_t milli = s.resources.cpu_milli;
  w.Key("resources").BeginObject().Key("gpus").Int(s.resources.gpus);
  optional_string("gpuType", s.resources.gpu_type);
  w.Key("cpus");
  milli % 1000 == 0 ? w.Int(milli / 1000) : w.String(std::to_string(milli) + "m");
  w.Key("memory").Int(s.resources.memory_bytes).EndObject();
  w.Key("command");
  if (s.command.empty()) {
    w.Null();
  } else {
    w.BeginArray();
    for (const std::string& c : s.command) w.String(c);
    w.EndArray();
  }
  optional_string("script", s.script);
  if (!s.script_args.empty()) {  // only when given
    w.Key("args").BeginArray();
    for (const std::string& a : s.script_args) w.String(a);
    w.EndArray();
  }
  optional_string("image", s.image);
  // Only when set, as secretEnv.
  if (!s.mounts.empty()) {
    w.Key("mounts").BeginArray();
    for (const JobSpec::Mount& m : s.mounts) {
      w.BeginObject().Key("hostPath").String(m.host_path).Key("containerPath").String(m.container_path);
      w.Key("readOnly").Bool(m.read_only).EndObject();
    }
    w.EndArray();
  }
  AppendStringMap(w, "env", s.env);
  // Only when set: the canonical text of a spec without secrets (and its
  // idempotency fingerprint) stays what it was.
  if (!s.secret_env.empty()) AppendStringMap(w, "secretEnv", s.secret_env);
  optional_string("workingDir", s.working_dir);
  // Only when set, as secretEnv.
  if (s.stdout_path) optional_string("stdout", s.stdout_path);
  if (s.stderr_path) optional_string("stderr", s.stderr_path);
  w.Key("timeLimit").String(DurationText(s.time_limit));
  w.Key("topology").String(core::TopologyScopeName(s.topology));
  w.Key("stallTimeout");
  s.stall_timeout ? w.String(DurationText(*s.stall_timeout)) : w.Null();
  w.Key("checkpoint");
  if (s.checkpoint.has_value()) {
    const CheckpointSpec& c = *s.checkpoint;
    w.BeginObject().Key("dir").String(c.dir).Key("interval");
    c.interval ? w.String(DurationText(*c.interval)) : w.Null();
    w.Key("signal").String(CheckpointSignalName(c.signal));
    w.Key("gracePeriod").String(DurationText(c.grace_period));
    w.Key("keep").Int(c.keep).EndObject();
  } else {
    w.Null();
  }
  if (s.limit_signal) {
    w.Key("limitSignal").BeginObject().Key("signal").String(SignalName(s.limit_signal->signal));
    w.Key("before").String(DurationText(s.limit_signal->before));
    w.Key("to").String(SignalTargetName(s.limit_signal->to)).EndObject();
  }
  w.Key("retry").BeginObject().Key("limit").Int(s.retry.limit);
  w.Key("backoff").BeginObject();
  w.Key("initial").String(DurationText(s.retry.backoff.initial));
  w.Key("factor").Int(s.retry.backoff.factor);
  w.Key("max").String(DurationText(s.retry.backoff.max)).EndObject();
  w.Key("failOnExitCodes").BeginArray();
  for (int32_t code : s.retry.fail_on_exit_codes) w.Int(code);
  w.EndArray();
  w.Key("retryOnOom").Bool(s.retry.retry_on_oom).EndObject();
  w.Key("dependencies").BeginArray();
  for (const core::Dependency& d : s.dependencies) {
    w.BeginObject().Key("type").String(core::DependencyTypeName(d.type)).Key("job").Int(d.job);
    if (d.delay > Duration::Zero()) w.Key("delay").String(d.delay.ToString());
    w.EndObject();
  }
  w.EndArray();
  if (s.dependencies_any) w.Key("dependenciesAny").Bool(true);
  w.Key("beginTime");
  s.begin_time ? w.String(FormatRfc3339Utc(*s.begin_time)) : w.Null();
  w.Key("hold").Bool(s.hold);
  w.Key("spot").Bool(s.spot);
  // Written only when set: the canonical text of every spec accepted
  // before these existed stays the same.
  if (s.one_per_node) w.Key("onePerNode").Bool(true);
  if (s.exclusive) w.Key("exclusive").Bool(true);
  if (s.singleton) w.Key("singleton").Bool(true);
  if (!s.reservation.empty()) w.Key("reservation").String(s.reservation);
  if (s.slurm) {
    w.Key("slurm").BeginObject();
    for (const auto& [key, value] : {std::pair{"partition", &s.slurm->partition}, std::pair{"qos", &s.slurm->qos},
                                     std::pair{"account", &s.slurm->account}}) {
      if (*value) w.Key(key).String(**value);
    }
    for (const auto& [key, value] :
         {std::pair{"tasks", s.slurm->tasks}, std::pair{"tasksPerNode", s.slurm->tasks_per_node},
          std::pair{"cpusPerTask", s.slurm->cpus_per_task}, std::pair{"gpusPerTask", s.slurm->gpus_per_task}}) {
      if (value > 0) w.Key(key).Int(value);
    }
    w.EndObject();
  }
  if (!s.features.empty()) {
    w.Key("features").BeginArray();
    for (const std::string& f : s.features) w.String(f);
    w.EndArray();
  }
  AppendStringMap(w, "labels", s.labels);
  w.EndObject();
  return out;
}

bool ValidImageReference(std::string_view image) {
  return !image.empty() && image.size() <= 512 && std::isalnum(static_cast<unsigned char>(image.front())) &&
         image.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:@-") ==
             std::string_view::npos;
}

core::JobSpec ToCoreSpec(const JobSpec& s) {
  core::JobSpec c;
  c.name = s.name;
  c.queue = s.queue;
  c.priority_class = s.priority;
  c.replicas = s.replicas;
  c.min_replicas = s.min_replicas;
  c.per_replica = {s.resources.gpus, s.resources.cpu_milli, s.resources.memory_bytes};
  c.gpu_type = s.resources.gpu_type.value_or("");
  c.time_limit = s.time_limit;
  c.topology = s.topology;
  c.one_per_node = s.one_per_node || s.exclusive;
  c.exclusive = s.exclusive;
  c.dependencies = s.dependencies;
  c.dependencies_any = s.dependencies_any;
  c.begin_time = s.begin_time;
  c.hold = s.hold;
  c.reservation = s.reservation;
  // A container job runs where its agent reports Podman, and GPUs given
  // to containers when it has GPUs (agent/container_support.h).
  if (s.image && !s.image->empty()) {
    c.required_features.push_back("containers");
    if (s.resources.gpus > 0) c.required_features.push_back("gpu-containers");
  }
  c.required_features.insert(c.required_features.end(), s.features.begin(), s.features.end());
  // Every node outside the spot pool has "on-demand" (core/node.h).
  if (!s.spot) c.required_features.push_back(std::string(core::kOnDemandFeature));
  if (s.checkpoint && s.checkpoint->interval) c.checkpoint_interval = *s.checkpoint->interval;
  return c;
}

}  // namespace muster::api
