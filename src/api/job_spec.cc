// The job spec codec's entry points: format dispatch, canonical JSON output,
// the core mapping and equality. Parsing is two steps, the same for both
// formats: text -> SpecTree (spec_tree_json.cc / spec_tree_yaml.cc), then
// SpecTree -> JobSpec (job_spec_schema.cc).
#include "api/job_spec.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

#include "api/job_spec_schema.h"
#include "api/rfc3339.h"
#include "api/spec_tree.h"

namespace muster::api {
namespace {

using OrderedJson = nlohmann::ordered_json;

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
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

bool LooksLikeJson(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

OrderedJson OptionalString(const std::optional<std::string>& s) {
  return s.has_value() ? OrderedJson(*s) : OrderedJson(nullptr);
}

std::string DurationText(Duration d) { return d.is_infinite() ? "unlimited" : d.ToString(); }

OrderedJson StringMap(const std::map<std::string, std::string>& m) {
  OrderedJson out = OrderedJson::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

}  // namespace

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
  const auto same_deps = [](const std::vector<core::Dependency>& x,
                            const std::vector<core::Dependency>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                      [](const core::Dependency& p, const core::Dependency& q) {
                        return p.type == q.type && p.job == q.job;
                      });
  };
  return a.name == b.name && a.queue == b.queue && a.priority == b.priority &&
         a.replicas == b.replicas && a.array == b.array && a.resources == b.resources && a.command == b.command &&
         a.script == b.script && a.image == b.image && a.env == b.env &&
         a.working_dir == b.working_dir && a.time_limit == b.time_limit &&
         a.topology == b.topology && a.stall_timeout == b.stall_timeout && a.checkpoint == b.checkpoint && a.retry == b.retry &&
         same_deps(a.dependencies, b.dependencies) && a.begin_time == b.begin_time &&
         a.hold == b.hold && a.labels == b.labels;
}

StatusOr<JobSpec> ParseJobSpecJson(std::string_view text) { return FromTree(LoadJsonTree(text)); }

StatusOr<JobSpec> ParseJobSpecYaml(std::string_view text) { return FromTree(LoadYamlTree(text)); }

StatusOr<JobSpec> ParseJobSpec(std::string_view text, std::string_view content_type, const SpecDefaults& defaults) {
  const std::string type = MediaType(content_type);
  if (type == "application/json") return FromTree(LoadJsonTree(text), defaults);
  if (type == "application/yaml" || type == "application/x-yaml" || type == "text/yaml") {
    return FromTree(LoadYamlTree(text), defaults);
  }
  if (!type.empty()) {
    return InvalidArgument("unsupported content type " + QuoteForMessage(content_type) +
                               "; expected application/json or application/yaml",
                           "spec");
  }
  return FromTree(LooksLikeJson(text) ? LoadJsonTree(text) : LoadYamlTree(text), defaults);
}

std::string JobSpecToJson(const JobSpec& s) {
  OrderedJson j;
  j["name"] = s.name;
  j["queue"] = s.queue;
  j["priority"] = s.priority;
  j["replicas"] = s.replicas;
  j["array"] = s.array > 0 ? OrderedJson(s.array) : OrderedJson(nullptr);
  const int64_t milli = s.resources.cpu_milli;
  j["resources"] = {
      {"gpus", s.resources.gpus},
      {"gpuType", OptionalString(s.resources.gpu_type)},
      {"cpus",
       milli % 1000 == 0 ? OrderedJson(milli / 1000) : OrderedJson(std::to_string(milli) + "m")},
      {"memory", s.resources.memory_bytes},
  };
  j["command"] = s.command.empty() ? OrderedJson(nullptr) : OrderedJson(s.command);
  j["script"] = OptionalString(s.script);
  j["image"] = OptionalString(s.image);
  j["env"] = StringMap(s.env);
  j["workingDir"] = OptionalString(s.working_dir);
  j["timeLimit"] = DurationText(s.time_limit);
  j["topology"] = core::TopologyScopeName(s.topology);
  j["stallTimeout"] = s.stall_timeout ? OrderedJson(DurationText(*s.stall_timeout)) : OrderedJson(nullptr);
  if (s.checkpoint.has_value()) {
    const CheckpointSpec& c = *s.checkpoint;
    j["checkpoint"] = {
        {"dir", c.dir},
        {"interval", c.interval ? OrderedJson(DurationText(*c.interval)) : OrderedJson(nullptr)},
        {"signal", CheckpointSignalName(c.signal)},
        {"gracePeriod", DurationText(c.grace_period)},
        {"keep", c.keep},
    };
  } else {
    j["checkpoint"] = nullptr;
  }
  j["retry"] = {
      {"limit", s.retry.limit},
      {"backoff",
       {{"initial", DurationText(s.retry.backoff.initial)},
        {"factor", s.retry.backoff.factor},
        {"max", DurationText(s.retry.backoff.max)}}},
      {"failOnExitCodes", s.retry.fail_on_exit_codes},
      {"retryOnOom", s.retry.retry_on_oom},
  };
  OrderedJson deps = OrderedJson::array();
  for (const core::Dependency& d : s.dependencies) {
    deps.push_back({{"type", core::DependencyTypeName(d.type)}, {"job", d.job}});
  }
  j["dependencies"] = std::move(deps);
  j["beginTime"] =
      s.begin_time ? OrderedJson(FormatRfc3339Utc(*s.begin_time)) : OrderedJson(nullptr);
  j["hold"] = s.hold;
  j["labels"] = StringMap(s.labels);
  return j.dump(-1, ' ', /*ensure_ascii=*/false, OrderedJson::error_handler_t::replace);
}

core::JobSpec ToCoreSpec(const JobSpec& s) {
  core::JobSpec c;
  c.name = s.name;
  c.queue = s.queue;
  c.priority_class = s.priority;
  c.replicas = s.replicas;
  c.per_replica = {s.resources.gpus, s.resources.cpu_milli, s.resources.memory_bytes};
  c.gpu_type = s.resources.gpu_type.value_or("");
  c.time_limit = s.time_limit;
  c.topology = s.topology;
  c.dependencies = s.dependencies;
  c.begin_time = s.begin_time;
  c.hold = s.hold;
  return c;
}

}  // namespace muster::api
