#include "api/job_spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "api/slurm_mapping.h"
#include "common/random.h"

namespace muster::api {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;
constexpr const char* kJson = "application/json";
constexpr const char* kYaml = "application/yaml";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool HasRawControl(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) return true;
  }
  return false;
}

JobSpec MustParse(const std::string& text, const char* content_type) {
  StatusOr<JobSpec> r = ParseJobSpec(text, content_type);
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << text;
  return r.ok() ? *r : JobSpec();
}

// ---- Good specs ----------------------------------------------------------------

constexpr const char* kFullYaml = R"(
name: train-llm
queue: research
priority: high
replicas: 4
resources:
  gpus: 8
  gpuType: H100
  cpus: 32.5
  memory: 512Gi
command: [python, train.py, --lr, "0.001"]
image: nvcr.io/nvidia/pytorch:24.05-py3
mounts:
  - {hostPath: /data/imagenet, containerPath: /data, readOnly: true}
  - hostPath: /scratch
    containerPath: /scratch
env:
  NCCL_DEBUG: INFO
  OMP_NUM_THREADS: 8
workingDir: /work/llm
timeLimit: 2h30m
topology: leaf
checkpoint:
  dir: /ckpt/llm
  interval: 1h
  signal: USR2
  gracePeriod: 2m
retry:
  limit: 5
  backoff: {initial: 10s, factor: 3, max: 20m}
  failOnExitCodes: [2, 127]
  retryOnOom: true
dependencies: afterok:12:13,afterany:14
beginTime: 2026-11-26T10:00:00Z
hold: true
labels:
  team: nlp
  cost-center: "42"
)";

// The same spec, in JSON, using the other form wherever there are two.
constexpr const char* kFullJson = R"({
  "name": "train-llm", "queue": "research", "priority": "high", "replicas": 4,
  "resources": {"gpus": 8, "gpuType": "H100", "cpus": "32500m", "memory": 549755813888},
  "command": ["python", "train.py", "--lr", "0.001"],
  "image": "nvcr.io/nvidia/pytorch:24.05-py3",
  "mounts": [{"hostPath": "/data/imagenet", "containerPath": "/data", "readOnly": true},
             {"hostPath": "/scratch", "containerPath": "/scratch", "readOnly": false}],
  "env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "OMP_NUM_THREADS", "value": "8"}],
  "workingDir": "/work/llm",
  "timeLimit": 9000,
  "topology": "leaf",
  "checkpoint": {"dir": "/ckpt/llm", "interval": "01:00:00", "signal": "SIGUSR2", "gracePeriod": 120},
  "retry": {"limit": 5, "backoff": {"initial": 10, "factor": 3, "max": "20m"},
            "failOnExitCodes": [2, 127], "retryOnOom": true},
  "dependencies": [{"type": "afterok", "job": 12}, {"type": "afterok", "job": 13},
                   {"type": "afterany", "job": 14}],
  "beginTime": "2026-11-26T10:00:00Z",
  "hold": true,
  "labels": {"team": "nlp", "cost-center": "42"}
})";

TEST(JobSpecTest, FullYamlSpec) {
  const JobSpec s = MustParse(kFullYaml, kYaml);
  EXPECT_EQ(s.name, "train-llm");
  EXPECT_EQ(s.queue, "research");
  EXPECT_EQ(s.priority, "high");
  EXPECT_EQ(s.replicas, 4);
  EXPECT_EQ(s.resources.gpus, 8);
  EXPECT_EQ(s.resources.gpu_type, "H100");
  EXPECT_EQ(s.resources.cpu_milli, 32500);
  EXPECT_EQ(s.resources.memory_bytes, 512 * kGi);
  EXPECT_EQ(s.command, (std::vector<std::string>{"python", "train.py", "--lr", "0.001"}));
  EXPECT_FALSE(s.script.has_value());
  EXPECT_EQ(s.image, "nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(s.mounts,
            (std::vector<JobSpec::Mount>{{"/data/imagenet", "/data", true}, {"/scratch", "/scratch", false}}));
  EXPECT_EQ(s.env, (std::map<std::string, std::string>{{"NCCL_DEBUG", "INFO"}, {"OMP_NUM_THREADS", "8"}}));
  EXPECT_EQ(s.working_dir, "/work/llm");
  EXPECT_EQ(s.time_limit, Duration::Minutes(150));
  EXPECT_EQ(s.topology, core::TopologyScope::kLeaf);
  ASSERT_TRUE(s.checkpoint.has_value());
  EXPECT_EQ(s.checkpoint->dir, "/ckpt/llm");
  EXPECT_EQ(s.checkpoint->interval, Duration::Hours(1));
  EXPECT_EQ(s.checkpoint->signal, CheckpointSignal::kSigUsr2);
  EXPECT_EQ(s.checkpoint->grace_period, Duration::Minutes(2));
  EXPECT_EQ(s.retry.limit, 5);
  EXPECT_EQ(s.retry.backoff.initial, Duration::Seconds(10));
  EXPECT_EQ(s.retry.backoff.factor, 3);
  EXPECT_EQ(s.retry.backoff.max, Duration::Minutes(20));
  EXPECT_EQ(s.retry.fail_on_exit_codes, (std::vector<int32_t>{2, 127}));
  EXPECT_TRUE(s.retry.retry_on_oom);
  ASSERT_EQ(s.dependencies.size(), 3u);
  EXPECT_EQ(s.dependencies[0].type, core::DependencyType::kAfterOk);
  EXPECT_EQ(s.dependencies[0].job, 12);
  EXPECT_EQ(s.dependencies[1].job, 13);
  EXPECT_EQ(s.dependencies[2].type, core::DependencyType::kAfterAny);
  EXPECT_EQ(s.dependencies[2].job, 14);
  EXPECT_EQ(s.begin_time, Time::FromSeconds(1795687200));
  EXPECT_TRUE(s.hold);
  EXPECT_EQ(s.labels, (std::map<std::string, std::string>{{"team", "nlp"}, {"cost-center", "42"}}));
}

TEST(JobSpecTest, JsonAndYamlOfTheSameSpecAreEqual) {
  EXPECT_TRUE(MustParse(kFullJson, kJson) == MustParse(kFullYaml, kYaml));
  EXPECT_TRUE(MustParse(kFullJson, "") == MustParse(kFullYaml, ""));  // sniffed
}

TEST(JobSpecTest, MinimalSpecGetsEveryDefault) {
  for (const char* text : {R"({"command":["true"]})", "command: [\"true\"]\n", "command:\n  - \"true\"\n"}) {
    const JobSpec s = MustParse(text, "");
    EXPECT_EQ(s.name, "job");
    EXPECT_EQ(s.queue, "default");
    EXPECT_EQ(s.priority, "normal");
    EXPECT_EQ(s.replicas, 1);
    EXPECT_EQ(s.resources, ResourceSpec{});
    EXPECT_EQ(s.command, std::vector<std::string>{"true"});
    EXPECT_TRUE(s.time_limit.is_infinite());
    EXPECT_EQ(s.topology, core::TopologyScope::kAny);
    EXPECT_FALSE(s.checkpoint.has_value());
    EXPECT_EQ(s.retry, RetrySpec{});
    EXPECT_EQ(s.retry.limit, 3);
    EXPECT_EQ(s.retry.backoff.initial, Duration::Seconds(30));
    EXPECT_EQ(s.retry.backoff.factor, 2);
    EXPECT_EQ(s.retry.backoff.max, Duration::Minutes(10));
    EXPECT_TRUE(s.dependencies.empty());
    EXPECT_FALSE(s.begin_time.has_value());
    EXPECT_FALSE(s.hold);
    EXPECT_TRUE(s.env.empty() && s.labels.empty());
  }
}

TEST(JobSpecTest, ElasticReplicasRoundTrip) {
  const JobSpec s = MustParse("replicas: {min: 1, max: 4}\ncommand: [torchrun, train.py]\n", kYaml);
  EXPECT_EQ(s.min_replicas, 1);
  EXPECT_EQ(s.replicas, 4);
  const std::string json = JobSpecToJson(s);
  EXPECT_NE(json.find(R"("replicas":{"min":1,"max":4})"), std::string::npos) << json;
  EXPECT_TRUE(MustParse(json, kJson) == s);
  EXPECT_EQ(ToCoreSpec(s).min_replicas, 1);
  // min == max is a fixed gang.
  const JobSpec fixed = MustParse("replicas: {min: 2, max: 2}\ncommand: [x]\n", kYaml);
  EXPECT_EQ(fixed.min_replicas, 0);
  EXPECT_EQ(fixed.replicas, 2);
}

TEST(JobSpecTest, AScriptsArgumentsRoundTrip) {
  const JobSpec s = MustParse("script: \"echo $1\"\nargs: [--epochs, '10']\n", kYaml);
  EXPECT_EQ(s.script_args, (std::vector<std::string>{"--epochs", "10"}));
  EXPECT_TRUE(MustParse(JobSpecToJson(s), kJson) == s);
  EXPECT_EQ(JobSpecToJson(MustParse("script: x\n", kYaml)).find("\"args\""), std::string::npos) << "only when given";
}

TEST(JobSpecTest, ASlurmStyleJobsNodesAreDistinct) {
  const JobSpec s = MustParse("replicas: 2\nslurm: {tasks: 4, gpusPerTask: 2}\nscript: \"srun x\"\n", kYaml);
  EXPECT_TRUE(s.one_per_node);
  EXPECT_EQ(s.slurm->gpus_per_task, 2);
  EXPECT_TRUE(MustParse(JobSpecToJson(s), kJson) == s);
  EXPECT_TRUE(MustParse("image: busybox\nslurm: {}\nscript: x\n", kYaml).image.has_value()) << "one node may";
}

TEST(JobSpecTest, DistinctAndWholeNodesRoundTrip) {
  const JobSpec s = MustParse("replicas: 2\nonePerNode: true\ncommand: [x]\n", kYaml);
  EXPECT_TRUE(s.one_per_node);
  EXPECT_FALSE(s.exclusive);
  EXPECT_TRUE(MustParse(JobSpecToJson(s), kJson) == s);
  EXPECT_TRUE(ToCoreSpec(s).one_per_node);
  const JobSpec whole = MustParse(R"({"command":["x"],"exclusive":true})", kJson);
  EXPECT_TRUE(MustParse(JobSpecToJson(whole), kJson) == whole);
  EXPECT_TRUE(ToCoreSpec(whole).exclusive);
  EXPECT_TRUE(ToCoreSpec(whole).one_per_node) << "a whole node each is a node each";
  EXPECT_FALSE(MustParse(JobSpecToJson(whole), kJson) == s);
}

TEST(JobSpecTest, ArraysTakeSlurmsIndicesAndFeaturesAreRequired) {
  JobSpec s = MustParse(R"({"command":["x"],"array":"500-16500:1000%26","features":["a100","gpu80"]})", kJson);
  EXPECT_EQ(s.array, 17);
  ASSERT_TRUE(s.array_indices.has_value());
  EXPECT_EQ(s.array_indices->indices[1], 1500);
  EXPECT_EQ(s.array_indices->max_running, 26);
  const std::string json = JobSpecToJson(s);
  EXPECT_NE(json.find(R"("array":"500-16500:1000%26")"), std::string::npos) << json;
  EXPECT_TRUE(MustParse(json, kJson) == s);
  const std::vector<std::string> required = ToCoreSpec(s).required_features;
  EXPECT_EQ(std::count(required.begin(), required.end(), "gpu80"), 1);
  // 0..N-1 without a limit is a plain count, written as one.
  s = MustParse(R"({"command":["x"],"array":"0-9"})", kJson);
  EXPECT_EQ(s.array, 10);
  EXPECT_FALSE(s.array_indices.has_value());
  EXPECT_NE(JobSpecToJson(s).find(R"("array":10)"), std::string::npos);
}

TEST(JobSpecTest, TheCheckpointIntervalReachesTheScheduler) {
  // It places a spot job that checkpoints often on spot nodes first.
  const JobSpec often =
      MustParse(R"({"command":["x"],"spot":true,"checkpoint":{"dir":"/ckpt","interval":"10m"}})", kJson);
  EXPECT_EQ(ToCoreSpec(often).checkpoint_interval, Duration::Minutes(10));
  const JobSpec signalled = MustParse(R"({"command":["x"],"checkpoint":{"dir":"/ckpt"}})", kJson);
  EXPECT_TRUE(ToCoreSpec(signalled).checkpoint_interval.is_infinite());
}

TEST(JobSpecTest, ScriptInsteadOfCommand) {
  const JobSpec s = MustParse("script: |\n  #!/bin/sh\n  echo hi\n", kYaml);
  EXPECT_TRUE(s.command.empty());
  EXPECT_EQ(s.script, "#!/bin/sh\necho hi\n");
}

TEST(JobSpecTest, NullMeansNotSet) {
  const JobSpec s = MustParse(R"({"command":["x"],"name":null,"script":null,"checkpoint":null})", kJson);
  EXPECT_EQ(s.name, "job");
  EXPECT_FALSE(s.checkpoint.has_value());
}

TEST(JobSpecTest, CanonicalJsonRoundTrips) {
  for (const std::string& text :
       {std::string(kFullYaml), std::string(kFullJson), std::string(R"({"command":["true"]})"),
        std::string("script: echo\ncheckpoint: {dir: /c}\nbeginTime: 2026-01-01T00:00:00.5Z\n"
                    "resources: {cpus: 500m}\ntimeLimit: 1500ms\n")}) {
    const JobSpec s = MustParse(text, "");
    const std::string json = JobSpecToJson(s);
    StatusOr<JobSpec> back = ParseJobSpecJson(json);
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << json;
    EXPECT_TRUE(*back == s) << json;
    EXPECT_EQ(JobSpecToJson(*back), json);  // stable
  }
}

TEST(JobSpecTest, CanonicalJsonMakesDefaultsExplicit) {
  const std::string json = JobSpecToJson(MustParse(R"({"command":["true"]})", kJson));
  EXPECT_EQ(json,
            R"({"name":"job","queue":"default","priority":"normal","replicas":1,"array":null,)"
            R"("resources":{"gpus":0,"gpuType":null,"cpus":0,"memory":0},"command":["true"],)"
            R"("script":null,"image":null,"env":{},"workingDir":null,"timeLimit":"unlimited",)"
            R"("topology":"any","stallTimeout":null,"checkpoint":null,"retry":{"limit":3,"backoff":{"initial":"30s",)"
            R"("factor":2,"max":"10m"},"failOnExitCodes":[],"retryOnOom":false},"dependencies":[],)"
            R"("beginTime":null,"hold":false,"spot":false,"labels":{}})");
  const std::string full = JobSpecToJson(MustParse(kFullYaml, kYaml));
  EXPECT_TRUE(Contains(full, R"("cpus":"32500m","memory":549755813888)")) << full;
  EXPECT_TRUE(Contains(full, R"("timeLimit":"2h30m")")) << full;
  EXPECT_TRUE(Contains(full, R"("beginTime":"2026-11-26T10:00:00Z")")) << full;
}

TEST(JobSpecTest, ToCoreSpecMapsTheSchedulingFields) {
  const core::JobSpec c = ToCoreSpec(MustParse(kFullYaml, kYaml));
  EXPECT_EQ(c.name, "train-llm");
  EXPECT_EQ(c.queue, "research");
  EXPECT_EQ(c.priority_class, "high");
  EXPECT_EQ(c.replicas, 4);
  EXPECT_EQ(c.per_replica, (core::Resources{8, 32500, 512 * kGi}));
  EXPECT_EQ(c.gpu_type, "H100");
  EXPECT_EQ(c.time_limit, Duration::Minutes(150));
  EXPECT_EQ(c.topology, core::TopologyScope::kLeaf);
  ASSERT_EQ(c.dependencies.size(), 3u);
  EXPECT_EQ(c.dependencies[2].type, core::DependencyType::kAfterAny);
  EXPECT_EQ(c.begin_time, Time::FromSeconds(1795687200));
  EXPECT_TRUE(c.hold);
  EXPECT_TRUE(c.known_duration.is_infinite());
  // An image with GPUs: nodes that run containers and give them GPUs; not
  // spot capacity unless the job says so.
  EXPECT_EQ(c.required_features, (std::vector<std::string>{"containers", "gpu-containers", "on-demand"}));

  const core::JobSpec m = ToCoreSpec(MustParse(R"({"command":["true"]})", kJson));
  EXPECT_EQ(m.gpu_type, "");
  EXPECT_EQ(m.required_features, std::vector<std::string>{"on-demand"});
  EXPECT_TRUE(ToCoreSpec(MustParse(R"({"command":["true"],"spot":true})", kJson)).required_features.empty());
  EXPECT_EQ(ToCoreSpec(MustParse(R"({"command":["true"],"image":"busybox","spot":true})", kJson)).required_features,
            std::vector<std::string>{"containers"});
  EXPECT_TRUE(m.time_limit.is_infinite());
  EXPECT_FALSE(m.begin_time.has_value());
}

Duration TimeLimitOf(const std::string& value_json) {
  return MustParse(R"({"command":["x"],"timeLimit":)" + value_json + "}", kJson).time_limit;
}

TEST(JobSpecTest, DurationForms) {
  EXPECT_EQ(TimeLimitOf("\"90s\""), Duration::Seconds(90));
  EXPECT_EQ(TimeLimitOf("\"2h30m\""), Duration::Minutes(150));
  EXPECT_EQ(TimeLimitOf("\"1-02:00:00\""), Duration::Hours(26));
  EXPECT_EQ(TimeLimitOf("\"1:30:00\""), Duration::Minutes(90));
  EXPECT_EQ(TimeLimitOf("\"1d\""), Duration::Hours(24));
  EXPECT_EQ(TimeLimitOf("\"1500ms\""), Duration::Millis(1500));
  EXPECT_EQ(TimeLimitOf("90"), Duration::Seconds(90));  // an integer is seconds
  EXPECT_EQ(TimeLimitOf("31536000"), Duration::Hours(365 * 24));
  EXPECT_TRUE(TimeLimitOf("\"unlimited\"").is_infinite());
  EXPECT_TRUE(TimeLimitOf("\"inf\"").is_infinite());
  EXPECT_EQ(MustParse("command: [x]\ntimeLimit: 90\n", kYaml).time_limit, Duration::Seconds(90));
  EXPECT_EQ(MustParse("command: [x]\ntimeLimit: 1-02:00:00\n", kYaml).time_limit, Duration::Hours(26));
}

ResourceSpec ResourcesOf(const std::string& json) {
  return MustParse(R"({"command":["x"],"resources":)" + json + "}", kJson).resources;
}

TEST(JobSpecTest, MemoryForms) {
  EXPECT_EQ(ResourcesOf(R"({"memory":"512Gi"})").memory_bytes, 512 * kGi);
  EXPECT_EQ(ResourcesOf(R"({"memory":"16G"})").memory_bytes, 16'000'000'000);
  EXPECT_EQ(ResourcesOf(R"({"memory":"1500Mi"})").memory_bytes, 1500 * (int64_t{1} << 20));
  EXPECT_EQ(ResourcesOf(R"({"memory":1073741824})").memory_bytes, kGi);
  EXPECT_EQ(ResourcesOf(R"({"memory":"1073741824"})").memory_bytes, kGi);
  EXPECT_EQ(ResourcesOf(R"({"memory":"64Ti"})").memory_bytes, int64_t{64} << 40);
  EXPECT_EQ(ResourcesOf(R"({"memory":"1.5Gi"})").memory_bytes, 3 * kGi / 2);
  EXPECT_EQ(MustParse("command: [x]\nresources: {memory: 16Gi}\n", kYaml).resources.memory_bytes, 16 * kGi);
}

TEST(JobSpecTest, CpuForms) {
  EXPECT_EQ(ResourcesOf(R"({"cpus":4})").cpu_milli, 4000);
  EXPECT_EQ(ResourcesOf(R"({"cpus":2.5})").cpu_milli, 2500);
  EXPECT_EQ(ResourcesOf(R"({"cpus":"2.5"})").cpu_milli, 2500);
  EXPECT_EQ(ResourcesOf(R"({"cpus":"500m"})").cpu_milli, 500);
  EXPECT_EQ(ResourcesOf(R"({"cpus":4096})").cpu_milli, 4'096'000);
  EXPECT_EQ(MustParse("command: [x]\nresources: {cpus: 500m}\n", kYaml).resources.cpu_milli, 500);
}

TEST(JobSpecTest, EnvForms) {
  const JobSpec map_form = MustParse("command: [x]\nenv: {A: \"1\", B_2: two, C: \"\"}\n", kYaml);
  const JobSpec list_form =
      MustParse("command: [x]\nenv:\n- {name: A, value: \"1\"}\n- {name: B_2, value: two}\n- name: C\n", kYaml);
  EXPECT_EQ(map_form.env, (std::map<std::string, std::string>{{"A", "1"}, {"B_2", "two"}, {"C", ""}}));
  EXPECT_TRUE(map_form == list_form);
  // YAML plain scalars are taken as written for string fields: no "Norway problem".
  const JobSpec yaml = MustParse("command: [x]\nenv: {PORT: 8080, DEBUG: yes, RATIO: 1.10, OFF: off}\n", kYaml);
  EXPECT_EQ(yaml.env.at("PORT"), "8080");
  EXPECT_EQ(yaml.env.at("DEBUG"), "yes");
  EXPECT_EQ(yaml.env.at("RATIO"), "1.10");
  EXPECT_EQ(yaml.env.at("OFF"), "off");
}

TEST(JobSpecTest, DependencyForms) {
  const JobSpec str = MustParse(R"({"command":["x"],"dependencies":"afterok:12:13,afternotok:14"})", kJson);
  const JobSpec list =
      MustParse(R"({"command":["x"],"dependencies":[{"type":"afterok","job":12},{"type":"afterok","job":13},)"
                R"({"type":"afternotok","job":14}]})",
                kJson);
  ASSERT_EQ(str.dependencies.size(), 3u);
  EXPECT_EQ(str.dependencies[2].type, core::DependencyType::kAfterNotOk);
  EXPECT_TRUE(str == list);
  const JobSpec started = MustParse(R"({"command":["x"],"dependencies":"after:7"})", kJson);
  EXPECT_EQ(started.dependencies.at(0).type, core::DependencyType::kAfter);
  EXPECT_TRUE(MustParse(JobSpecToJson(started), kJson) == started);
  // after:ID+MINUTES, each id its own delay; kept through the spec's form.
  const JobSpec delayed = MustParse(R"({"command":["x"],"dependencies":"after:7+10:8,aftercorr:9"})", kJson);
  ASSERT_EQ(delayed.dependencies.size(), 3u);
  EXPECT_EQ(delayed.dependencies[0].delay, Duration::Seconds(600));
  EXPECT_EQ(delayed.dependencies[1].delay, Duration::Zero());
  EXPECT_EQ(delayed.dependencies[2].type, core::DependencyType::kAfterCorr);
  EXPECT_TRUE(MustParse(JobSpecToJson(delayed), kJson) == delayed);
  EXPECT_FALSE(MustParse(JobSpecToJson(started), kJson) == delayed);
  // Slurm's "?": any one is enough; kept through the spec's own form.
  const JobSpec any = MustParse(R"({"command":["x"],"dependencies":"afterok:7?afternotok:8"})", kJson);
  EXPECT_TRUE(any.dependencies_any);
  EXPECT_EQ(any.dependencies.size(), 2u);
  EXPECT_TRUE(MustParse(JobSpecToJson(any), kJson) == any);
  EXPECT_TRUE(ToCoreSpec(any).dependencies_any);
  EXPECT_FALSE(MustParse(JobSpecToJson(str), kJson).dependencies_any);
  // A range, as `muster submit --parsable --array 2` prints it ("12-13").
  EXPECT_TRUE(MustParse(R"({"command":["x"],"dependencies":"afterok:12-13,afternotok:14-14"})", kJson) == list);
  // Ranges count toward the 1,024 dependencies: 1,000 + 24 fit, one more does not.
  EXPECT_EQ(MustParse(R"({"command":["x"],"dependencies":"afterok:1-1000:2001-2024"})", kJson).dependencies.size(),
            1024u);
}

TEST(JobSpecTest, ContentTypes) {
  const std::string json = R"({"command":["true"]})";
  EXPECT_TRUE(ParseJobSpec(json, "application/json").ok());
  EXPECT_TRUE(ParseJobSpec(json, "Application/JSON; charset=utf-8").ok());
  // The server picks JSON's limits and where to parse by the same test.
  EXPECT_TRUE(IsJsonMediaType("APPLICATION/JSON"));
  EXPECT_TRUE(IsJsonMediaType(" application/json ; charset=utf-8"));
  EXPECT_FALSE(IsJsonMediaType("application/yaml"));
  EXPECT_FALSE(IsJsonMediaType(""));
  EXPECT_TRUE(ParseJobSpec("command: [x]", "application/x-yaml").ok());
  EXPECT_TRUE(ParseJobSpec("command: [x]", "text/yaml").ok());
  EXPECT_TRUE(ParseJobSpec("  \n" + json, "").ok());
  EXPECT_FALSE(ParseJobSpec("command: [x]", "application/json").ok());
  StatusOr<JobSpec> r = ParseJobSpec(json, "text/plain");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "spec");
  EXPECT_TRUE(Contains(r.status().message(), "unsupported content type \"text/plain\""));
}

TEST(JobSpecTest, SmallAliasesAreFine) {
  const JobSpec s = MustParse("labels: &l {team: nlp}\ncommand: [x]\nenv: {A: &v hello, B: *v}\n", kYaml);
  EXPECT_EQ(s.env.at("B"), "hello");
}

TEST(JobSpecTest, LargestSpecWithinEveryLimitParses) {
  std::string json = R"({"name":")" + std::string(128, 'n') + R"(","command":[)";
  for (int i = 0; i < 4096; ++i) json += (i ? ",\"" : "\"") + std::string(100, 'a') + "\"";
  json += R"(],"env":[)";
  for (int i = 0; i < 1024; ++i)
    json += (i ? "," : "") + std::string(R"({"name":"V)") + std::to_string(i) + R"(","value":"x"})";
  json += R"(],"dependencies":[)";
  for (int i = 1; i <= 1024; ++i)
    json += (i > 1 ? "," : "") + std::string(R"({"type":"afterok","job":)") + std::to_string(i) + "}";
  json += "]}";
  const JobSpec s = MustParse(json, kJson);
  EXPECT_EQ(s.command.size(), 4096u);
  EXPECT_EQ(s.env.size(), 1024u);
  EXPECT_EQ(s.dependencies.size(), 1024u);
}

TEST(JobSpecTest, ByteOrderMarkAndBlankLinesAreFine) {
  EXPECT_TRUE(ParseJobSpec("\xEF\xBB\xBF{\"command\":[\"x\"]}", "").ok());
  EXPECT_TRUE(ParseJobSpec("\xEF\xBB\xBF\n\ncommand: [x]\n", "").ok());
}

TEST(JobSpecTest, ErrorToStringReadsAsFieldAndMessage) {
  StatusOr<JobSpec> r = ParseJobSpecJson(R"({"command":["x"],"resources":{"gpus":"eight"}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(), "spec.resources.gpus: must be an integer from 0 to 1024, got \"eight\"");
}

// ---- Malformed and hostile specs -------------------------------------------------

struct BadSpec {
  const char* what;
  std::string text;
  const char* content_type;
  std::string field;
  std::string message;  // a substring of the message
};

// A JSON spec with a valid command plus `fields` ("\"a\":1,").
std::string WithCommand(const std::string& fields) { return "{" + fields + "\"command\":[\"x\"]}"; }

std::string Nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::string Labels(int n) {
  std::string out = "\"labels\":{";
  for (int i = 0; i < n; ++i) out += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"v\"";
  return out + "},";
}

std::string Zeros(int n) {
  std::string out = "0";
  for (int i = 1; i < n; ++i) out += ",0";
  return out;
}

std::string BillionLaughs() {
  std::string s = "command: [x]\nlabels:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 10; ++i) {
    std::string p = "*a" + std::to_string(i - 1);
    s += "  a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p;
    for (int k = 0; k < 8; ++k) s += ", " + p;
    s += "]\n";
  }
  return s;
}

std::vector<BadSpec> BadSpecs() {
  const char* J = kJson;
  const char* Y = kYaml;
  const std::string int_0_1024 = "must be an integer from 0 to 1024, got ";
  const std::string name_rule = "must be 1 to 128 characters of [A-Za-z0-9._-]";
  // One row per line: the table reads better than it wraps.
  // clang-format off
  return {
      // Wrong types.
      {"string for int", WithCommand(R"("resources":{"gpus":"eight"},)"), J, "spec.resources.gpus", int_0_1024 + "\"eight\""},
      {"int for string", WithCommand(R"("name":8,)"), J, "spec.name", name_rule + ", starting with a letter or digit, got 8"},
      {"list for map", WithCommand(R"("resources":[8],)"), J, "spec.resources", "must be an object, got a list of 1 item"},
      {"list for labels", WithCommand(R"("labels":["a"],)"), J, "spec.labels", "must be an object of at most 64 labels, got a list of 1 item"},
      {"map for list", R"({"command":{"run":"x"}})", J, "spec.command", "must be a list of 1 to 4096 strings, got an object with 1 field"},
      {"bool for int", WithCommand(R"("replicas":true,)"), J, "spec.replicas", "must be an integer from 1 to 4096, or {min, max} for an elastic job, got true"},
      {"string for int in JSON", WithCommand(R"("replicas":"4",)"), J, "spec.replicas", "got \"4\""},
      {"quoted int in YAML", "command: [x]\nresources:\n  gpus: \"8\"\n", Y, "spec.resources.gpus", int_0_1024 + "\"8\""},
      {"yes is not a boolean", "command: [x]\nhold: yes\n", Y, "spec.hold", "must be true or false, got \"yes\""},
      {"quoted true is not a boolean", "command: [x]\nhold: \"true\"\n", Y, "spec.hold", "must be true or false, got \"true\""},
      // Out of range.
      {"gpus -1", WithCommand(R"("resources":{"gpus":-1},)"), J, "spec.resources.gpus", int_0_1024 + "-1"},
      {"replicas 0", WithCommand(R"("replicas":0,)"), J, "spec.replicas", "must be an integer from 1 to 4096, or {min, max} for an elastic job, got 0"},
      {"array 0", WithCommand(R"("array":0,)"), J, "spec.array", "must be an integer from 1 to 10000, or Slurm's indices such as \"0-15:4%2\" (at most 10000), got 0"},
      {"array too big", WithCommand(R"("array":10001,)"), J, "spec.array", "got 10001"},
      {"array range too big", WithCommand(R"("array":"0-10000",)"), J, "spec.array", "\"0-10000\" has more than 10000 indices"},
      {"array range backwards", WithCommand(R"("array":"9-0",)"), J, "spec.array", "\"9-0\" is not an index N, a range N-M (N <= M) or N-M:STEP"},
      {"array limit 0", WithCommand(R"("array":"0-9%0",)"), J, "spec.array", "the limit after % must be a count of at least 1, got \"0\""},
      {"features not a list", WithCommand(R"("features":"a100",)"), J, "spec.features", "a list of at most 64 feature names"},
      {"feature with a space", WithCommand(R"("features":["a 100"],)"), J, "spec.features[0]", "got \"a 100\""},
      {"replicas 1e12", WithCommand(R"("replicas":1e12,)"), J, "spec.replicas", "got 1e12"},
      {"gpus beyond int64", WithCommand(R"("resources":{"gpus":99999999999999999999},)"), J, "spec.resources.gpus", int_0_1024 + "99999999999999999999"},
      {"gpus beyond int64 YAML", "command: [x]\nresources: {gpus: 99999999999999999999}\n", Y, "spec.resources.gpus", int_0_1024 + "99999999999999999999"},
      {"gpus 1.5", WithCommand(R"("resources":{"gpus":1.5},)"), J, "spec.resources.gpus", int_0_1024 + "1.5"},
      {"gpus 8.0", WithCommand(R"("resources":{"gpus":8.0},)"), J, "spec.resources.gpus", int_0_1024 + "8.0"},
      {"memory 1Pi", WithCommand(R"("resources":{"memory":"1Pi"},)"), J, "spec.resources.memory", "at most 64Ti, got \"1Pi\""},
      {"memory overflow", WithCommand(R"("resources":{"memory":"99999999999Ti"},)"), J, "spec.resources.memory", "got \"99999999999Ti\""},
      {"memory 1.5 bytes", WithCommand(R"("resources":{"memory":1.5},)"), J, "spec.resources.memory", "got 1.5"},
      {"memory \"1.5\" bytes", "command: [x]\nresources: {memory: \"1.5\"}\n", Y, "spec.resources.memory", "got \"1.5\""},
      {"memory 1.5 bytes in YAML", "command: [x]\nresources: {memory: 1.5}\n", Y, "spec.resources.memory", "got 1.5"},
      {"memory 65Ti", WithCommand(R"("resources":{"memory":"65Ti"},)"), J, "spec.resources.memory", "got \"65Ti\""},
      {"memory int overflow", WithCommand(R"("resources":{"memory":9223372036854775807},)"), J, "spec.resources.memory", "got 9223372036854775807"},
      {"memory fixed-point overflow", WithCommand(R"("resources":{"memory":"9223372036854775.999"},)"), J, "spec.resources.memory", "got \"9223372036854775.999\""},
      {"cpus -2", WithCommand(R"("resources":{"cpus":"-2"},)"), J, "spec.resources.cpus", "must be CPUs such as 4, 2.5 or \"500m\", at most 4096 cores, got \"-2\""},
      {"cpus 5000", WithCommand(R"("resources":{"cpus":5000},)"), J, "spec.resources.cpus", "got 5000"},
      {"cpus 1e3", WithCommand(R"("resources":{"cpus":1e3},)"), J, "spec.resources.cpus", "got 1e3"},
      // Unknown fields.
      {"unknown top-level field", R"({"comand":["x"]})", J, "spec.comand", "unknown field; did you mean \"command\"?"},
      {"unknown nested field", WithCommand(R"("resources":{"gpu":8},)"), J, "spec.resources.gpu", "unknown field; did you mean \"gpus\"?"},
      {"key in another case", WithCommand(R"("resources":{"GPUs":8},)"), J, "spec.resources.GPUs", "unknown field; did you mean \"gpus\"?"},
      {"unknown deep field", "command: [x]\nretry:\n  backoff:\n    factr: 2\n", Y, "spec.retry.backoff.factr", "unknown field; did you mean \"factor\"?"},
      {"unknown field without a hint", WithCommand(R"("zzzzzzzz":1,)"), J, "spec.zzzzzzzz", "unknown field"},
      {"control characters in a key", WithCommand(R"("na\u0001me":1,)"), J, "spec[\"na\\u0001me\"]", "unknown field"},
      {"duplicate field", WithCommand(R"("name":"a","name":"b",)"), J, "spec.name", "duplicate field"},
      // command and script.
      {"command and script", WithCommand(R"("script":"echo",)"), J, "spec", "must set exactly one of \"command\" or \"script\", got both"},
      {"neither command nor script", R"({"name":"a"})", J, "spec", "got neither"},
      {"empty command", R"({"command":[]})", J, "spec.command", "must be a list of 1 to 4096 strings, got an empty list"},
      {"non-string command item", R"({"command":["echo",5]})", J, "spec.command[1]", "must be a string of at most 64 KiB without NUL bytes, got 5"},
      {"empty program", R"({"command":[""]})", J, "spec.command[0]", "got \"\""},
      {"NUL in an argument", R"({"command":["echo","a\u0000b"]})", J, "spec.command[1]", "got \"a\\u0000b\""},
      // Durations.
      {"bad duration", WithCommand(R"("timeLimit":"2 hours",)"), J, "spec.timeLimit", "must be a duration such as \"90s\", \"2h30m\" or \"1-02:00:00\", \"unlimited\" or an integer number of seconds, got \"2 hours\""},
      {"bare number string", WithCommand(R"("timeLimit":"90",)"), J, "spec.timeLimit", "a string needs a unit: \"90s\", or \"90m\" for Slurm's minutes"},
      {"time 0 as in Slurm", WithCommand(R"("timeLimit":"0",)"), J, "spec.timeLimit", "(for no limit: \"unlimited\"), got \"0\""},
      {"memory 512 as in Slurm", WithCommand(R"("resources":{"memory":"512"},)"), J, "spec.resources.memory", "must be 0 or at least 1Mi (a number without a unit is bytes: \"512Mi\" or \"512M\" for megabytes), got \"512\""},
      {"memory 1000 bytes", WithCommand(R"("resources":{"memory":1000},)"), J, "spec.resources.memory", "at least 1Mi"},
      {"memory 1Ki", WithCommand(R"("resources":{"memory":"1Ki"},)"), J, "spec.resources.memory", "at least 1Mi"},
      {"zero time limit", WithCommand(R"("timeLimit":"0s",)"), J, "spec.timeLimit", "must be at least 1s and at most 365 days (or \"unlimited\"), got \"0s\""},
      {"time limit under a second", WithCommand(R"("timeLimit":"500ms",)"), J, "spec.timeLimit", "must be at least 1s and at most 365 days (or \"unlimited\"), got \"500ms\""},
      {"zero seconds", WithCommand(R"("timeLimit":0,)"), J, "spec.timeLimit", "got 0"},
      {"time limit over a year", WithCommand(R"("timeLimit":"400d",)"), J, "spec.timeLimit", "at most 365 days (or \"unlimited\"), got \"400d\""},
      {"negative seconds", WithCommand(R"("timeLimit":-5,)"), J, "spec.timeLimit", "got -5"},
      {"unlimited interval", WithCommand(R"("checkpoint":{"dir":"/c","interval":"unlimited"},)"), J, "spec.checkpoint.interval", "must be a finite duration"},
      {"keep zero checkpoints", WithCommand(R"("checkpoint":{"dir":"/c","keep":0},)"), J, "spec.checkpoint.keep", "from 1 to 1000, got 0"},
      {"stall timeout over a week", WithCommand(R"("stallTimeout":"8d",)"), J, "spec.stallTimeout", "at most 7 days"},
      {"grace period over an hour", WithCommand(R"("checkpoint":{"dir":"/c","gracePeriod":"2h"},)"), J, "spec.checkpoint.gracePeriod", "at most 1 hour, got \"2h\""},
      {"backoff max below initial", "command: [x]\nretry: {backoff: {initial: 1h, max: 10m}}\n", Y, "spec.retry.backoff.max", "must be at least initial (1h), got 10m"},
      // Enumerations.
      {"bad topology", WithCommand(R"("topology":"rack",)"), J, "spec.topology", "must be one of node, leaf, spine or any, got \"rack\""},
      {"SIGKILL", WithCommand(R"("checkpoint":{"dir":"/c","signal":"SIGKILL"},)"), J, "spec.checkpoint.signal", "must be one of SIGUSR1, SIGUSR2, SIGTERM or SIGINT, got \"SIGKILL\""},
      {"checkpoint without dir", WithCommand(R"("checkpoint":{"interval":"1h"},)"), J, "spec.checkpoint.dir", "is required"},
      {"relative working dir", WithCommand(R"("workingDir":"work",)"), J, "spec.workingDir", "must be an absolute path"},
      // Containers.
      {"image as an option", WithCommand(R"("image":"--privileged",)"), J, "spec.image", "must be an image reference"},
      {"image with a space", WithCommand(R"("image":"ubuntu latest",)"), J, "spec.image", "got \"ubuntu latest\""},
      {"mounts without image", WithCommand(R"("mounts":[{"hostPath":"/d","containerPath":"/d"}],)"), J, "spec.mounts", "needs image"},
      {"mount without hostPath", WithCommand(R"("image":"u","mounts":[{"containerPath":"/d"}],)"), J, "spec.mounts[0].hostPath", "is required"},
      {"relative mount", WithCommand(R"("image":"u","mounts":[{"hostPath":"d","containerPath":"/d"}],)"), J, "spec.mounts[0].hostPath", "must be an absolute path"},
      {"mount with a colon", WithCommand(R"("image":"u","mounts":[{"hostPath":"/d:rw","containerPath":"/d"}],)"), J, "spec.mounts[0].hostPath", "may not contain ':' or ','"},
      {"mount over /proc", WithCommand(R"("image":"u","mounts":[{"hostPath":"/d","containerPath":"/proc/1"}],)"), J, "spec.mounts[0].containerPath", "may not be /proc or below it"},
      {"mount over /", WithCommand(R"("image":"u","mounts":[{"hostPath":"/d","containerPath":"//"}],)"), J, "spec.mounts[0].containerPath", "may not be /"},
      {"mount twice", WithCommand(R"("image":"u","mounts":[{"hostPath":"/a","containerPath":"/d"},{"hostPath":"/b","containerPath":"/d"}],)"), J, "spec.mounts[1].containerPath", "is mounted twice"},
      {"mount readOnly yes", WithCommand(R"("image":"u","mounts":[{"hostPath":"/a","containerPath":"/d","readOnly":"yes"}],)"), J, "spec.mounts[0].readOnly", ""},
      {"mount unknown field", WithCommand(R"("image":"u","mounts":[{"hostPath":"/a","containerPath":"/d","mode":"ro"}],)"), J, "spec.mounts[0].mode", "unknown field"},
      // Dependencies.
      {"afterok:", WithCommand(R"("dependencies":"afterok:",)"), J, "spec.dependencies", "must be dependencies such as \"afterok:12:13,afterany:14-20\", got \"afterok:\""},
      {"afterok:abc", WithCommand(R"("dependencies":"afterok:abc",)"), J, "spec.dependencies", "must name jobs by positive integer ids or ranges of them, got \"abc\" in \"afterok:abc\""},
      {"afterok:5-", WithCommand(R"("dependencies":"afterok:5-",)"), J, "spec.dependencies", "must name jobs by positive integer ids or ranges of them, got \"5-\" in \"afterok:5-\""},
      {"afterok:9-5", WithCommand(R"("dependencies":"afterok:9-5",)"), J, "spec.dependencies", "must give a range from the lower id to the higher, got \"9-5\" in \"afterok:9-5\""},
      {"afterok:1-1025", WithCommand(R"("dependencies":"afterok:1-1025",)"), J, "spec.dependencies", "must list at most 1024 dependencies"},
      {"afterok:1-9e18", WithCommand(R"("dependencies":"afterok:1-9000000000000000000",)"), J, "spec.dependencies", "must list at most 1024 dependencies"},
      {"sometimes:12", WithCommand(R"("dependencies":"sometimes:12",)"), J, "spec.dependencies", "must be one of afterok, afterany, afternotok, after or aftercorr, got \"sometimes\""},
      {"afterok:0", WithCommand(R"("dependencies":"afterok:0",)"), J, "spec.dependencies", "got \"0\" in \"afterok:0\""},
      {"both , and ?", WithCommand(R"("dependencies":"afterok:1,afterok:2?afterok:3",)"), J, "spec.dependencies", "may join dependencies with , (all must hold) or ? (any may), not both"},
      {"afterok:1+10", WithCommand(R"("dependencies":"afterok:1+10",)"), J, "spec.dependencies", "a delay (+MINUTES) applies to after only, got \"afterok:1+10\""},
      {"after:1+x", WithCommand(R"("dependencies":"after:1+1h",)"), J, "spec.dependencies", "must give the delay after + as whole minutes from 0 to 525600 (a year), got \"after:1+1h\""},
      {"after:1+", WithCommand(R"("dependencies":"after:1+",)"), J, "spec.dependencies", "as whole minutes"},
      {"afterok delay", WithCommand(R"("dependencies":[{"type":"afterok","job":1,"delay":"5m"}],)"), J, "spec.dependencies[0].delay", "applies to type after only"},
      {"any with singleton", WithCommand(R"("dependencies":"afterok:1?afterok:2","singleton":true,)"), J, "spec.singleton", "cannot be joined with dependencies of which any one is enough"},
      {"dependency job 0", WithCommand(R"("dependencies":[{"type":"afterok","job":0}],)"), J, "spec.dependencies[0].job", "must be a positive integer job id, got 0"},
      {"dependency job -3", WithCommand(R"("dependencies":[{"type":"afterany","job":-3}],)"), J, "spec.dependencies[0].job", "got -3"},
      {"dependency without job", WithCommand(R"("dependencies":[{"type":"afterany"}],)"), J, "spec.dependencies[0].job", "is required"},
      // env.
      {"env key 1BAD", WithCommand(R"("env":{"1BAD":"x"},)"), J, "spec.env[\"1BAD\"]", "must be a variable name matching [A-Za-z_][A-Za-z0-9_]*"},
      {"env key A-B (list form)", WithCommand(R"("env":[{"name":"A-B","value":"x"}],)"), J, "spec.env[0].name", "got \"A-B\""},
      {"env value NUL", WithCommand(R"("env":{"A":"x\u0000y"},)"), J, "spec.env.A", "without NUL bytes or line breaks, got \"x\\u0000y\""},
      {"env value newline", WithCommand(R"("env":{"LD_PRELOAD":"/home/m/ev.so \n"},)"), J, "spec.env.LD_PRELOAD", "without NUL bytes or line breaks"},
      {"env value CR (list form)", WithCommand(R"("env":[{"name":"PATH","value":"/x\r"}],)"), J, "spec.env[0].value", "without NUL bytes or line breaks"},
      {"secretEnv value newline", WithCommand(R"("secretEnv":{"KEY":"a\nb"},)"), J, "spec.secretEnv.KEY", "without NUL bytes or line breaks"},
      {"env duplicate in list form", WithCommand(R"("env":[{"name":"A"},{"name":"A"}],)"), J, "spec.env[1].name", "duplicate variable \"A\""},
      // Names.
      {"empty name", WithCommand(R"("name":"",)"), J, "spec.name", name_rule},
      {"name too long", WithCommand("\"name\":\"" + std::string(129, 'a') + "\","), J, "spec.name", "(129 bytes)"},
      {"name ../etc", WithCommand(R"("name":"../etc",)"), J, "spec.name", "got \"../etc\""},
      {"name with a space", WithCommand(R"("name":"a b",)"), J, "spec.name", "got \"a b\""},
      {"name $(rm -rf /)", WithCommand(R"x("name":"$(rm -rf /)",)x"), J, "spec.name", "got \"$(rm -rf /)\""},
      {"name SQL injection", WithCommand(R"("name":"'; DROP TABLE jobs; --",)"), J, "spec.name", "got \"'; DROP TABLE jobs; --\""},
      {"name <script>", WithCommand(R"("name":"<script>alert(1)</script>",)"), J, "spec.name", "got \"<script>alert(1)</script>\""},
      {"name with NUL", WithCommand(R"("name":"a\u0000b",)"), J, "spec.name", "got \"a\\u0000b\""},
      {"name with escape sequence", "command: [x]\nname: \"a\\e[31mb\"\n", Y, "spec.name", "got \"a\\u001b[31mb\""},
      {"name with newline", "command: [x]\nname: \"a\\nb\"\n", Y, "spec.name", "got \"a\\nb\""},
      {"name ..", WithCommand(R"("name":"..",)"), J, "spec.name", "starting with a letter or digit, got \"..\""},
      {"queue -rf", WithCommand(R"("queue":"-rf",)"), J, "spec.queue", "got \"-rf\""},
      {"invalid UTF-8 in YAML", "command: [x]\nname: \"a\xff\"\n", Y, "spec.name", "must be valid UTF-8 text, got \"a\\xff\""},
      // Broken documents.
      {"truncated JSON", R"({"command":["true")", J, "spec", "invalid JSON: parse error at line 1, column 19: syntax error while parsing array"},
      {"trailing garbage", R"({"command":["true"]} x)", J, "spec", "invalid JSON: parse error at line 1, column 22"},
      {"empty JSON", "", J, "spec", "invalid JSON"},
      {"YAML bad indentation", "command:\n  - a\n - b\n", Y, "spec", "invalid YAML at line 3"},
      {"YAML unclosed quote", "command: [\"true]\nname: a\n", Y, "spec", "invalid YAML at line"},
      {"YAML unclosed flow", "command: [x\n", Y, "spec", "invalid YAML at line"},
      {"top-level list", "[1, 2]", J, "spec", "must be an object with the job's fields, got a list of 2 items"},
      {"top-level scalar", "hello", Y, "spec", "must be an object with the job's fields, got \"hello\""},
      {"top-level null", "null", J, "spec", "got null"},
      {"empty YAML document", "", Y, "spec", "got an empty document"},
      {"comment-only YAML", "# nothing\n", Y, "spec", "got an empty document"},
      {"two YAML documents", "command: [x]\n---\ncommand: [y]\n", Y, "spec", "expected one YAML document"},
      {"unsupported YAML tag", "command: [x]\nname: !!binary aGk=\n", Y, "spec", "unsupported YAML tag"},
      {"1000 levels of [ in JSON", WithCommand("\"labels\":" + Nested(1000) + ","), J, "spec", "nested deeper than 32 levels"},
      {"1000 levels of [ in YAML", "command: [x]\nlabels: " + Nested(1000) + "\n", Y, "spec", "nested deeper than 32 levels"},
      {"5 MiB input", WithCommand("\"script\":\"" + std::string(5 << 20, 'a') + "\","), J, "spec", "the limit is 4 MiB"},
      {"YAML alias bomb", BillionLaughs(), Y, "spec", "aliases expand the document beyond 4 MiB"},
      {"100001 values", WithCommand("\"labels\":[" + Zeros(100'001) + "],"), J, "spec", "document has more than 100000 values"},
      // Everything else.
      {"beginTime not RFC 3339", WithCommand(R"("beginTime":"2026-11-26 10:00",)"), J, "spec.beginTime", "must be an RFC 3339 timestamp such as \"2026-11-26T10:00:00Z\" or \"2026-11-26T11:00:00+01:00\", got \"2026-11-26 10:00\""},
      {"beginTime with short offset", WithCommand(R"("beginTime":"2026-11-26T10:00:00+0100",)"), J, "spec.beginTime", "RFC 3339"},
      {"beginTime Feb 30", WithCommand(R"("beginTime":"2026-02-30T10:00:00Z",)"), J, "spec.beginTime", "RFC 3339"},
      {"backoff factor 0", WithCommand(R"("retry":{"backoff":{"factor":0}},)"), J, "spec.retry.backoff.factor", "must be an integer from 1 to 10, got 0"},
      {"retry limit 101", WithCommand(R"("retry":{"limit":101},)"), J, "spec.retry.limit", "from 0 to 100, got 101"},
      {"exit code 300", WithCommand(R"("retry":{"failOnExitCodes":[1,300]},)"), J, "spec.retry.failOnExitCodes[1]", "must be an integer from 0 to 255, got 300"},
      {"65 labels", WithCommand(Labels(65)), J, "spec.labels", "must be an object of at most 64 labels, got an object with 65 fields"},
      {"label value too long", WithCommand("\"labels\":{\"a\":\"" + std::string(257, 'v') + "\"},"), J, "spec.labels.a", "at most 256 characters"},
      {"gpuType with a slash", WithCommand(R"("resources":{"gpuType":"nvidia/h100"},)"), J, "spec.resources.gpuType", "got \"nvidia/h100\""},
      // Elastic jobs.
      {"replicas a string", WithCommand(R"("replicas":"1:4",)"), J, "spec.replicas", "or {min, max} for an elastic job"},
      {"replicas without max", WithCommand(R"("replicas":{"min":1},)"), J, "spec.replicas.max", "is required for an elastic job"},
      {"replicas max below min", WithCommand(R"("replicas":{"min":3,"max":2},)"), J, "spec.replicas.max", "must be at least min (3), got 2"},
      {"replicas min 0", WithCommand(R"("replicas":{"min":0,"max":2},)"), J, "spec.replicas.min", "from 1 to 4096, got 0"},
      {"elastic within a leaf", WithCommand(R"("replicas":{"min":1,"max":2},"topology":"leaf",)"), J, "spec.topology", "must be any for an elastic job"},
      {"elastic array", WithCommand(R"("replicas":{"min":1,"max":2},"array":3,)"), J, "spec.array", "cannot be an array of elastic jobs"},
      // Distinct and whole nodes.
      {"onePerNode a string", WithCommand(R"("onePerNode":"yes",)"), J, "spec.onePerNode", "true or false"},
      {"onePerNode elastic", WithCommand(R"("replicas":{"min":1,"max":2},"onePerNode":true,)"), J, "spec.onePerNode", "cannot be set for an elastic job"},
      {"exclusive on one node", WithCommand(R"("replicas":2,"topology":"node","exclusive":true,)"), J, "spec.exclusive", "which topology node (all on one node) cannot hold"},
      // A script's arguments.
      {"args with a command", WithCommand(R"("args":["x"],)"), J, "spec.args", "are a script's arguments; a command takes its own"},
      // Slurm's job model.
      {"slurm elastic", WithCommand(R"("replicas":{"min":1,"max":2},"slurm":{},)"), J, "spec.replicas", "a Slurm-style job (slurm) has a fixed number of nodes"},
      {"slurm container nodes", WithCommand(R"("replicas":2,"image":"busybox","slurm":{},)"), J, "spec.image", "cannot run in a container yet"},
      {"slurm on one node", WithCommand(R"("replicas":2,"topology":"node","slurm":{},)"), J, "spec.topology", "runs on distinct nodes"},
      {"slurm gpusPerTask zero", WithCommand(R"("slurm":{"gpusPerTask":0},)"), J, "spec.slurm.gpusPerTask", "1"},
      // Signals before the time limit.
      {"limitSignal USR3", WithCommand(R"("limitSignal":{"signal":"USR3"},)"), J, "spec.limitSignal.signal", "a signal name (USR1, SIGTERM, ...) or number from 1 to 64, got \"USR3\""},
      {"limitSignal 65", WithCommand(R"("limitSignal":{"signal":"65"},)"), J, "spec.limitSignal.signal", "number from 1 to 64"},
      {"limitSignal before 1 day", WithCommand(R"("limitSignal":{"before":"1d"},)"), J, "spec.limitSignal.before", "65535 s"},
      {"limitSignal to nodes", WithCommand(R"("limitSignal":{"to":"nodes"},)"), J, "spec.limitSignal.to", "one of all, batch or steps, got \"nodes\""},
      {"limitSignal steps without slurm", WithCommand(R"("limitSignal":{"to":"steps"},)"), J, "spec.limitSignal.to", "only a Slurm-style job (with slurm) has"},
      {"limitSignal WINCH to steps", WithCommand(R"("slurm":{},"limitSignal":{"signal":"WINCH","to":"steps"},)"), J, "spec.limitSignal.signal", "SIGWINCH cannot reach the steps: srun passes on only"},
  };
  // clang-format on
}

TEST(JobSpecTest, RejectsMalformedAndHostileSpecs) {
  const std::vector<BadSpec> rows = BadSpecs();
  EXPECT_GE(rows.size(), 45u);
  for (const BadSpec& row : rows) {
    SCOPED_TRACE(row.what);
    StatusOr<JobSpec> r = ParseJobSpec(row.text, row.content_type);
    ASSERT_FALSE(r.ok());
    const Status& s = r.status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.field(), row.field) << s.ToString();
    EXPECT_TRUE(Contains(s.message(), row.message)) << s.ToString();
    EXPECT_FALSE(HasRawControl(s.ToString())) << s.ToString();
    EXPECT_LE(s.ToString().size(), 600u) << s.ToString();
  }
}

// ---- Property: never crash, always a "spec..." InvalidArgument or a spec that round-trips.

void CheckAnyInput(const std::string& input) {
  for (const char* type : {"", kJson, kYaml}) {
    StatusOr<JobSpec> r = ParseJobSpec(input, type);
    if (r.ok()) {
      StatusOr<JobSpec> back = ParseJobSpecJson(JobSpecToJson(*r));
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      ASSERT_TRUE(*back == *r) << JobSpecToJson(*r);
      continue;
    }
    const Status& s = r.status();
    ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    ASSERT_EQ(s.field().rfind("spec", 0), 0u) << s.ToString();
    ASSERT_FALSE(HasRawControl(s.ToString())) << s.ToString();
  }
}

TEST(JobSpecPropertyTest, RandomBytesNeverCrash) {
  Random rng(20260401);
  static constexpr char kAlphabet[] = "{}[]:,\"'- \n\t#&*!|>0123456789.abcdefgnrstuxyz\\";
  for (int i = 0; i < 2000; ++i) {
    std::string input(static_cast<size_t>(rng.Uniform(0, 120)), '\0');
    const bool structured = rng.Bernoulli(0.5);  // half from YAML/JSON punctuation
    for (char& c : input) {
      c = structured ? kAlphabet[rng.Uniform(0, sizeof kAlphabet - 2)] : static_cast<char>(rng.Uniform(0, 255));
    }
    SCOPED_TRACE(testing::Message() << "case " << i);
    CheckAnyInput(input);
  }
}

TEST(JobSpecPropertyTest, MutatedSpecsNeverCrash) {
  Random rng(7);
  const std::string base = kFullJson;
  static constexpr const char* kTokens[] = {"{",    "}",  "[",     "]",       ",", ":",     "\"", "null",
                                            "true", "-1", "1e999", "\\u0000", "0", "\"x\"", "{}", "[]"};
  int parsed = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string s = base;
    const int mutations = static_cast<int>(rng.Uniform(1, 4));
    for (int m = 0; m < mutations && !s.empty(); ++m) {
      const size_t pos = static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(s.size()) - 1));
      switch (rng.Uniform(0, 4)) {
        case 0:
          s[pos] = static_cast<char>(rng.Uniform(0, 255));
          break;
        case 1:
          s.erase(pos, static_cast<size_t>(rng.Uniform(1, 8)));
          break;
        case 2:
          s.insert(pos, 1, static_cast<char>(rng.Uniform(0, 255)));
          break;
        case 3:
          s.insert(pos, kTokens[rng.Uniform(0, std::size(kTokens) - 1)]);
          break;
        default:
          s.insert(pos, s.substr(pos, static_cast<size_t>(rng.Uniform(1, 40))));
          break;
      }
    }
    SCOPED_TRACE(testing::Message() << "case " << i << ": " << s);
    CheckAnyInput(s);
    parsed += ParseJobSpecJson(s).ok();
  }
  EXPECT_GT(parsed, 0);  // some mutations keep the spec valid
}

TEST(JobSpec, SecretEnvRoundTripsAndMayNotRepeatEnv) {
  auto spec = ParseJobSpecJson(R"({"command":["x"],"env":{"A":"1"},"secretEnv":{"TOKEN":"t0p"}})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->secret_env.at("TOKEN"), "t0p");
  auto back = ParseJobSpecJson(JobSpecToJson(*spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *spec);
  auto both = ParseJobSpecJson(R"({"command":["x"],"env":{"A":"1"},"secretEnv":{"A":"2"}})");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().field(), "spec.secretEnv.A") << both.status().ToString();
  // A spec without secrets keeps its canonical text.
  EXPECT_EQ(JobSpecToJson(*ParseJobSpecJson(R"({"command":["x"]})")).find("secretEnv"), std::string::npos);
}

TEST(JobSpecTest, ALimitSignalRoundTripsWithItsDefaults) {
  const JobSpec s =
      MustParse(R"({"command":["x"],"timeLimit":"1h","limitSignal":{"signal":"usr2","before":"90s"}})", kJson);
  ASSERT_TRUE(s.limit_signal.has_value());
  EXPECT_EQ(s.limit_signal->signal, 12);
  EXPECT_EQ(s.limit_signal->before, Duration::Seconds(90));
  EXPECT_EQ(s.limit_signal->to, SignalTarget::kAll);
  EXPECT_TRUE(Contains(JobSpecToJson(s), R"("limitSignal":{"signal":"SIGUSR2","before":"1m30s","to":"all"})"))
      << JobSpecToJson(s);
  EXPECT_TRUE(MustParse(JobSpecToJson(s), kJson) == s);
  const JobSpec d = MustParse("script: x\nslurm: {}\nlimitSignal: {to: steps}\n", kYaml);
  EXPECT_EQ(d.limit_signal->signal, 10) << "SIGUSR1 unless named";
  EXPECT_EQ(d.limit_signal->before, Duration::Seconds(60));
  EXPECT_FALSE(MustParse(JobSpecToJson(d), kJson) == s);
  EXPECT_EQ(JobSpecToJson(MustParse("script: x\n", kYaml)).find("limitSignal"), std::string::npos) << "only when given";
}

TEST(SlurmNodeOrder, NamesSortByTheirTextThenTheirTrailingNumber) {
  std::vector<std::string> nodes = {"gpu10", "gpu2", "cpu1", "gpu002", "gpu", "gpu99999999999999999999999",
                                    "gpu3a", "gpu9"};
  std::sort(nodes.begin(), nodes.end(), SlurmNodeOrderLess);
  EXPECT_EQ(nodes, (std::vector<std::string>{"cpu1", "gpu", "gpu002", "gpu2", "gpu9", "gpu10",
                                             "gpu99999999999999999999999", "gpu3a"}));
  // A strict weak order, which std::sort needs, over every triple of them.
  for (const std::string& x : nodes) {
    EXPECT_FALSE(SlurmNodeOrderLess(x, x));
    for (const std::string& y : nodes) {
      for (const std::string& z : nodes) {
        if (SlurmNodeOrderLess(x, y) && SlurmNodeOrderLess(y, z)) {
          EXPECT_TRUE(SlurmNodeOrderLess(x, z)) << x << y << z;
        }
      }
    }
  }
}

}  // namespace
}  // namespace muster::api
