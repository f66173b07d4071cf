#include "server/options.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

TEST(JobDefaults, AreReadAndAppliedToSpecsThatLeaveThemOut) {
  auto o = ParseServerOptions(R"(
jobDefaults:
  timeLimit: 4h
  retry: {limit: 7, backoff: {initial: 5s}, failOnExitCodes: [2]}
  checkpoint: {gracePeriod: 2m, keep: 5}
)",
                              "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const api::SpecDefaults& d = o->job_defaults;
  EXPECT_EQ(d.retry.limit, 7);
  EXPECT_EQ(d.retry.backoff.initial, Duration::Seconds(5));
  EXPECT_EQ(d.retry.backoff.max, Duration::Minutes(10));  // the built-in default
  EXPECT_EQ(d.retry.fail_on_exit_codes, std::vector<int32_t>{2});
  EXPECT_EQ(d.grace_period, Duration::Minutes(2));
  EXPECT_EQ(d.keep, 5);
  EXPECT_EQ(d.time_limit, Duration::Hours(4));

  // A spec without retry gets them all; one that sets a field keeps it and
  // gets the rest.
  auto bare = api::ParseJobSpec("command: [x]\ncheckpoint: {dir: /c}\n", "application/yaml", d);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->retry.limit, 7);
  EXPECT_EQ(bare->retry.backoff.initial, Duration::Seconds(5));
  EXPECT_EQ(bare->checkpoint->grace_period, Duration::Minutes(2));
  EXPECT_EQ(bare->checkpoint->keep, 5);
  EXPECT_EQ(bare->time_limit, Duration::Hours(4));
  auto own = api::ParseJobSpec(
      "command: [x]\nretry: {limit: 1, backoff: {factor: 3}}\ncheckpoint: {dir: /c, keep: 1}\n", "application/yaml", d);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->retry.limit, 1);
  EXPECT_EQ(own->retry.backoff.factor, 3);
  EXPECT_EQ(own->retry.backoff.initial, Duration::Seconds(5));
  EXPECT_EQ(own->retry.fail_on_exit_codes, std::vector<int32_t>{2});
  EXPECT_EQ(own->checkpoint->keep, 1);
  EXPECT_EQ(own->checkpoint->grace_period, Duration::Minutes(2));
  EXPECT_EQ(api::ParseJobSpec("command: [x]\ntimeLimit: unlimited\n", "application/yaml", d)->time_limit,
            Duration::Infinite());  // a spec may still ask for no limit
  EXPECT_EQ(api::ParseJobSpec(R"({"command":["x"],"timeLimit":null})", "application/json", d)->time_limit,
            Duration::Hours(4));  // null is left out
  // Without configuration: the built-in defaults.
  auto plain = api::ParseJobSpec("command: [x]\n", "application/yaml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->retry.limit, 3);
  EXPECT_TRUE(plain->time_limit.is_infinite());
}

TEST(JobDefaults, BadValuesNameTheServerOption) {
  struct Case {
    const char* yaml;
    const char* field;
  } cases[] = {
      {"jobDefaults: {retry: {limit: -1}}", "server.jobDefaults.retry.limit"},
      {"jobDefaults: {retry: {limt: 2}}", "server.jobDefaults.retry.limt"},
      {"jobDefaults: {retry: {backoff: {initial: 1h, max: 1m}}}", "server.jobDefaults.retry.backoff.max"},
      {"jobDefaults: {checkpoint: {keep: 0}}", "server.jobDefaults.checkpoint.keep"},
      {"jobDefaults: {checkpoint: {dir: /x}}", "server.jobDefaults.checkpoint.dir"},
      {"jobDefaults: {retries: {}}", "server.jobDefaults.retries"},
      {"jobDefaults: {timeLimit: 500ms}", "server.jobDefaults.timeLimit"},
      {"jobDefaults: 3", "server.jobDefaults"},
  };
  for (const Case& c : cases) {
    auto o = ParseServerOptions(c.yaml, "test.yaml");
    ASSERT_FALSE(o.ok()) << c.yaml;
    EXPECT_EQ(o.status().field(), c.field) << c.yaml << ": " << o.status().ToString();
  }
}

// Found by server_options_fuzz: the listen address was echoed raw, so a
// control character in the file reached the terminal and the log as is.
// Found by server_options_fuzz once it ran in CI: the policy name went
// into the error raw, control characters and all.
TEST(SchedulerPolicy, AnUnknownNameIsEchoedEscaped) {
  auto o = ParseServerOptions("scheduler: {policy: \"muster\\x01\\x1b[2J\"}\n", "test.yaml");
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().field(), "server.scheduler.policy") << o.status().ToString();
  for (unsigned char c : o.status().ToString()) EXPECT_GE(c, 0x20) << o.status().ToString();
  EXPECT_NE(o.status().message().find("unknown policy \"muster\\u0001"), std::string::npos) << o.status().message();
}

TEST(SchedulerPolicy, BackfillPlansByLimitsUnlessPredictionsAreAskedFor) {
  auto o = ParseServerOptions("scheduler: {policy: muster}\n", "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->scheduler.predict_run_times);
  o = ParseServerOptions("scheduler: {backfillBy: prediction}\n", "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->scheduler.predict_run_times);
}

TEST(SchedulerPolicy, SpotPlacementAndTheCheckpointBudgetAreRead) {
  auto o = ParseServerOptions("", "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->scheduler.spot_checkpoint_interval, Duration::Hours(1));
  EXPECT_EQ(o->checkpoint_bytes_per_second, 0);
  o = ParseServerOptions("scheduler: {spotCheckpointInterval: 0s}\ncheckpoints: {writeBandwidth: 5G}\n", "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->scheduler.spot_checkpoint_interval, Duration::Zero());
  EXPECT_EQ(o->checkpoint_bytes_per_second, 5'000'000'000);
}

TEST(Listen, ABadAddressIsEchoedEscaped) {
  auto o = ParseServerOptions("listen: \"127.0.\\x10.1:8x\"\n", "test.yaml");
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().field(), "server.listen");
  for (unsigned char c : o.status().ToString()) EXPECT_GE(c, 0x20) << o.status().ToString();
  EXPECT_NE(o.status().message().find(R"(got "127.0.\u0010.1:8x")"), std::string::npos) << o.status().message();
  // A fair-share key that is not a name is an error, not a yaml-cpp exception.
  o = ParseServerOptions("fairShare: {shares: {[a]: 1}}\n", "test.yaml");
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().field(), "server.fairShare.shares") << o.status().ToString();
}

TEST(FairShareShares, AreReadByQueueName) {
  auto o = ParseServerOptions("fairShare: {shares: {research: 3, prod: 1}}", "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->fairshare.shares.at("research"), 3.0);
  scheduler::FairShare fs(o->fairshare);
  fs.NameQueue(0, "prod");
  fs.NameQueue(1, "research");
  fs.NameQueue(2, "other");
  EXPECT_EQ(fs.named(), 3);
  // Equal usage: the queue with the larger share keeps more points.
  fs.Advance(Time::FromMillis(0), {{0, 8}, {1, 8}, {2, 8}});
  fs.Advance(Time::FromMillis(3'600'000), {{0, 8}, {1, 8}, {2, 8}});
  const std::vector<int64_t> p = fs.Points(3);
  EXPECT_GT(p[1], p[0]);
  EXPECT_EQ(p[0], p[2]);
  auto bad = ParseServerOptions("fairShare: {shares: {research: 0}}", "test.yaml");
  EXPECT_EQ(bad.status().field(), "server.fairShare.shares.research");
}

// Every error names its key the same way, whether parsing or the checks
// across keys found it; a key given twice is an error, not the first or
// last silently taken.
TEST(ServerOptions, ErrorsNameTheKeyAsTheFileSpellsIt) {
  struct Case {
    const char* yaml;
    const char* field;
  } cases[] = {
      {"cycleInterval: 1ms", "server.cycleInterval"},
      {"agents: {lostAfter: 1s}", "server.agents.lostAfter"},
      {"defaultPriorityClass: nope", "server.defaultPriorityClass"},
      {"scheduler: {policy: bogus}", "server.scheduler.policy"},
      {"listen: 127.0.0.1:1\nlisten: 127.0.0.1:2", "server.listen"},
      {"agents: {lease: 10s, lease: 20s}", "server.agents.lease"},
  };
  for (const Case& c : cases) {
    auto o = ParseServerOptions(std::string(c.yaml) + "\nstore: /tmp/x.db\n", "test.yaml");
    ASSERT_FALSE(o.ok()) << c.yaml;
    EXPECT_EQ(o.status().field(), c.field) << c.yaml << ": " << o.status().ToString();
  }
  EXPECT_NE(ParseServerOptions("listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", "test.yaml")
                .status()
                .message()
                .find("given more than once"),
            std::string::npos);
}

}  // namespace
}  // namespace muster::server

namespace muster::server {
namespace {

TEST(Queues, QuotasClassesAndPreemptionAreRead) {
  auto o = ParseServerOptions(R"(
priorityClasses:
  - {name: batch, weight: 0, preemptible: true}
  - {name: urgent, weight: 50000, mayPreempt: true}
defaultPriorityClass: batch
scheduler: {preemption: {minRunTime: 10m, maxPerCycle: 2}}
queues:
  - {name: research, guarantee: {H100: 16}, limit: {H100: 32, "*": 48}, share: 3}
  - {name: prod, guarantee: 8}
)",
                              "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->cluster.queues.size(), 2u);
  EXPECT_EQ(o->cluster.queues[0].guarantee.at("H100"), 16);
  EXPECT_EQ(o->cluster.queues[0].limit.at("*"), 48);
  EXPECT_EQ(o->cluster.queues[1].guarantee.at("*"), 8);
  EXPECT_EQ(o->fairshare.shares.at("research"), 3);
  EXPECT_TRUE(o->cluster.priority_classes[0].preemptible);
  EXPECT_TRUE(o->cluster.priority_classes[1].may_preempt);
  EXPECT_EQ(o->scheduler.preemption.min_run_time, Duration::Minutes(10));
  EXPECT_EQ(o->scheduler.preemption.max_per_cycle, 2);
}

TEST(InteractiveClass, BoundsTheTimeLimitOfItsJobsAndTheDefaultClassIsUsed) {
  auto o = ParseServerOptions(R"(
priorityClasses:
  - {name: batch, weight: 0, preemptible: true}
  - {name: standard, weight: 10}
  - {name: notebook, weight: 100, interactive: true, maxTimeLimit: 4h}
  - {name: shell, weight: 90, interactive: true}
defaultPriorityClass: standard
jobDefaults: {timeLimit: 24h}
)",
                              "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const core::PriorityClass& notebook = o->cluster.priority_classes[2];
  EXPECT_TRUE(notebook.interactive);
  EXPECT_TRUE(notebook.may_preempt);
  EXPECT_EQ(notebook.max_time_limit, Duration::Hours(4));
  EXPECT_EQ(o->cluster.priority_classes[3].max_time_limit, Duration::Hours(8));    // the default bound
  EXPECT_EQ(o->cluster.priority_classes[3].preempt_grace, Duration::Seconds(30));  // the default cut
  EXPECT_TRUE(o->cluster.priority_classes[1].preempt_grace.is_infinite());
  const api::SpecDefaults d = o->SpecDefaults();

  auto bare = api::ParseJobSpec("command: [x]\n", "application/yaml", d);
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->priority, "standard");  // defaultPriorityClass, not a built-in name
  EXPECT_EQ(bare->time_limit, Duration::Hours(24));
  auto nb = api::ParseJobSpec("command: [x]\npriority: notebook\n", "application/yaml", d);
  ASSERT_TRUE(nb.ok()) << nb.status().ToString();
  EXPECT_EQ(nb->time_limit, Duration::Hours(4));  // the default, cut to the class's bound
  auto short_one = api::ParseJobSpec("command: [x]\npriority: notebook\ntimeLimit: 30m\n", "application/yaml", d);
  ASSERT_TRUE(short_one.ok());
  EXPECT_EQ(short_one->time_limit, Duration::Minutes(30));
  for (const char* limit : {"5h", "unlimited"}) {
    auto long_one = api::ParseJobSpec(std::string("command: [x]\npriority: notebook\ntimeLimit: ") + limit + "\n",
                                      "application/yaml", d);
    ASSERT_FALSE(long_one.ok()) << limit;
    EXPECT_EQ(long_one.status().field(), "spec.timeLimit");
    EXPECT_NE(long_one.status().message().find("above the maximum of class notebook (4h"), std::string::npos)
        << long_one.status().ToString();
  }

  struct Case {
    const char* yaml;
    const char* field;
  } bad[] = {
      {"priorityClasses: [{name: n, interactive: true, preemptible: true}]\ndefaultPriorityClass: n",
       "server.priorityClasses[0].preemptible"},
      {"priorityClasses: [{name: n, interactive: true, mayPreempt: false}]\ndefaultPriorityClass: n",
       "server.priorityClasses[0].mayPreempt"},
      {"priorityClasses: [{name: n, maxTimeLimit: 0s}]\ndefaultPriorityClass: n",
       "server.priorityClasses[0].maxTimeLimit"},
      {"priorityClasses: [{name: n, preemptGrace: -1s}]\ndefaultPriorityClass: n",
       "server.priorityClasses[0].preemptGrace"},
  };
  for (const Case& c : bad) {
    auto r = ParseServerOptions(c.yaml, "test.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_EQ(r.status().field(), c.field) << r.status().ToString();
  }
}

TEST(Queues, BadQuotasNameTheKey) {
  struct Case {
    const char* yaml;
    const char* field;
  } cases[] = {
      {"queues: [{name: a, guarantee: 16, limit: 8}]", "server.queues[0].guarantee"},
      {"queues: [{name: a, guarantee: {H100: 4}, limit: {H100: 2}}]", "server.queues[0].guarantee"},
      {"queues: [{name: a}, {name: a}]", "server.queues[1].name"},
      {"queues: [{name: a, limit: -1}]", "server.queues[0].limit"},
      {"queues: [{name: a, limit: {H100: many}}]", "server.queues[0].limit.H100"},
      {"queues: [{name: a, gurantee: 1}]", "server.queues[0].gurantee"},
      {"queues: [{guarantee: 1}]", "server.queues[0].name"},
      {"queues: {a: 1}", "server.queues"},
      {"scheduler: {preemption: {maxPerCycle: -1}}", "server.scheduler.preemption.maxPerCycle"},
      {"scheduler: {preemption: {minRunTime: soon}}", "server.scheduler.preemption.minRunTime"},
      {"scheduler: {backfillBy: guess}", "server.scheduler.backfillBy"},
      {"scheduler: {spotCheckpointInterval: often}", "server.scheduler.spotCheckpointInterval"},
      {"checkpoints: {writeBandwidth: fast}", "server.checkpoints.writeBandwidth"},
      {"priorityClasses: [{name: x, mayPreempt: sometimes}]\ndefaultPriorityClass: x",
       "server.priorityClasses[0].mayPreempt"},
  };
  for (const Case& c : cases) {
    auto o = ParseServerOptions(c.yaml, "test.yaml");
    ASSERT_FALSE(o.ok()) << c.yaml;
    EXPECT_EQ(o.status().field(), c.field) << c.yaml << ": " << o.status().ToString();
  }
}

}  // namespace
}  // namespace muster::server

namespace muster::server {
namespace {

TEST(Queues, NestingIsCheckedAtStart) {
  auto o = ParseServerOptions("queues: [{name: org, limit: 64}, {name: t1, parent: org, guarantee: 8}]", "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->cluster.queues[1].parent, "org");
  auto missing = ParseServerOptions("queues: [{name: t1, parent: org}]", "test.yaml");
  EXPECT_EQ(missing.status().field(), "server.queues[0].parent");
  auto loop = ParseServerOptions("queues: [{name: a, parent: b}, {name: b, parent: a}]", "test.yaml");
  EXPECT_EQ(loop.status().field(), "server.queues[0].parent");
  EXPECT_NE(loop.status().message().find("nested under itself"), std::string::npos) << loop.status().ToString();
}

}  // namespace
}  // namespace muster::server

namespace muster::server {
namespace {

// sbatch's --qos, --partition and --account through the site's tables
// (api/slurm_mapping.h): a QOS onto a class (its time bound included), a
// partition onto a queue and node features, an account onto a queue;
// names not in a configured table refused with the known ones.
TEST(ServerOptionsTest, SlurmNamesMapOntoClassesQueuesAndNodeFeatures) {
  auto o = ParseServerOptions(R"(
priorityClasses:
  - {name: normal, weight: 0}
  - {name: urgent, weight: 10, maxTimeLimit: 2h}
slurm:
  qos: {qos_gpu-t3: urgent, normal: normal}
  partitions: {gpu: {}, hopper: {queue: h100s, features: [h100]}}
  accounts: {six@gpu: research}
)",
                              "test.yaml");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const api::SpecDefaults d = o->SpecDefaults();
  auto s = api::ParseJobSpec(R"({"command":["x"],"slurm":{"qos":"qos_gpu-t3","partition":"hopper"}})",
                             "application/json", d);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->priority, "urgent");
  EXPECT_EQ(s->time_limit, Duration::Hours(2)) << "the class's bound applies";
  EXPECT_EQ(s->queue, "h100s");
  EXPECT_EQ(s->features, std::vector<std::string>{"h100"});
  s = api::ParseJobSpec(R"({"command":["x"],"slurm":{"partition":"hopper","account":"six@gpu"}})", "application/json",
                        d);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->queue, "research") << "an account's queue wins over a partition's";
  s = api::ParseJobSpec(R"({"command":["x"],"queue":"mine","priority":"normal","slurm":{"qos":"qos_gpu-t3"}})",
                        "application/json", d);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->queue, "mine");
  EXPECT_EQ(s->priority, "normal") << "what the spec names itself wins";
  const std::string canonical = api::JobSpecToJson(*s);
  EXPECT_NE(canonical.find(R"("slurm":{"qos":"qos_gpu-t3"})"), std::string::npos) << canonical;
  EXPECT_TRUE(api::ParseJobSpecJson(canonical).ok()) << "a stored spec reads back without the tables";
  for (const auto& [spec, field, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {R"({"command":["x"],"slurm":{"qos":"high"}})", "spec.slurm.qos",
            "unknown QOS \"high\" (known: normal, qos_gpu-t3)"},
           {R"({"command":["x"],"slurm":{"partition":"cpu"}})", "spec.slurm.partition",
            "unknown partition \"cpu\" (known: gpu, hopper)"},
           {R"({"command":["x"],"slurm":{"account":"x"}})", "spec.slurm.account",
            "unknown account \"x\" (known: six@gpu)"},
           {R"({"command":["x"],"slurm":{"qos":"a","cluster":"b"}})", "spec.slurm.cluster", "unknown field"}}) {
    auto bad = api::ParseJobSpec(spec, "application/json", d);
    ASSERT_FALSE(bad.ok()) << spec;
    EXPECT_EQ(bad.status().field(), field);
    EXPECT_NE(bad.status().message().find(message), std::string::npos) << bad.status().ToString();
  }
  // Without tables: a partition is the queue of its name, a QOS is refused.
  auto plain = ParseServerOptions("{}", "test.yaml");
  ASSERT_TRUE(plain.ok());
  s = api::ParseJobSpec(R"({"command":["x"],"slurm":{"partition":"gpu","account":"any"}})", "application/json",
                        plain->SpecDefaults());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->queue, "gpu");
  s = api::ParseJobSpec(R"({"command":["x"],"slurm":{"qos":"high"}})", "application/json", plain->SpecDefaults());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no QOS is configured here"), std::string::npos);
  // A table naming a class that does not exist is a configuration error.
  auto wrong = ParseServerOptions("slurm: {qos: {t3: urgent}}\n", "test.yaml");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().field(), "server.slurm.qos.t3");
}

}  // namespace
}  // namespace muster::server
