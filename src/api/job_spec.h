// The API's job spec: what a user submits, its JSON/YAML codec, and the
// mapping to the scheduler's core::JobSpec.
//
// A spec is one flat object, the same in JSON and YAML (camelCase keys):
//
//   name: train-llm                  # 1..128 of [A-Za-z0-9._-]; default "job"
//   queue: research                  # same charset; default "default"
//   priority: high                   # a priority class name; default "normal"
//   replicas: 4                      # 1..4096; default 1 (a gang)
//   replicas: {min: 1, max: 4}       # elastic: starts with what fits (at
//                                    # least min), grows while capacity is
//                                    # free, gives back its newest replicas
//                                    # above min to jobs that need the room;
//                                    # topology any, not an array
//   array: 100                       # 1..10000: submit this many tasks of
//                                    # the spec, one job each (ids in a row)
//   array: "500-16500:1000%26"       # or Slurm's indices (api/array_indices.h):
//                                    # task i gets the i-th index; %K: at most
//                                    # K of its tasks run at once
//   resources:                       # per replica
//     gpus: 8                        # 0..1024; default 0
//     gpuType: H100                  # 1..64 of [A-Za-z0-9._-]; optional (any)
//     cpus: 32                       # 32, 2.5, "500m"; at most 4096 cores
//     memory: 512Gi                  # "512Gi", "16G", integer bytes; <= 64 TiB
//   command: [python, train.py]      # 1..4096 strings of <= 64 KiB ...
//   script: "#!/bin/sh\n..."         # ... or a script (<= 1 MiB): exactly one
//   args: [--epochs, "10"]           # with script only: its $1, $2, ... (as
//                                    # command's items)
//   image: nvcr.io/nvidia/pytorch:24.05   # optional, <= 512 chars: each
//                                    # replica runs in a container of it
//   mounts:                          # with image only; at most 64
//     - {hostPath: /data/imagenet, containerPath: /data, readOnly: true}
//                                    # absolute paths without ':' or ','; not
//                                    # /, /proc, /sys, /dev or below; each
//                                    # containerPath once; readOnly default false
//   env: {NCCL_DEBUG: INFO}          # or [{name: NCCL_DEBUG, value: INFO}];
//                                    # keys [A-Za-z_][A-Za-z0-9_]*, <= 1024
//   workingDir: /work                # absolute path; optional
//   stdout: /shared/logs/%x-%j.%t.out   # optional: also write the output
//                                    # there, as the user (api/output_pattern.h;
//                                    # relative: to workingDir); appended
//   stderr: /shared/logs/%x-%j.%t.err   # optional: errors there (else with stdout)
//   timeLimit: 2h30m                 # "90s", "2h30m", "1-02:00:00", integer
//                                    # seconds, or "unlimited" (the default);
//                                    # > 0 and <= 365 days
//   topology: leaf                   # node | leaf | spine | any (default)
//   stallTimeout: 30m                # optional: once the job has reported
//                                    # progress, this long without a report
//                                    # fails the attempt (a hang); <= 7 days
//   checkpoint:                      # optional
//     dir: /ckpt                     # absolute path; required here
//     interval: 1h                   # optional; > 0, <= 365 days
//     signal: SIGUSR1                # SIGUSR1 (default), SIGUSR2, SIGTERM,
//                                    # SIGINT, also without "SIG"
//     gracePeriod: 5m                # default 5m; <= 1h
//     keep: 3                        # committed checkpoints kept, 1..1000;
//                                    # older ones are deleted (default 3)
//   limitSignal:                     # optional: a signal sent `before` the
//     signal: SIGUSR1                # time limit, the job left running
//     before: 90s                    # (Slurm's --signal=[B:]SIG@TIME): any
//     to: all                        # signal name or number 1..64; before
//                                    # 0..65535 s (default 60 s); to: all
//                                    # (every process of every replica),
//                                    # batch (the batch script's shell) or
//                                    # steps (srun's tasks; with slurm only).
//                                    # Not sent without a time limit
//   retry:
//     limit: 3                       # 0..100; default 3
//     backoff: {initial: 30s, factor: 2, max: 10m}   # these are the defaults;
//                                    # initial and max <= 1 day, max >= initial,
//                                    # factor 1..10
//     failOnExitCodes: [2, 127]      # 0..255, at most 256
//     retryOnOom: false
//   dependencies: "afterok:12:13,afterany:14"   # or [{type: afterok, job: 12}]
//                                    # types afterok, afterany, afternotok,
//                                    # after (once the job has started); all
//                                    # must hold, or with "?" instead of ","
//                                    # (or dependenciesAny: true) any one;
//                                    # at most 1024
//   singleton: false                 # true: waits for every earlier job of its
//                                    # name and user to end (Slurm's
//                                    # --dependency=singleton)
//   slurm: {partition: gpu, qos: high, account: six,   # sbatch's names, mapped
//           tasks: 16, tasksPerNode: 8, cpusPerTask: 10}  # and its tasks (env)
//                                    # by the server's slurm tables onto the
//                                    # queue, priority class and node features
//                                    # (api/slurm_mapping.h); a queue or priority
//                                    # given here too wins
//   beginTime: 2026-11-26T10:00:00Z  # RFC 3339 (Z or +01:00), optional
//   hold: false
//   spot: false                      # true: may run on spot nodes, capacity the
//                                    # cloud may reclaim at short notice (the job
//                                    # is checkpointed and requeued); false:
//                                    # on-demand nodes only
//   onePerNode: false                # true: each replica on a node of its own,
//                                    # never two on one machine (Slurm's
//                                    # --nodes=N means N distinct nodes)
//   exclusive: false                 # true: each replica holds a whole node,
//                                    # idle when it starts, shared with no other
//                                    # job (Slurm's --exclusive); its tasks get
//                                    # all of the node's GPUs, CPUs and memory.
//                                    # Implies onePerNode. Neither with elastic
//                                    # replicas, nor with topology node past 1
//   features: [a100, gpu80]          # node features every node it runs on
//                                    # must have (sbatch -C a100&gpu80); nodes
//                                    # get them from the config or the agent's
//                                    # --feature
//   reservation: maint-dec           # an admin reservation (server/reservations.h):
//                                    # runs only on its nodes, in its window;
//                                    # refused unless it exists and is for the
//                                    # job's user or queue; not elastic
//   labels: {team: nlp}              # <= 64 entries, key 1..256, value <= 256
//
// Reading rules: null (or YAML's empty value) for any field means "not set",
// so the default applies. Integers are integers: 8, not "8" or 8.0. A YAML
// plain scalar given where a string is expected is taken as written (env
// `PORT: 8080` is "8080", `DEBUG: yes` is "yes"); in JSON a string field
// must be a JSON string. Booleans are true/false only. A duration given as a
// string must carry a unit or colons ("90s", "1:30:00"): a bare "90" is
// refused because Slurm would read it as minutes while the integer 90 means
// seconds here. Strings must be valid UTF-8 and may not contain NUL; names,
// paths, image, labels and env names may not contain control characters.
// Unknown and duplicate fields are errors.
//
// Errors: every error is InvalidArgument whose field() is the full path
// ("spec.resources.gpus", "spec.command[2]", "spec.env[\"1BAD\"]") and whose
// message says what was expected and what was got:
//   spec.resources.gpus: must be an integer from 0 to 1024, got "eight"
//   spec.resources.gpu: unknown field; did you mean "gpus"?
// Echoed values are cut to 64 bytes and never contain raw control
// characters. Syntax errors (with the parser's line and column), an input
// over 4 MiB, nesting deeper than 32 levels, more than 100,000 values and
// YAML aliases that would expand past 4 MiB have field "spec".
// The parse functions never throw and never crash on any input.
//
// Thread-safety: free functions over values; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/array_indices.h"
#include "api/slurm_mapping.h"
#include "common/status.h"
#include "common/time.h"
#include "core/job.h"

namespace muster::api {

enum class CheckpointSignal : uint8_t { kSigUsr1, kSigUsr2, kSigTerm, kSigInt };
const char* CheckpointSignalName(CheckpointSignal s);  // "SIGUSR1"

struct ResourceSpec {
  int64_t gpus = 0;                     // per replica
  std::optional<std::string> gpu_type;  // empty: any type
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  bool operator==(const ResourceSpec&) const = default;
};

struct CheckpointSpec {
  std::string dir;                   // absolute path
  std::optional<Duration> interval;  // empty: only when signalled (preemption, time limit)
  CheckpointSignal signal = CheckpointSignal::kSigUsr1;
  Duration grace_period = Duration::Minutes(5);
  int32_t keep = 3;  // committed checkpoints kept by retention
  bool operator==(const CheckpointSpec&) const = default;
};

// Whom a signal for a running job reaches. A Slurm-style job (slurm set)
// is signalled on its first node, where its batch script runs; srun passes
// a signal on to every task of its step, on every node.
//  - kAll: every process of the job (of every replica; of a Slurm-style
//    job, of the batch script's node: its shell, its sruns and their tasks).
//  - kBatch: the batch script's shell alone (Slurm's B:, scancel -b): of
//    every replica, its main process.
//  - kSteps: srun's tasks (Slurm's default): every srun of the batch script
//    passes it on. Slurm-style jobs only.
enum class SignalTarget : uint8_t { kAll, kBatch, kSteps };
const char* SignalTargetName(SignalTarget t);  // "all", "batch", "steps"
std::optional<SignalTarget> SignalTargetFromName(std::string_view name);

struct LimitSignal {
  int32_t signal = 10;  // SIGUSR1
  Duration before = Duration::Seconds(60);
  SignalTarget to = SignalTarget::kAll;
  bool operator==(const LimitSignal&) const = default;
};

struct BackoffSpec {
  Duration initial = Duration::Seconds(30);
  int32_t factor = 2;
  Duration max = Duration::Minutes(10);
  bool operator==(const BackoffSpec&) const = default;
};

struct RetrySpec {
  int32_t limit = 3;
  BackoffSpec backoff;
  std::vector<int32_t> fail_on_exit_codes;  // exit codes that are never retried
  bool retry_on_oom = false;
  bool operator==(const RetrySpec&) const = default;
};

// A parsed, valid spec. (A default-constructed JobSpec is not valid: it has
// neither command nor script.)
struct JobSpec {
  std::string name = "job";
  std::string queue = "default";
  std::string priority = "normal";
  int32_t replicas = 1;      // with min_replicas: the most
  int32_t min_replicas = 0;  // > 0: elastic, from this many to `replicas`
  int32_t array = 0;         // > 0: an array of this many tasks, one job each
  // Set when the array's indices are not 0..array-1, or it has a limit on
  // tasks running at once (Slurm's --array=1-10%2).
  std::optional<ArrayIndices> array_indices;
  ResourceSpec resources;
  std::vector<std::string> command;      // exactly one of command (non-empty) ...
  std::optional<std::string> script;     // ... and script is set
  std::vector<std::string> script_args;  // the script's arguments ($1, $2, ...)
  std::optional<std::string> image;
  struct Mount {
    std::string host_path, container_path;
    bool read_only = false;
    bool operator==(const Mount&) const = default;
  };
  std::vector<Mount> mounts;  // only with image
  std::map<std::string, std::string> env;
  // Variables set like env whose values the API never shows (a token, a
  // password): kept in the store (readable by Muster only) and passed to
  // the job's processes; shown as "(hidden)". A name may not be in both.
  std::map<std::string, std::string> secret_env;
  std::optional<std::string> working_dir;
  // Files that also get the replica's stdout and stderr (api/output_pattern.h),
  // written as its user; unset: only the node's log. stderr unset: both to stdout.
  std::optional<std::string> stdout_path, stderr_path;
  Duration time_limit = Duration::Infinite();  // Infinite: unlimited
  core::TopologyScope topology = core::TopologyScope::kAny;
  std::optional<Duration> stall_timeout;  // empty: hangs are not detected
  std::optional<CheckpointSpec> checkpoint;
  std::optional<LimitSignal> limit_signal;
  RetrySpec retry;
  std::vector<core::Dependency> dependencies;
  bool dependencies_any = false;  // any one holding is enough (Slurm's "?")
  std::optional<Time> begin_time;
  bool hold = false;
  bool spot = false;
  bool one_per_node = false;          // each replica on a node of its own
  bool exclusive = false;             // each replica holds a whole node (implies one_per_node)
  std::vector<std::string> features;  // node features its nodes must all have
  // Slurm's --dependency=singleton: starts only after every earlier job of
  // its name and user has ended (each such job an afterany dependency).
  bool singleton = false;
  // The job's Slurm QOS, partition and account, as sbatch named them; the
  // queue, priority class and features they map to are in the fields
  // above (api/slurm_mapping.h).
  std::optional<SlurmSpec> slurm;
  std::string reservation;  // an admin reservation's name; empty: none
  std::map<std::string, std::string> labels;
};

// What a spec gets for the retry policy and checkpoint settings it leaves
// out: the server's configured defaults (jobDefaults), else the built-in
// ones above. A field given in the spec always wins, also inside `retry`.
struct SpecDefaults {
  RetrySpec retry;
  Duration time_limit = Duration::Infinite();  // Slurm's DefaultTime: backfill plans around a finite one
  Duration grace_period = Duration::Minutes(5);
  int32_t keep = 3;
  // What a job that names no memory or no CPUs gets (Slurm's DefMemPerGPU,
  // DefCpuPerGPU): per GPU it asks for, or these for a job without GPUs.
  // 0: nothing (the job then has no such limit on its node).
  int64_t memory_per_gpu = 0, cpu_milli_per_gpu = 0;
  // Slurm's DefMemPerCPU: memory per CPU the job has, for a job naming
  // none, GPUs or not (0: not used; then the forms above apply).
  int64_t memory_per_cpu = 0;
  int64_t memory_bytes = 0, cpu_milli = 0;
  // The class of a spec that names none (the server's defaultPriorityClass).
  std::string priority = "normal";
  // Per class name, the longest time limit its jobs may ask for (the
  // class's maxTimeLimit): a larger one is refused, and a spec naming none
  // gets at most this.
  std::map<std::string, Duration> max_time_limits;
  // The server's slurm section: how a spec's slurm names map. Applied
  // (and checked) only with map_slurm_names, as at submit; a stored spec
  // already holds what its names mapped to then.
  SlurmMapping slurm;
  bool map_slurm_names = false;
};

// Field-by-field equality (core::Dependency has no operator==).
bool operator==(const JobSpec& a, const JobSpec& b);

// An image reference as a job names one ([registry/]name[:tag][@digest]):
// letters, digits and ._/:@-, starting with a letter or digit, at most 512
// bytes; so it can never be read as an option to Podman.
bool ValidImageReference(std::string_view image);

// Parses and validates a JSON document.
StatusOr<JobSpec> ParseJobSpecJson(std::string_view text);
// Parses and validates a YAML document (exactly one document; anchors and
// aliases allowed within the expansion budget; tags other than !!str,
// !!seq, !!map refused).
StatusOr<JobSpec> ParseJobSpecYaml(std::string_view text);
// Chooses the format by media type: application/json; application/yaml,
// application/x-yaml or text/yaml (parameters such as "; charset=utf-8" and
// letter case are ignored); empty: JSON if the first non-blank character is
// '{', else YAML. Other types: InvalidArgument with field "spec".
StatusOr<JobSpec> ParseJobSpec(std::string_view text, std::string_view content_type, const SpecDefaults& defaults = {});
// True for the media types ParseJobSpec reads (and an empty one).
bool IsSpecMediaType(std::string_view content_type);
// True for application/json, whatever its letter case and parameters.
bool IsJsonMediaType(std::string_view content_type);

// Canonical JSON: every field in the order above with its default made
// explicit, unset optional fields as null, durations as "2h30m"/"unlimited",
// memory in bytes, cpus as integer cores or "2500m", env and labels sorted.
// For any spec that parsing returned, ParseJobSpecJson(JobSpecToJson(s)) == s.
// Never throws (invalid UTF-8 in a hand-built spec becomes U+FFFD).
std::string JobSpecToJson(const JobSpec& spec);

// The scheduling-relevant part, for the scheduler.
core::JobSpec ToCoreSpec(const JobSpec& spec);

}  // namespace muster::api
