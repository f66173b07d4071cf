// Jobs that require node features (container jobs need nodes that run
// containers) are placed, promised and given victims only on such nodes,
// and wait with a reason while none has room.
#include <gtest/gtest.h>

#include "common/random.h"
#include "core/cluster_state.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace muster::scheduler {
namespace {

using core::ClusterState;
using core::JobId;
using core::ReasonCode;
using testing::Apply;
using testing::Gpus;
using testing::NodesOf;
using testing::ReasonOf;
using testing::Started;

const std::vector<std::string> kGpuContainers = {"containers", "gpu-containers"};

// One node `name` of `gpus` H100s with `features`, alone under its leaf.
core::NodeIndex AddNode(ClusterState& state, const std::string& name, int gpus, std::vector<std::string> features) {
  core::NodeSpec spec;
  spec.name = name;
  spec.gpu_type = "H100";
  spec.capacity = {gpus, 64000, 512LL << 30};
  spec.features = std::move(features);
  auto n = state.AddNode(spec);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return *n;
}

JobId Submit(ClusterState& state, int replicas, int gpus, std::vector<std::string> features, Time now,
             const std::string& cls = "normal", Duration limit = Duration::Hours(2)) {
  core::JobSpec spec = Gpus(replicas, gpus, limit, cls);
  spec.required_features = std::move(features);
  auto id = state.Submit(spec, now);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return *id;
}

std::string Why(const ClusterState& state, const core::Decisions& d, JobId job, Time now) {
  const core::PendingReason* r = ReasonOf(d, job);
  return r ? core::FormatReason(*r, state.GpuTypeName(r->gpu_type), now, state.FeatureNames(r->features)) : "";
}

TEST(NodeFeatures, AContainerJobRunsOnlyWhereContainersRunAndWaitsWhileThoseAreFull) {
  ClusterState state;
  const auto plain = AddNode(state, "plain", 8, {});
  const auto cpu_only = AddNode(state, "cpu-containers", 8, {"containers"});
  const auto gpu = AddNode(state, "gpu-containers", 8, kGpuContainers);
  auto s = testing::MakeScheduler();
  Time now = Time::Zero();

  // The fullest fit would be any node; only the last can give GPUs to containers.
  const JobId first = Submit(state, 1, 4, kGpuContainers, now);
  core::Decisions d = s->Cycle(state.Snapshot(now));
  EXPECT_EQ(NodesOf(d, first), std::set<core::NodeIndex>{gpu});
  Apply(state, d, now);
  // A container job without GPUs may use the node that runs containers without GPUs.
  const JobId cpu = Submit(state, 1, 0, {"containers"}, now);
  d = s->Cycle(state.Snapshot(now));
  ASSERT_TRUE(Started(d, cpu));
  EXPECT_NE(NodesOf(d, cpu), std::set<core::NodeIndex>{plain});
  Apply(state, d, now);

  // Eight GPUs in a container: 16 GPUs are free, none on a node that can
  // give them to a container. It waits; a plain job behind it starts.
  const JobId big = Submit(state, 1, 8, kGpuContainers, now);
  const JobId plain_job = Submit(state, 1, 8, {}, now);
  d = s->Cycle(state.Snapshot(now));
  EXPECT_FALSE(Started(d, big));
  EXPECT_TRUE(Started(d, plain_job));
  ASSERT_NE(ReasonOf(d, big), nullptr);
  EXPECT_EQ(ReasonOf(d, big)->code, ReasonCode::kResources);
  EXPECT_EQ(ReasonOf(d, big)->free_gpus, 4) << "only the container node's free GPUs count";
  const std::string why = Why(state, d, big, now);
  EXPECT_NE(why.find("need 8 GPU on nodes with containers, gpu-containers; free 4 GPU"), std::string::npos) << why;
  // Its reservation is on the node it can use (when the first job ends).
  bool reserved = false;
  for (const auto& r : d.reservations) {
    if (r.job != big) continue;
    reserved = true;
    for (const auto& a : r.allocations) EXPECT_EQ(a.node, gpu);
  }
  EXPECT_TRUE(reserved);
  Apply(state, d, now);
  EXPECT_EQ(state.nodes()[cpu_only].free.gpus + state.nodes()[plain].free.gpus, 8);

  // The first job ends: the container job starts on its node.
  now = now + Duration::Minutes(10);
  ASSERT_TRUE(state.Finish(first, core::JobState::kCompleted, now).ok());
  d = s->Cycle(state.Snapshot(now));
  EXPECT_EQ(NodesOf(d, big), std::set<core::NodeIndex>{gpu});
}

TEST(NodeFeatures, NoNodeWithTheFeaturesIsUnschedulableUntilOneGainsThem) {
  ClusterState state;
  const auto n = AddNode(state, "n0", 8, {});
  auto s = testing::MakeScheduler();
  const Time now = Time::Zero();
  const JobId job = Submit(state, 1, 1, kGpuContainers, now);
  core::Decisions d = s->Cycle(state.Snapshot(now));
  EXPECT_FALSE(Started(d, job));
  ASSERT_NE(ReasonOf(d, job), nullptr);
  EXPECT_EQ(ReasonOf(d, job)->code, ReasonCode::kUnschedulable);
  EXPECT_EQ(Why(state, d, job, now), "Unschedulable: no schedulable node has containers, gpu-containers");

  // Its agent now reports Podman with GPUs by CDI.
  ASSERT_TRUE(state.SetFeatures(n, kGpuContainers).ok());
  d = s->Cycle(state.Snapshot(now));
  EXPECT_EQ(NodesOf(d, job), std::set<core::NodeIndex>{n});
}

// A choice ("a100|h100", Slurm's -C a100|h100): each node of the job has one
// of the features, nodes that join later included; a node with neither is
// never used.
TEST(NodeFeatures, AChoiceOfFeaturesTakesNodesWithAnyOfThem) {
  ClusterState state;
  const auto a = AddNode(state, "a", 8, {"a100"});
  AddNode(state, "plain", 8, {});
  auto s = testing::MakeScheduler();
  Time now = Time::Zero();
  const JobId gang = Submit(state, 2, 8, {"a100|h100"}, now);
  core::Decisions d = s->Cycle(state.Snapshot(now));
  EXPECT_FALSE(Started(d, gang)) << "one node has a100, the other neither";
  // A node with the other feature of the choice joins; one with both also counts.
  const auto h = AddNode(state, "h", 8, {"h100", "ib"});
  d = s->Cycle(state.Snapshot(now));
  EXPECT_EQ(NodesOf(d, gang), (std::set<core::NodeIndex>{a, h}));
  Apply(state, d, now);
  // Choices and plain features together: (a100|h100) and ib.
  const auto both = AddNode(state, "both", 8, {"a100", "ib"});
  const JobId job = Submit(state, 1, 8, {"a100|h100", "ib"}, now);
  d = s->Cycle(state.Snapshot(now));
  EXPECT_EQ(NodesOf(d, job), std::set<core::NodeIndex>{both});
  // A node's features change: it gains the choice's bit, or loses it.
  ASSERT_TRUE(state.SetFeatures(both, {"ib"}).ok());
  EXPECT_FALSE(core::HasFeatures(state.nodes()[both].features, state.Snapshot(now).pending.back().required_features));
  ASSERT_TRUE(state.SetFeatures(both, {"h100", "ib"}).ok());
  EXPECT_TRUE(core::HasFeatures(state.nodes()[both].features, state.Snapshot(now).pending.back().required_features));
}

TEST(NodeFeatures, PreemptionFreesOnlyANodeTheJobCanUse) {
  ClusterState state;
  const auto plain = AddNode(state, "plain", 8, {});
  const auto gpu = AddNode(state, "gpu-containers", 8, kGpuContainers);
  auto s = testing::MakeScheduler();
  Time now = Time::Zero();
  // Two low jobs fill both nodes; the one on the plain node is the cheaper
  // victim (younger), but frees nothing a container job can use.
  const JobId on_gpu = Submit(state, 1, 8, kGpuContainers, now, "low");
  core::Decisions d = s->Cycle(state.Snapshot(now));
  Apply(state, d, now);
  now = now + Duration::Minutes(30);
  const JobId on_plain = Submit(state, 1, 8, {}, now, "low");
  d = s->Cycle(state.Snapshot(now));
  ASSERT_EQ(NodesOf(d, on_plain), std::set<core::NodeIndex>{plain});
  Apply(state, d, now);

  now = now + Duration::Minutes(10);
  const JobId high = Submit(state, 1, 8, kGpuContainers, now, "high");
  d = s->Cycle(state.Snapshot(now));
  ASSERT_EQ(d.preemptions.size(), 1u) << Why(state, d, high, now);
  EXPECT_EQ(d.preemptions[0].victims, std::vector<JobId>{on_gpu});
  ASSERT_EQ(d.preemptions[0].allocations.size(), 1u);
  EXPECT_EQ(d.preemptions[0].allocations[0].node, gpu);
}

TEST(NodeFeatures, AFeatureNoNodeHasYetIsAcceptedAndTheCountIsBounded) {
  ClusterState state;
  core::JobSpec spec = Gpus(1, 1, Duration::Hours(1));
  spec.required_features = {"infiniband"};
  EXPECT_TRUE(state.Submit(spec, Time::Zero()).ok());
  for (int i = 1; i < core::kMaxNodeFeatures; ++i) spec.required_features.push_back("f" + std::to_string(i));
  EXPECT_TRUE(state.Submit(spec, Time::Zero()).ok());
  spec.required_features.push_back("one-too-many");
  const auto refused = state.Submit(spec, Time::Zero());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().field(), "requiredFeatures");
  EXPECT_NE(refused.status().message().find("at most 64"), std::string::npos) << refused.status().ToString();
}

// Random nodes and jobs with random feature sets: every start, reservation
// and preemption is on nodes that have the job's features, and a job that
// could run on a free node of its own kind is not left waiting for long.
// With spot and on-demand nodes, a job allowed on both goes first to the
// pool where a reclaim costs it least: spot when it checkpoints at least
// every spotCheckpointInterval, on-demand otherwise. Either takes the
// other pool when its own is full, and zero turns the preference off
// (plain best fit: the fuller on-demand node).
TEST(NodeFeatures, JobsThatCheckpointOftenGoToSpotFirstAndTheOthersToOnDemand) {
  const Time t0 = Time::FromMillis(1'000'000);
  for (const Duration rule : {Duration::Hours(1), Duration::Zero()}) {
    ClusterState state;
    const core::NodeIndex spot = AddNode(state, "spot0", 8, {"spot"});
    const core::NodeIndex od = AddNode(state, "od0", 8, {"on-demand"});
    SchedulerOptions options;
    options.spot_checkpoint_interval = rule;
    auto sched = testing::MakeScheduler(options);
    const JobId pinned = Submit(state, 1, 4, {"on-demand"}, t0);
    core::Decisions d = sched->Cycle(state.Snapshot(t0));
    ASSERT_EQ(NodesOf(d, pinned), std::set<core::NodeIndex>{od});
    Apply(state, d, t0);
    core::JobSpec often = Gpus(1, 2, Duration::Hours(2));
    often.checkpoint_interval = Duration::Minutes(10);
    const JobId checkpointing = *state.Submit(often, t0);
    core::JobSpec rarely = Gpus(1, 2, Duration::Hours(2));
    rarely.checkpoint_interval = Duration::Hours(6);
    const JobId seldom = *state.Submit(rarely, t0);
    d = sched->Cycle(state.Snapshot(t0));
    if (rule > Duration::Zero()) {
      EXPECT_EQ(NodesOf(d, checkpointing), std::set<core::NodeIndex>{spot});
    } else {
      EXPECT_EQ(NodesOf(d, checkpointing), std::set<core::NodeIndex>{od}) << "best fit: the fuller node";
    }
    EXPECT_EQ(NodesOf(d, seldom), std::set<core::NodeIndex>{od});
    Apply(state, d, t0);
    // On-demand is full: a job that never checkpoints takes spot capacity
    // rather than wait.
    const JobId never = Submit(state, 1, 2, {}, t0);
    const JobId more = Submit(state, 1, 2, {}, t0);
    d = sched->Cycle(state.Snapshot(t0));
    ASSERT_TRUE(Started(d, never) && Started(d, more)) << "rule " << rule.ToString();
    const std::set<core::NodeIndex> both = {*NodesOf(d, never).begin(), *NodesOf(d, more).begin()};
    EXPECT_TRUE(both.count(spot)) << "rule " << rule.ToString();
  }
}

TEST(NodeFeatures, RandomClustersNeverPlaceAJobOnANodeWithoutItsFeatures) {
  const std::vector<std::vector<std::string>> sets = {{}, {"containers"}, kGpuContainers, {"ib"}, {"ib", "containers"}};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Random rng(seed);
    ClusterState state;
    const int nodes = static_cast<int>(rng.Uniform(2, 24));
    for (int i = 0; i < nodes; ++i) {
      core::NodeSpec spec;
      spec.name = "n" + std::to_string(i);
      spec.gpu_type = "H100";
      spec.capacity = {8, 64000, 512LL << 30};
      spec.topology.leaf = "leaf" + std::to_string(i / 4);
      spec.features = sets[rng.Uniform(0, static_cast<int64_t>(sets.size()) - 1)];
      ASSERT_TRUE(state.AddNode(spec).ok());
    }
    auto s = testing::MakeScheduler();
    std::map<JobId, core::FeatureMask> required;
    Time now = Time::Zero();
    for (int step = 0; step < 30; ++step) {
      for (int k = rng.Uniform(0, 5); k > 0; --k) {
        const int gpus = static_cast<int>(std::vector<int64_t>{0, 1, 2, 4, 8}[rng.Uniform(0, 4)]);
        const int replicas = static_cast<int>(rng.Uniform(1, 3));
        const std::string cls = std::vector<std::string>{"low", "normal", "high"}[rng.Uniform(0, 2)];
        const JobId id = Submit(state, replicas, gpus, sets[rng.Uniform(0, static_cast<int64_t>(sets.size()) - 1)], now,
                                cls, Duration::Minutes(rng.Uniform(5, 120)));
        required[id] = state.Snapshot(now).pending.back().required_features;
      }
      const core::Decisions d = s->Cycle(state.Snapshot(now));
      auto check = [&](JobId job, const std::vector<core::Allocation>& allocations, const char* what) {
        for (const auto& a : allocations) {
          ASSERT_TRUE(core::HasFeatures(state.nodes()[a.node].features, required[job]))
              << "seed " << seed << ": " << what << " of job " << job << " on " << state.nodes()[a.node].spec.name;
        }
      };
      for (const auto& b : d.bindings) check(b.job, b.allocations, "start");
      for (const auto& r : d.reservations) check(r.job, r.allocations, "reservation");
      for (const auto& p : d.preemptions) check(p.job, p.allocations, "preemption");
      Apply(state, d, now);
      now = now + Duration::Minutes(rng.Uniform(1, 20));
      // Jobs past their limit end.
      std::vector<JobId> ended;
      for (const auto& [id, r] : *state.Snapshot(now).running) {
        if (r.expected_end <= now || (r.stopping && rng.Uniform(0, 1) == 1)) ended.push_back(id);
      }
      for (JobId id : ended) ASSERT_TRUE(state.Finish(id, core::JobState::kCompleted, now).ok());
    }
  }
}

}  // namespace
}  // namespace muster::scheduler
