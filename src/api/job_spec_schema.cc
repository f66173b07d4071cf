// The job spec schema, field by field. Limits live here as named constants;
// job_spec.h documents them for users.
#include "api/job_spec_schema.h"

#include "api/output_pattern.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "api/output_pattern.h"
#include "api/spec_reader.h"
#include "common/rfc3339.h"
#include "common/signal_name.h"

namespace muster::api {
namespace {

using Kind = TreeNode::Kind;

constexpr int64_t kMaxReplicas = 4096;
constexpr int64_t kMaxArray = 10000;
constexpr int64_t kMaxGpus = 1024;
constexpr int64_t kMaxCpuMilli = int64_t{4096} * 1000;
constexpr int64_t kMaxMemoryBytes = int64_t{64} << 40;
constexpr size_t kMaxCommandItems = 4096;
constexpr size_t kMaxEnv = 1024;
constexpr size_t kMaxLabels = 64;
constexpr size_t kMaxDependencies = 1024;
constexpr size_t kMaxExitCodes = 256;
constexpr Duration kYear = Duration::Hours(365 * 24);
constexpr Duration kDay = Duration::Hours(24);

constexpr StringRule kNameRule{1, 128, Charset::kName,
                               "1 to 128 characters of [A-Za-z0-9._-], starting with a letter or digit"};
constexpr StringRule kGpuTypeRule{1, 64, Charset::kName,
                                  "1 to 64 characters of [A-Za-z0-9._-], starting with a letter or digit"};
constexpr StringRule kArgRule{0, 64 << 10, Charset::kText, "a string of at most 64 KiB without NUL bytes"};
constexpr StringRule kProgramRule{1, 64 << 10, Charset::kText,
                                  "a program name or path of 1 byte to 64 KiB without NUL bytes"};
constexpr StringRule kScriptRule{1, 1 << 20, Charset::kText, "a script of 1 byte to 1 MiB without NUL bytes"};
constexpr StringRule kImageRule{1, 512, Charset::kPrintable,
                                "an image of 1 to 512 characters without control characters"};
constexpr StringRule kPathRule{1, 4096, Charset::kAbsPath,
                               "an absolute path (starting with \"/\", at most 4096 bytes, no "
                               "control characters)"};
constexpr StringRule kOutputRule{1, 4096, Charset::kPrintable,
                                 "a file path (absolute, or relative to workingDir; at most 4096 bytes, no control "
                                 "characters) with %j, %a, %A, %x, %t, %u, %N or %%"};
constexpr StringRule kEnvNameRule{1, 256, Charset::kEnvName,
                                  "a variable name matching [A-Za-z_][A-Za-z0-9_]*, at most 256 characters"};
constexpr StringRule kEnvValueRule{0, 64 << 10, Charset::kLine,
                                   "a string of at most 64 KiB without NUL bytes or line breaks"};
constexpr StringRule kLabelKeyRule{1, 256, Charset::kPrintable,
                                   "a label key of 1 to 256 characters without control characters"};
constexpr StringRule kLabelValueRule{0, 256, Charset::kPrintable,
                                     "a label value of at most 256 characters without control characters"};
constexpr StringRule kWordRule{0, 64, Charset::kPrintable, "a string"};  // enum names
constexpr StringRule kTimestampRule{
    1, 64, Charset::kPrintable,
    "an RFC 3339 timestamp such as \"2026-11-26T10:00:00Z\" or \"2026-11-26T11:00:00+01:00\""};

// Below a second a job would be stopped before it could start (Slurm's
// smallest limit is a minute).
constexpr DurationRule kTimeLimitRule{false, true, kYear, "365 days", Duration::Seconds(1), "1s"};
constexpr DurationRule kIntervalRule{false, false, kYear, "365 days"};
constexpr DurationRule kGraceRule{true, false, Duration::Hours(1), "1 hour"};
constexpr DurationRule kStallRule{false, false, Duration::Hours(24 * 7), "7 days"};
constexpr DurationRule kBackoffRule{true, false, kDay, "1 day"};
constexpr DurationRule kDelayRule{true, false, kYear, "365 days"};

// Checks a map key as if it were a string value at `path`.
Status CheckKey(const std::string& key, const std::string& path, const StringRule& rule) {
  TreeNode node;
  node.kind = Kind::kString;
  node.text = key;
  return ReadString(node, path, rule).status();
}

// A string naming one of `names` (parallel to `values`).
template <typename T, size_t N>
StatusOr<T> ReadEnum(const TreeNode& node, const std::string& path, const char* const (&names)[N], const T (&values)[N],
                     const char* expected) {
  StatusOr<std::string> s = ReadString(node, path, kWordRule);
  if (s.ok()) {
    for (size_t i = 0; i < N; ++i) {
      if (*s == names[i]) return values[i];
    }
  }
  return Expected(node, path, expected);
}

StatusOr<core::TopologyScope> ReadTopology(const TreeNode& node, const std::string& path) {
  static constexpr const char* kNames[] = {"node", "leaf", "spine", "any"};
  static constexpr core::TopologyScope kValues[] = {core::TopologyScope::kNode, core::TopologyScope::kLeaf,
                                                    core::TopologyScope::kSpine, core::TopologyScope::kAny};
  return ReadEnum(node, path, kNames, kValues, "one of node, leaf, spine or any");
}

StatusOr<CheckpointSignal> ReadSignal(const TreeNode& node, const std::string& path) {
  static constexpr const char* kNames[] = {"SIGUSR1", "SIGUSR2", "SIGTERM", "SIGINT", "USR1", "USR2", "TERM", "INT"};
  static constexpr CheckpointSignal kValues[] = {
      CheckpointSignal::kSigUsr1, CheckpointSignal::kSigUsr2, CheckpointSignal::kSigTerm, CheckpointSignal::kSigInt,
      CheckpointSignal::kSigUsr1, CheckpointSignal::kSigUsr2, CheckpointSignal::kSigTerm, CheckpointSignal::kSigInt};
  return ReadEnum(node, path, kNames, kValues, "one of SIGUSR1, SIGUSR2, SIGTERM or SIGINT");
}

StatusOr<core::DependencyType> ReadDependencyType(const TreeNode& node, const std::string& path) {
  static constexpr const char* kNames[] = {"afterok", "afterany", "afternotok", "after", "aftercorr"};
  static constexpr core::DependencyType kValues[] = {core::DependencyType::kAfterOk, core::DependencyType::kAfterAny,
                                                     core::DependencyType::kAfterNotOk, core::DependencyType::kAfter,
                                                     core::DependencyType::kAfterCorr};
  return ReadEnum(node, path, kNames, kValues, "one of afterok, afterany, afternotok, after or aftercorr");
}

StatusOr<ResourceSpec> ReadResources(const TreeNode& node, const std::string& path) {
  static const std::vector<std::string> kFields = {"gpus", "gpuType", "cpus", "memory"};
  ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(node, path, kFields));
  ResourceSpec r;
  RETURN_IF_ERROR(obj.Read("gpus", r.gpus, ReadInt, int64_t{0}, kMaxGpus, std::string_view()));
  RETURN_IF_ERROR(obj.Read("gpuType", r.gpu_type, ReadString, kGpuTypeRule));
  RETURN_IF_ERROR(obj.Read("cpus", r.cpu_milli, ReadCpuMilli, kMaxCpuMilli));
  RETURN_IF_ERROR(obj.Read("memory", r.memory_bytes, ReadMemoryBytes, kMaxMemoryBytes));
  return r;
}

// array: N (indices 0..N-1) or Slurm's "0-15:4,20%2" (api/array_indices.h).
StatusOr<ArrayIndices> ReadArray(const TreeNode& node, const std::string& path) {
  static constexpr StringRule kRule{
      1, 4096, Charset::kText, "an integer from 1 to 10000, or Slurm's indices such as \"0-15:4%2\" (at most 10000)"};
  if (node.kind != Kind::kString) {
    ASSIGN_OR_RETURN(const int64_t n, ReadInt(node, path, 1, kMaxArray, kRule.expected));
    ArrayIndices a;
    for (int32_t i = 0; i < n; ++i) a.indices.push_back(i);
    return a;
  }
  ASSIGN_OR_RETURN(const std::string text, ReadString(node, path, kRule));
  auto a = ParseArrayIndices(text, kMaxArray);
  if (!a.ok()) return InvalidArgument(a.status().message(), path);
  return *a;
}

// features: node features every node of the job must have; an item may be
// a choice of features joined by '|' (each node has one of them).
StatusOr<std::vector<std::string>> ReadFeatures(const TreeNode& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<TreePtr> items, ReadList(node, path, 0, 64, "a list of at most 64 feature names"));
  static constexpr StringRule kChoiceRule{1, 260, Charset::kPrintable, "a feature name, or names joined by |"};
  std::vector<std::string> out;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string at = IndexPath(path, i);
    ASSIGN_OR_RETURN(std::string f, ReadString(*items[i], at, kChoiceRule));
    size_t alternatives = 0;
    for (size_t start = 0; start <= f.size(); ++alternatives) {
      const size_t bar = std::min(f.find('|', start), f.size());
      TreeNode one;
      one.kind = TreeNode::Kind::kString;
      one.text = f.substr(start, bar - start);
      if (!ReadString(one, at, kGpuTypeRule).ok()) {
        return Expected(*items[i], at,
                        "a feature name of 1 to 64 characters of [A-Za-z0-9._-] starting with a letter or digit, or "
                        "at most 4 such names joined by | (any of them)");
      }
      start = bar + 1;
    }
    if (alternatives > 4) return Expected(*items[i], at, "at most 4 names joined by | (any of them)");
    out.push_back(std::move(f));
  }
  return out;
}

StatusOr<SlurmSpec> ReadSlurmSpec(const TreeNode& node, const std::string& path) {
  static const std::vector<std::string> kFields = {"partition",    "qos",         "account",    "tasks",
                                                   "tasksPerNode", "cpusPerTask", "gpusPerTask"};
  ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(node, path, kFields));
  static constexpr StringRule kRule{1, 128, Charset::kPrintable, "1 to 128 characters without control characters"};
  SlurmSpec n;
  RETURN_IF_ERROR(obj.Read("partition", n.partition, ReadString, kRule));
  RETURN_IF_ERROR(obj.Read("qos", n.qos, ReadString, kRule));
  RETURN_IF_ERROR(obj.Read("account", n.account, ReadString, kRule));
  RETURN_IF_ERROR(obj.Read("tasks", n.tasks, ReadInt, int64_t{1}, int64_t{1} << 24, std::string_view()));
  RETURN_IF_ERROR(
      obj.Read("tasksPerNode", n.tasks_per_node, ReadInt, int64_t{1}, int64_t{1} << 20, std::string_view()));
  RETURN_IF_ERROR(obj.Read("cpusPerTask", n.cpus_per_task, ReadInt, int64_t{1}, int64_t{4096}, std::string_view()));
  RETURN_IF_ERROR(obj.Read("gpusPerTask", n.gpus_per_task, ReadInt, int64_t{1}, int64_t{1024}, std::string_view()));
  return n;
}

StatusOr<std::vector<std::string>> ReadCommand(const TreeNode& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<TreePtr> items,
                   ReadList(node, path, 1, kMaxCommandItems, "a list of 1 to 4096 strings"));
  std::vector<std::string> out;
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(std::string arg, ReadString(*items[i], IndexPath(path, i), i == 0 ? kProgramRule : kArgRule));
    out.push_back(std::move(arg));
  }
  return out;
}

// A script's arguments: as a command's items after its program.
StatusOr<std::vector<std::string>> ReadArguments(const TreeNode& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<TreePtr> items,
                   ReadList(node, path, 1, kMaxCommandItems - 1, "a list of 1 to 4095 strings"));
  std::vector<std::string> out;
  for (size_t i = 0; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(std::string arg, ReadString(*items[i], IndexPath(path, i), kArgRule));
    out.push_back(std::move(arg));
  }
  return out;
}

// env: {NAME: value} or [{name: NAME, value: value}].
StatusOr<std::map<std::string, std::string>> ReadEnv(const TreeNode& node, const std::string& path) {
  std::map<std::string, std::string> env;
  if (node.kind == Kind::kList) {
    ASSIGN_OR_RETURN(std::vector<TreePtr> items,
                     ReadList(node, path, 0, kMaxEnv, "a list of at most 1024 {name, value} objects"));
    static const std::vector<std::string> kFields = {"name", "value"};
    for (size_t i = 0; i < items.size(); ++i) {
      ASSIGN_OR_RETURN(ObjectReader obj,
                       ObjectReader::Open(*items[i], IndexPath(path, i), kFields, "an object {name, value}"));
      if (obj.Find("name") == nullptr) return InvalidArgument("is required", obj.Path("name"));
      std::string name, value;
      RETURN_IF_ERROR(obj.Read("name", name, ReadString, kEnvNameRule));
      RETURN_IF_ERROR(obj.Read("value", value, ReadString, kEnvValueRule));
      if (!env.emplace(name, std::move(value)).second) {
        return InvalidArgument("duplicate variable " + QuoteForMessage(name), obj.Path("name"));
      }
    }
    return env;
  }
  if (node.kind != Kind::kMap || node.fields.size() > kMaxEnv) {
    return Expected(node, path, "an object of at most 1024 variables or a list of {name, value}");
  }
  for (const auto& [key, value] : node.fields) {
    const std::string key_path = ChildPath(path, key);
    RETURN_IF_ERROR(CheckKey(key, key_path, kEnvNameRule));
    std::string v;  // null: empty value
    if (value->kind != Kind::kNull) {
      ASSIGN_OR_RETURN(v, ReadString(*value, key_path, kEnvValueRule));
    }
    if (!env.emplace(key, std::move(v)).second) return InvalidArgument("duplicate field", key_path);
  }
  return env;
}

StatusOr<std::map<std::string, std::string>> ReadLabels(const TreeNode& node, const std::string& path) {
  if (node.kind != Kind::kMap || node.fields.size() > kMaxLabels) {
    return Expected(node, path, "an object of at most 64 labels");
  }
  std::map<std::string, std::string> labels;
  for (const auto& [key, value] : node.fields) {
    const std::string key_path = ChildPath(path, key);
    RETURN_IF_ERROR(CheckKey(key, key_path, kLabelKeyRule));
    std::string v;
    if (value->kind != Kind::kNull) {
      ASSIGN_OR_RETURN(v, ReadString(*value, key_path, kLabelValueRule));
    }
    if (!labels.emplace(key, std::move(v)).second) return InvalidArgument("duplicate field", key_path);
  }
  return labels;
}

StatusOr<CheckpointSpec> ReadCheckpoint(const TreeNode& node, const std::string& path, const SpecDefaults& defaults) {
  static const std::vector<std::string> kFields = {"dir", "interval", "signal", "gracePeriod", "keep"};
  ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(node, path, kFields));
  CheckpointSpec c;
  c.grace_period = defaults.grace_period;
  c.keep = defaults.keep;
  if (obj.Find("dir") == nullptr) return InvalidArgument("is required", obj.Path("dir"));
  RETURN_IF_ERROR(obj.Read("dir", c.dir, ReadString, kPathRule));
  RETURN_IF_ERROR(obj.Read("interval", c.interval, ReadDuration, kIntervalRule));
  RETURN_IF_ERROR(obj.Read("signal", c.signal, ReadSignal));
  RETURN_IF_ERROR(obj.Read("gracePeriod", c.grace_period, ReadDuration, kGraceRule));
  RETURN_IF_ERROR(obj.Read("keep", c.keep, ReadInt, int64_t{1}, int64_t{1000}, std::string_view()));
  return c;
}

StatusOr<LimitSignal> ReadLimitSignal(const TreeNode& node, const std::string& path) {
  static const std::vector<std::string> kFields = {"signal", "before", "to"};
  ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(node, path, kFields));
  LimitSignal l;
  if (const TreeNode* sig = obj.Find("signal"); sig != nullptr) {
    StatusOr<std::string> name = ReadString(*sig, obj.Path("signal"), kWordRule);
    const std::optional<int> number = name.ok() ? SignalNumber(*name) : std::nullopt;
    if (!number) return Expected(*sig, obj.Path("signal"), "a signal name (USR1, SIGTERM, ...) or number from 1 to 64");
    l.signal = *number;
  }
  static constexpr DurationRule kBeforeRule{true, false, Duration::Seconds(65535), "65535 s"};
  RETURN_IF_ERROR(obj.Read("before", l.before, ReadDuration, kBeforeRule));
  if (const TreeNode* to = obj.Find("to"); to != nullptr) {
    StatusOr<std::string> name = ReadString(*to, obj.Path("to"), kWordRule);
    const std::optional<SignalTarget> t = name.ok() ? SignalTargetFromName(*name) : std::nullopt;
    if (!t) return Expected(*to, obj.Path("to"), "one of all, batch or steps");
    l.to = *t;
  }
  return l;
}

// replicas: a count, or {min, max} for an elastic job.
struct ReplicaRange {
  int32_t min = 0, max = 1;
};
StatusOr<ReplicaRange> ReadReplicas(const TreeNode& node, const std::string& path) {
  ReplicaRange out;
  if (node.kind != TreeNode::Kind::kMap) {
    ASSIGN_OR_RETURN(const int64_t n, ReadInt(node, path, 1, kMaxReplicas,
                                              "an integer from 1 to " + std::to_string(kMaxReplicas) +
                                                  ", or {min, max} for an elastic job"));
    out.max = static_cast<int32_t>(n);
    return out;
  }
  static const std::vector<std::string> kFields = {"min", "max"};
  ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(node, path, kFields));
  for (const char* key : {"min", "max"}) {
    if (obj.Find(key) == nullptr) return InvalidArgument("is required for an elastic job", obj.Path(key));
  }
  RETURN_IF_ERROR(obj.Read("min", out.min, ReadInt, int64_t{1}, kMaxReplicas, std::string_view()));
  RETURN_IF_ERROR(obj.Read("max", out.max, ReadInt, int64_t{1}, kMaxReplicas, std::string_view()));
  if (out.max < out.min) {
    return InvalidArgument("must be at least min (" + std::to_string(out.min) + "), got " + std::to_string(out.max),
                           obj.Path("max"));
  }
  if (out.min == out.max) out.min = 0;  // a fixed gang
  return out;
}

StatusOr<BackoffSpec> ReadBackoff(const TreeNode& node, const std::string& path, const BackoffSpec& base) {
  static const std::vector<std::string> kFields = {"initial", "factor", "max"};
  ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(node, path, kFields));
  BackoffSpec b = base;
  RETURN_IF_ERROR(obj.Read("initial", b.initial, ReadDuration, kBackoffRule));
  RETURN_IF_ERROR(obj.Read("factor", b.factor, ReadInt, int64_t{1}, int64_t{10}, std::string_view()));
  RETURN_IF_ERROR(obj.Read("max", b.max, ReadDuration, kBackoffRule));
  if (b.max < b.initial) {
    return InvalidArgument("must be at least initial (" + b.initial.ToString() + "), got " + b.max.ToString(),
                           obj.Path("max"));
  }
  return b;
}

StatusOr<std::vector<int32_t>> ReadExitCodes(const TreeNode& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<TreePtr> items,
                   ReadList(node, path, 0, kMaxExitCodes, "a list of at most 256 exit codes"));
  std::vector<int32_t> out;
  for (size_t i = 0; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t code, ReadInt(*items[i], IndexPath(path, i), 0, 255));
    out.push_back(static_cast<int32_t>(code));
  }
  return out;
}

StatusOr<RetrySpec> ReadRetry(const TreeNode& node, const std::string& path, const RetrySpec& base) {
  static const std::vector<std::string> kFields = {"limit", "backoff", "failOnExitCodes", "retryOnOom"};
  ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(node, path, kFields));
  RetrySpec r = base;
  RETURN_IF_ERROR(obj.Read("limit", r.limit, ReadInt, int64_t{0}, int64_t{100}, std::string_view()));
  RETURN_IF_ERROR(obj.Read("backoff", r.backoff, ReadBackoff, base.backoff));
  RETURN_IF_ERROR(obj.Read("failOnExitCodes", r.fail_on_exit_codes, ReadExitCodes));
  RETURN_IF_ERROR(obj.Read("retryOnOom", r.retry_on_oom, ReadBool));
  return r;
}

// A positive job id written as decimal digits.
bool ParseJobId(std::string_view s, core::JobId& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out > 0;
}

// The MINUTES of Slurm's after:ID+MINUTES, at most a year's.
StatusOr<Duration> ParseDelayMinutes(core::DependencyType type, std::string_view minutes, std::string_view item,
                                     const std::string& path) {
  if (type != core::DependencyType::kAfter) {
    return InvalidArgument("a delay (+MINUTES) applies to after only, got " + QuoteForMessage(item), path);
  }
  int64_t m = 0;
  auto [p, ec] = std::from_chars(minutes.data(), minutes.data() + minutes.size(), m);
  if (minutes.empty() || ec != std::errc() || p != minutes.data() + minutes.size() || m < 0 || m > 525600) {
    return InvalidArgument(
        "must give the delay after + as whole minutes from 0 to 525600 (a year), got " + QuoteForMessage(item), path);
  }
  return Duration::Seconds(m * 60);
}

// Slurm's "afterok:12:13,afterany:14"; an id may be a range "12-15" (what
// `muster submit --parsable --array` prints), each job of it a dependency.
StatusOr<std::vector<core::Dependency>> ParseDependencyString(const TreeNode& node, const std::string& path) {
  static constexpr const char* kForm = "dependencies such as \"afterok:12:13,afterany:14-20\"";
  StatusOr<std::string> text = ReadString(node, path, kArgRule);
  if (!text.ok()) return Expected(node, path, kForm);
  std::vector<core::Dependency> out;
  std::string_view rest = *text;
  // "," joins what must all hold, "?" what may any hold (Slurm's); not both.
  const char separator = rest.find('?') != std::string_view::npos ? '?' : ',';
  if (separator == '?' && rest.find(',') != std::string_view::npos) {
    return InvalidArgument(
        "may join dependencies with , (all must hold) or ? (any may), not both, got " + QuoteForMessage(rest), path);
  }
  while (true) {
    const size_t comma = rest.find(separator);
    const std::string_view item = rest.substr(0, comma);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos || colon + 1 == item.size()) {
      return InvalidArgument("must be " + std::string(kForm) + ", got " + QuoteForMessage(item), path);
    }
    TreeNode type_node;
    type_node.kind = Kind::kString;
    type_node.text = std::string(item.substr(0, colon));
    ASSIGN_OR_RETURN(core::DependencyType type, ReadDependencyType(type_node, path));
    std::string_view ids = item.substr(colon + 1);
    while (true) {
      const size_t next = ids.find(':');
      std::string_view id_text = ids.substr(0, next);
      // after:ID+MINUTES: that long after the job started.
      Duration delay = Duration::Zero();
      if (const size_t plus = id_text.find('+'); plus != std::string_view::npos) {
        ASSIGN_OR_RETURN(delay, ParseDelayMinutes(type, id_text.substr(plus + 1), item, path));
        id_text = id_text.substr(0, plus);
      }
      const size_t dash = id_text.find('-');
      core::JobId first = 0, last = 0;
      if (!ParseJobId(id_text.substr(0, dash), first) ||
          !ParseJobId(dash == std::string_view::npos ? id_text : id_text.substr(dash + 1), last)) {
        return InvalidArgument("must name jobs by positive integer ids or ranges of them, got " +
                                   QuoteForMessage(id_text) + " in " + QuoteForMessage(item),
                               path);
      }
      if (last < first) {
        return InvalidArgument("must give a range from the lower id to the higher, got " + QuoteForMessage(id_text) +
                                   " in " + QuoteForMessage(item),
                               path);
      }
      if (last - first >= static_cast<core::JobId>(kMaxDependencies - out.size())) {
        return InvalidArgument("must list at most 1024 dependencies", path);
      }
      for (core::JobId id = first; id <= last; ++id) out.push_back({type, id, delay});
      if (next == std::string_view::npos) break;
      ids.remove_prefix(next + 1);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

StatusOr<std::vector<core::Dependency>> ReadDependencies(const TreeNode& node, const std::string& path) {
  if (node.kind != Kind::kList) return ParseDependencyString(node, path);
  ASSIGN_OR_RETURN(std::vector<TreePtr> items,
                   ReadList(node, path, 0, kMaxDependencies, "a list of at most 1024 dependencies"));
  static const std::vector<std::string> kFields = {"type", "job", "delay"};
  std::vector<core::Dependency> out;
  for (size_t i = 0; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(ObjectReader obj,
                     ObjectReader::Open(*items[i], IndexPath(path, i), kFields, "an object {type, job}"));
    for (const char* required : {"type", "job"}) {
      if (obj.Find(required) == nullptr) return InvalidArgument("is required", obj.Path(required));
    }
    core::Dependency d;
    RETURN_IF_ERROR(obj.Read("type", d.type, ReadDependencyType));
    RETURN_IF_ERROR(
        obj.Read("job", d.job, ReadInt, int64_t{1}, INT64_MAX, std::string_view("a positive integer job id")));
    RETURN_IF_ERROR(obj.Read("delay", d.delay, ReadDuration, kDelayRule));
    if (d.delay > Duration::Zero() && d.type != core::DependencyType::kAfter) {
      return InvalidArgument("applies to type after only", obj.Path("delay"));
    }
    out.push_back(d);
  }
  return out;
}

StatusOr<std::vector<JobSpec::Mount>> ReadMounts(const TreeNode& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<TreePtr> items,
                   ReadList(node, path, 0, 64, "a list of at most 64 mounts {hostPath, containerPath, readOnly}"));
  static const std::vector<std::string> kFields = {"hostPath", "containerPath", "readOnly"};
  std::vector<JobSpec::Mount> out;
  for (size_t i = 0; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(*items[i], IndexPath(path, i), kFields,
                                                          "an object {hostPath, containerPath, readOnly}"));
    JobSpec::Mount m;
    for (auto [key, out_path] : {std::pair{"hostPath", &m.host_path}, std::pair{"containerPath", &m.container_path}}) {
      if (obj.Find(key) == nullptr) return InvalidArgument("is required", obj.Path(key));
      RETURN_IF_ERROR(obj.Read(key, *out_path, ReadString, kPathRule));
      // Podman's --volume syntax separates its parts with ':' and options with ','.
      if (out_path->find_first_of(":,") != std::string::npos) {
        return InvalidArgument("may not contain ':' or ','", obj.Path(key));
      }
    }
    const std::string& c = m.container_path;
    for (const char* system : {"/proc", "/sys", "/dev"}) {
      const std::string dir = system;
      if (c == dir || c.rfind(dir + "/", 0) == 0) {
        return InvalidArgument("may not be " + dir + " or below it (the container's own)", obj.Path("containerPath"));
      }
    }
    if (c.find_first_not_of('/') == std::string::npos) {
      return InvalidArgument("may not be / (the image's root)", obj.Path("containerPath"));
    }
    for (const JobSpec::Mount& earlier : out) {
      if (earlier.container_path == c) return InvalidArgument("is mounted twice", obj.Path("containerPath"));
    }
    RETURN_IF_ERROR(obj.Read("readOnly", m.read_only, ReadBool));
    out.push_back(std::move(m));
  }
  return out;
}

StatusOr<Time> ReadTimestamp(const TreeNode& node, const std::string& path) {
  StatusOr<std::string> s = ReadString(node, path, kTimestampRule);
  std::optional<Time> t;
  if (s.ok()) t = ParseRfc3339Utc(*s);
  if (!t.has_value()) return Expected(node, path, kTimestampRule.expected);
  return *t;
}

}  // namespace

StatusOr<JobSpec> JobSpecFromTree(const TreeNode& root, const SpecDefaults& defaults) {
  static const std::vector<std::string> kFields = {
      "name",         "queue",      "priority",  "replicas",     "array",           "resources",  "command",
      "script",       "args",       "image",     "env",          "workingDir",      "timeLimit",  "topology",
      "stallTimeout", "checkpoint", "retry",     "dependencies", "dependenciesAny", "beginTime",  "hold",
      "labels",       "secretEnv",  "stdout",    "stderr",       "mounts",          "spot",       "onePerNode",
      "exclusive",    "features",   "singleton", "slurm",        "limitSignal",     "reservation"};
  ASSIGN_OR_RETURN(ObjectReader obj, ObjectReader::Open(root, "spec", kFields, "an object with the job's fields"));
  JobSpec spec;
  RETURN_IF_ERROR(obj.Read("name", spec.name, ReadString, kNameRule));
  RETURN_IF_ERROR(obj.Read("queue", spec.queue, ReadString, kNameRule));
  spec.priority = defaults.priority;
  RETURN_IF_ERROR(obj.Read("priority", spec.priority, ReadString, kNameRule));
  RETURN_IF_ERROR(obj.Read("slurm", spec.slurm, ReadSlurmSpec));
  SlurmPlacement slurm;
  if (spec.slurm && defaults.map_slurm_names) {
    ASSIGN_OR_RETURN(slurm, MapSlurmNames(*spec.slurm, defaults.slurm, obj.Path("slurm")));
    if (slurm.queue && obj.Find("queue") == nullptr) spec.queue = *slurm.queue;
    if (slurm.priority && obj.Find("priority") == nullptr) spec.priority = *slurm.priority;
  }
  ReplicaRange replicas;
  RETURN_IF_ERROR(obj.Read("replicas", replicas, ReadReplicas));
  spec.replicas = replicas.max;
  spec.min_replicas = replicas.min;
  std::optional<ArrayIndices> array;
  RETURN_IF_ERROR(obj.Read("array", array, ReadArray));
  if (array) {
    spec.array = static_cast<int32_t>(array->indices.size());
    // Indices other than 0..N-1, or a limit, are kept; a plain count is the count.
    if (array->max_running > 0 || array->indices.back() != spec.array - 1) spec.array_indices = std::move(*array);
  }
  RETURN_IF_ERROR(obj.Read("resources", spec.resources, ReadResources));
  ResourceSpec& r = spec.resources;
  if (r.cpu_milli == 0) r.cpu_milli = r.gpus > 0 ? r.gpus * defaults.cpu_milli_per_gpu : defaults.cpu_milli;
  if (r.memory_bytes == 0 && defaults.memory_per_cpu > 0) {
    r.memory_bytes = std::max<int64_t>(1, (r.cpu_milli + 999) / 1000) * defaults.memory_per_cpu;
  }
  if (r.memory_bytes == 0) r.memory_bytes = r.gpus > 0 ? r.gpus * defaults.memory_per_gpu : defaults.memory_bytes;
  RETURN_IF_ERROR(obj.Read("command", spec.command, ReadCommand));
  RETURN_IF_ERROR(obj.Read("script", spec.script, ReadString, kScriptRule));
  const bool has_command = obj.Find("command") != nullptr, has_script = obj.Find("script") != nullptr;
  if (has_command == has_script) {
    return InvalidArgument(
        std::string("must set exactly one of \"command\" or \"script\", got ") + (has_command ? "both" : "neither"),
        "spec");
  }
  if (obj.Find("args") != nullptr) {
    if (!has_script) return InvalidArgument("are a script's arguments; a command takes its own", obj.Path("args"));
    RETURN_IF_ERROR(obj.Read("args", spec.script_args, ReadArguments));
  }
  RETURN_IF_ERROR(obj.Read("image", spec.image, ReadString, kImageRule));
  if (spec.image) {
    // An image reference ([registry/]name[:tag][@digest]); never an option to Podman.
    const std::string& image = *spec.image;
    if (!ValidImageReference(image)) {
      return InvalidArgument(
          "must be an image reference such as nvcr.io/nvidia/pytorch:24.05-py3 (letters, digits "
          "and ._/:@-, starting with a letter or digit), got \"" +
              image.substr(0, 64) + "\"",
          obj.Path("image"));
    }
  }
  RETURN_IF_ERROR(obj.Read("mounts", spec.mounts, ReadMounts));
  if (!spec.mounts.empty() && !spec.image) {
    return InvalidArgument("needs image: a job without one runs on the node and sees its files as they are",
                           obj.Path("mounts"));
  }
  RETURN_IF_ERROR(obj.Read("env", spec.env, ReadEnv));
  RETURN_IF_ERROR(obj.Read("secretEnv", spec.secret_env, ReadEnv));
  for (const auto& [name, _] : spec.secret_env) {
    if (spec.env.count(name)) {
      return InvalidArgument("is also in env; a variable is secret or not", obj.Path("secretEnv") + "." + name);
    }
  }
  RETURN_IF_ERROR(obj.Read("workingDir", spec.working_dir, ReadString, kPathRule));
  for (auto [key, out] : {std::pair{"stdout", &spec.stdout_path}, std::pair{"stderr", &spec.stderr_path}}) {
    RETURN_IF_ERROR(obj.Read(key, *out, ReadString, kOutputRule));
    if (*out) RETURN_IF_ERROR(CheckOutputPattern(**out, obj.Path(key)));
  }
  spec.time_limit = defaults.time_limit;
  RETURN_IF_ERROR(obj.Read("timeLimit", spec.time_limit, ReadDuration, kTimeLimitRule));
  if (auto it = defaults.max_time_limits.find(spec.priority); it != defaults.max_time_limits.end()) {
    if (obj.Find("timeLimit") != nullptr && spec.time_limit > it->second) {
      const std::string asked = spec.time_limit.is_infinite() ? "unlimited" : spec.time_limit.ToString();
      return InvalidArgument(
          "is " + asked + ", above the maximum of class " + spec.priority + " (" + it->second.ToString() + ")",
          obj.Path("timeLimit"));
    }
    spec.time_limit = std::min(spec.time_limit, it->second);
  }
  RETURN_IF_ERROR(obj.Read("topology", spec.topology, ReadTopology));
  if (spec.min_replicas > 0) {
    // Replicas come and go one by one wherever there is room.
    if (spec.topology != core::TopologyScope::kAny) {
      return InvalidArgument("must be any for an elastic job (replicas.min below replicas.max)", obj.Path("topology"));
    }
    if (spec.array > 0) return InvalidArgument("cannot be an array of elastic jobs", obj.Path("array"));
  }
  RETURN_IF_ERROR(obj.Read("onePerNode", spec.one_per_node, ReadBool));
  RETURN_IF_ERROR(obj.Read("exclusive", spec.exclusive, ReadBool));
  RETURN_IF_ERROR(obj.Read("features", spec.features, ReadFeatures));
  for (const std::string& f : slurm.features) {
    if (std::find(spec.features.begin(), spec.features.end(), f) == spec.features.end()) spec.features.push_back(f);
  }
  RETURN_IF_ERROR(obj.Read("singleton", spec.singleton, ReadBool));
  RETURN_IF_ERROR(obj.Read("reservation", spec.reservation, ReadString, kNameRule));
  if (!spec.reservation.empty() && spec.min_replicas > 0) {
    return InvalidArgument("an elastic job cannot run in a reservation (it would grow past its nodes)",
                           obj.Path("reservation"));
  }
  if (spec.slurm) {
    // Slurm's job model: its nodes are distinct, its script runs on the
    // first, srun's steps reach the others (step/step_wire.h).
    if (spec.min_replicas > 0) {
      return InvalidArgument("a Slurm-style job (slurm) has a fixed number of nodes", obj.Path("replicas"));
    }
    if (spec.image && spec.replicas > 1) {
      return InvalidArgument(
          "a Slurm-style job (slurm) on more than one node cannot run in a container yet: srun "
          "starts its steps on the nodes' hosts",
          obj.Path("image"));
    }
    if (spec.replicas > 1 && spec.topology == core::TopologyScope::kNode) {
      return InvalidArgument(
          "a Slurm-style job (slurm) runs on distinct nodes, which topology node (all on one node) "
          "cannot hold",
          obj.Path("topology"));
    }
    if (spec.replicas > 1) spec.one_per_node = true;
  }
  for (const char* key : {"onePerNode", "exclusive"}) {
    if (obj.Find(key) == nullptr || !(key[0] == 'o' ? spec.one_per_node : spec.exclusive)) continue;
    if (spec.min_replicas > 0)
      return InvalidArgument("cannot be set for an elastic job (replicas.min below replicas.max)", obj.Path(key));
    if (spec.replicas > 1 && spec.topology == core::TopologyScope::kNode) {
      return InvalidArgument(
          "puts each replica on a node of its own, which topology node (all on one node) cannot hold", obj.Path(key));
    }
  }
  RETURN_IF_ERROR(obj.Read("stallTimeout", spec.stall_timeout, ReadDuration, kStallRule));
  RETURN_IF_ERROR(obj.Read("checkpoint", spec.checkpoint, ReadCheckpoint, defaults));
  RETURN_IF_ERROR(obj.Read("limitSignal", spec.limit_signal, ReadLimitSignal));
  if (spec.limit_signal && spec.limit_signal->to == SignalTarget::kSteps && !spec.slurm) {
    return InvalidArgument("\"steps\" are the tasks srun starts, which only a Slurm-style job (with slurm) has",
                           obj.Path("limitSignal") + ".to");
  }
  if (spec.limit_signal && spec.limit_signal->to == SignalTarget::kSteps && !SrunPassesOn(spec.limit_signal->signal)) {
    return InvalidArgument(SignalName(spec.limit_signal->signal) +
                               " cannot reach the steps: srun passes on only HUP, INT, QUIT, TERM, USR1, USR2, ALRM "
                               "and CONT",
                           obj.Path("limitSignal") + ".signal");
  }
  spec.retry = defaults.retry;
  RETURN_IF_ERROR(obj.Read("retry", spec.retry, ReadRetry, defaults.retry));
  RETURN_IF_ERROR(obj.Read("dependencies", spec.dependencies, ReadDependencies));
  RETURN_IF_ERROR(obj.Read("dependenciesAny", spec.dependencies_any, ReadBool));
  if (const TreeNode* d = obj.Find("dependencies");
      d != nullptr && d->kind == Kind::kString && d->text.find('?') != std::string::npos) {
    spec.dependencies_any = true;  // Slurm's afterok:12?afterok:13
  }
  if (spec.dependencies_any && spec.singleton) {
    return InvalidArgument("cannot be joined with dependencies of which any one is enough", obj.Path("singleton"));
  }
  RETURN_IF_ERROR(obj.Read("beginTime", spec.begin_time, ReadTimestamp));
  RETURN_IF_ERROR(obj.Read("hold", spec.hold, ReadBool));
  RETURN_IF_ERROR(obj.Read("spot", spec.spot, ReadBool));
  RETURN_IF_ERROR(obj.Read("labels", spec.labels, ReadLabels));
  return spec;
}

}  // namespace muster::api
