#include "core/cluster_state.h"

#include <cstdint>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace muster::core {

// Lets GoogleTest print "RUNNING" instead of "1-byte object <03>".
inline void PrintTo(JobState s, std::ostream* os) { *os << JobStateName(s); }

namespace {

constexpr int64_t kGi = int64_t{1} << 30;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

NodeSpec MakeNode(const std::string& name, const std::string& gpu_type, int64_t gpus, const std::string& leaf = "",
                  const std::string& spine = "") {
  NodeSpec n;
  n.name = name;
  n.gpu_type = gpu_type;
  n.capacity = {gpus, 64'000, 512 * kGi};
  n.topology.leaf = leaf;
  n.topology.spine = spine;
  return n;
}

// Per replica: 4 GPUs, 8 CPUs, 64Gi.
JobSpec MakeJob(int32_t replicas = 2, const std::string& gpu_type = "H100", Duration limit = Duration::Hours(1)) {
  JobSpec spec;
  spec.name = "train";
  spec.replicas = replicas;
  spec.per_replica = {4, 8'000, 64 * kGi};
  spec.gpu_type = gpu_type;
  spec.time_limit = limit;
  return spec;
}

Allocation Alloc(NodeIndex node, int32_t replicas, const JobSpec& spec) {
  return {node, replicas, spec.per_replica * replicas};
}

// Two H100 nodes under one leaf and one A100 node on its own.
class ClusterStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = Add(MakeNode("a", "H100", 8, "leaf1", "spine1"));
    b_ = Add(MakeNode("b", "H100", 8, "leaf1", "spine1"));
    c_ = Add(MakeNode("c", "A100", 8));
  }

  NodeIndex Add(const NodeSpec& spec) {
    StatusOr<NodeIndex> idx = state_.AddNode(spec);
    EXPECT_TRUE(idx.ok()) << idx.status().ToString();
    return idx.ok() ? *idx : -1;
  }

  JobId SubmitOk(const JobSpec& spec, Time t = Time::FromSeconds(10)) {
    StatusOr<JobId> id = state_.Submit(spec, t);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : -1;
  }

  const Resources& Free(NodeIndex n) const { return state_.nodes()[n].free; }
  const Resources& Capacity(NodeIndex n) const { return state_.nodes()[n].spec.capacity; }
  JobState StateOf(JobId id) const { return state_.Find(id)->state; }

  ClusterState state_;
  NodeIndex a_ = -1, b_ = -1, c_ = -1;
};

// --- AddNode ---

TEST_F(ClusterStateTest, AddNodeAssignsDenseIndicesAndFullFreeCapacity) {
  EXPECT_EQ(a_, 0);
  EXPECT_EQ(b_, 1);
  EXPECT_EQ(c_, 2);
  ASSERT_EQ(state_.nodes().size(), 3u);
  for (NodeIndex n : {a_, b_, c_}) {
    EXPECT_EQ(Free(n), Capacity(n));
    EXPECT_TRUE(state_.nodes()[n].schedulable);
  }
  EXPECT_EQ(state_.nodes()[a_].gpu_type, state_.nodes()[b_].gpu_type);
  EXPECT_NE(state_.nodes()[a_].gpu_type, state_.nodes()[c_].gpu_type);
  EXPECT_EQ(state_.GpuTypeName(state_.nodes()[c_].gpu_type), "A100");
  EXPECT_EQ(state_.GpuTypeName(kAnyGpuType), "any");
  ASSERT_TRUE(state_.FindGpuType("H100").has_value());
  EXPECT_EQ(*state_.FindGpuType("H100"), state_.nodes()[a_].gpu_type);
  EXPECT_FALSE(state_.FindGpuType("V100").has_value());
  // Names match without regard to case, as users write Slurm's gres types.
  EXPECT_EQ(state_.FindGpuType("h100"), state_.FindGpuType("H100"));
}

// "on-demand" says something in a pending reason only once some node is
// spot: before, every node has it.
TEST_F(ClusterStateTest, FeatureNamesNameOnDemandOnlyBesideSpotNodes) {
  NodeSpec plain = {"od-1", "H100", {8, 0, 0}, {}, {"containers", "on-demand"}};
  const NodeIndex od = Add(plain);
  const FeatureMask both = state_.nodes()[od].features;
  EXPECT_EQ(state_.FeatureNames(both), "containers");
  NodeSpec spot = {"spot-1", "H100", {8, 0, 0}, {}, {"spot"}};
  Add(spot);
  EXPECT_EQ(state_.FeatureNames(both), "containers, on-demand");
}

TEST_F(ClusterStateTest, SetCapacityShrinksOnlyWhatNoJobHolds) {
  const JobSpec spec = MakeJob(1);  // 4 GPUs on devices 0-3
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::FromSeconds(10)).ok());
  // Down to 6 GPUs: devices 6 and 7 are free, so it applies at once.
  ASSERT_TRUE(state_.SetCapacity(a_, {6, 64'000, 512 * kGi}).ok());
  EXPECT_EQ(Capacity(a_).gpus, 6);
  EXPECT_EQ(Free(a_).gpus, 2);
  // Down to 2: the job holds devices 0-3.
  const Status refused = state_.SetCapacity(a_, {2, 64'000, 512 * kGi});
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(refused.message(), "hold")) << refused.message();
  EXPECT_EQ(Capacity(a_).gpus, 6);  // unchanged
  EXPECT_TRUE(state_.CheckInvariants().ok());
  ASSERT_TRUE(state_.Finish(id, JobState::kCompleted, Time::FromSeconds(20)).ok());
  ASSERT_TRUE(state_.SetCapacity(a_, {2, 64'000, 512 * kGi}).ok());
  EXPECT_EQ(Free(a_).gpus, 2);
  // Growing is always possible.
  ASSERT_TRUE(state_.SetCapacity(a_, {16, 64'000, 512 * kGi}).ok());
  EXPECT_EQ(Free(a_).gpus, 16);
  EXPECT_TRUE(state_.CheckInvariants().ok());
  EXPECT_FALSE(state_.SetCapacity(a_, {-1, 0, 0}).ok());
}

TEST_F(ClusterStateTest, AddNodeInternsTopology) {
  const auto& nodes = state_.nodes();
  EXPECT_EQ(nodes[a_].leaf, nodes[b_].leaf);
  EXPECT_EQ(nodes[a_].spine, nodes[b_].spine);
  EXPECT_EQ(state_.LeafName(nodes[a_].leaf), "leaf1");
  // A node without a leaf label is alone under its own leaf.
  EXPECT_NE(nodes[c_].leaf, nodes[a_].leaf);
  const NodeIndex d = Add(MakeNode("d", "A100", 8));
  EXPECT_NE(state_.nodes()[d].leaf, state_.nodes()[c_].leaf);
  EXPECT_EQ(state_.nodes()[d].spine, state_.nodes()[c_].spine);  // the default spine
  const ClusterSnapshot snap = state_.Snapshot(Time::Zero());
  EXPECT_EQ(snap.num_leaves, 3);
  EXPECT_EQ(snap.num_spines, 2);
  EXPECT_EQ(snap.num_gpu_types, 2);
  ASSERT_EQ(snap.leaf_spine.size(), 3u);
  EXPECT_EQ(snap.leaf_spine[nodes[a_].leaf], nodes[a_].spine);
}

TEST_F(ClusterStateTest, AddNodeRejectsDuplicateName) {
  StatusOr<NodeIndex> dup = state_.AddNode(MakeNode("a", "A100", 4));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dup.status().field(), "name");
  EXPECT_TRUE(Contains(dup.status().message(), "\"a\"")) << dup.status().message();
  ASSERT_EQ(state_.nodes().size(), 3u);
  EXPECT_EQ(state_.nodes()[a_].spec.gpu_type, "H100");
  EXPECT_EQ(state_.nodes()[a_].spec.capacity.gpus, 8);
}

TEST_F(ClusterStateTest, AddNodeRejectsEmptyName) {
  StatusOr<NodeIndex> r = state_.AddNode(MakeNode("", "H100", 8));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "name");
  EXPECT_EQ(state_.nodes().size(), 3u);
}

TEST_F(ClusterStateTest, AddNodeRejectsNegativeCapacity) {
  NodeSpec gpus = MakeNode("neg-gpus", "H100", -1);
  NodeSpec cpus = MakeNode("neg-cpus", "H100", 8);
  cpus.capacity.cpu_milli = -1;
  NodeSpec mem = MakeNode("neg-mem", "H100", 8);
  mem.capacity.memory_bytes = -1;
  for (const NodeSpec& spec : {gpus, cpus, mem}) {
    SCOPED_TRACE(spec.name);
    StatusOr<NodeIndex> r = state_.AddNode(spec);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), "capacity");
  }
  EXPECT_EQ(state_.nodes().size(), 3u);
}

TEST_F(ClusterStateTest, AddNodeAcceptsZeroCapacity) {
  NodeSpec cpu_only = MakeNode("login", "", 0);
  cpu_only.capacity = {};
  EXPECT_TRUE(state_.AddNode(cpu_only).ok());
}

TEST_F(ClusterStateTest, AddNodeRejectsLeafUnderTwoSpines) {
  StatusOr<NodeIndex> r = state_.AddNode(MakeNode("e", "H100", 8, "leaf1", "spine2"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "topology.spine");
  EXPECT_TRUE(Contains(r.status().message(), "leaf1")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "spine1")) << r.status().message();
  EXPECT_EQ(state_.nodes().size(), 3u);
  // The name was not taken by the rejected call.
  EXPECT_TRUE(state_.AddNode(MakeNode("e", "H100", 8, "leaf1", "spine1")).ok());
}

TEST_F(ClusterStateTest, AddNodeRejectedForTopologyChangesNothing) {
  const int32_t spines_before = state_.Snapshot(Time::Zero()).num_spines;
  ASSERT_FALSE(state_.AddNode(MakeNode("e", "H100", 8, "leaf1", "spine2")).ok());
  EXPECT_EQ(state_.Snapshot(Time::Zero()).num_spines, spines_before);
}

TEST_F(ClusterStateTest, SetSchedulableBumpsVersion) {
  const uint64_t v0 = state_.Snapshot(Time::Zero()).nodes_version;
  ASSERT_TRUE(state_.SetSchedulable(b_, false).ok());
  EXPECT_FALSE(state_.nodes()[b_].schedulable);
  const uint64_t v1 = state_.Snapshot(Time::Zero()).nodes_version;
  EXPECT_NE(v1, v0);
  ASSERT_TRUE(state_.SetSchedulable(b_, false).ok());  // no change
  EXPECT_EQ(state_.Snapshot(Time::Zero()).nodes_version, v1);
  EXPECT_EQ(state_.SetSchedulable(99, true).code(), StatusCode::kNotFound);
  EXPECT_EQ(state_.SetSchedulable(-1, true).code(), StatusCode::kNotFound);
}

// --- Submit ---

TEST_F(ClusterStateTest, SubmitAssignsIdsAndRecordsJob) {
  const JobId first = SubmitOk(MakeJob(), Time::FromSeconds(5));
  const JobId second = SubmitOk(MakeJob());
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 2);
  StatusOr<JobId> explicit_id = state_.Submit(MakeJob(), Time::Zero(), 10);
  ASSERT_TRUE(explicit_id.ok());
  EXPECT_EQ(*explicit_id, 10);
  EXPECT_EQ(SubmitOk(MakeJob()), 11);

  const JobRecord* rec = state_.Find(first);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->id, first);
  EXPECT_EQ(rec->state, JobState::kPending);
  EXPECT_EQ(rec->submit_time, Time::FromSeconds(5));
  EXPECT_EQ(rec->spec.name, "train");
  EXPECT_TRUE(rec->start_time.is_max());
  EXPECT_EQ(state_.pending_count(), 4u);
  EXPECT_EQ(state_.Find(12345), nullptr);
}

TEST_F(ClusterStateTest, SubmitRejectsDuplicateId) {
  ASSERT_TRUE(state_.Submit(MakeJob(), Time::Zero(), 7).ok());
  StatusOr<JobId> dup = state_.Submit(MakeJob(), Time::Zero(), 7);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(state_.pending_count(), 1u);
}

TEST_F(ClusterStateTest, SubmitRejectsZeroReplicas) {
  StatusOr<JobId> r = state_.Submit(MakeJob(0), Time::Zero());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "replicas");
  EXPECT_EQ(r.status().ToString(), "replicas: must be >= 1, got 0");
  EXPECT_EQ(state_.pending_count(), 0u);
  EXPECT_TRUE(state_.jobs().empty());
  EXPECT_EQ(SubmitOk(MakeJob()), 1);  // the rejected call used no id
}

TEST_F(ClusterStateTest, SubmitRejectsNegativeResources) {
  JobSpec gpus = MakeJob();
  gpus.per_replica.gpus = -1;
  StatusOr<JobId> r = state_.Submit(gpus, Time::Zero());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "resources.gpus");

  JobSpec cpus = MakeJob();
  cpus.per_replica.cpu_milli = -1;
  EXPECT_EQ(state_.Submit(cpus, Time::Zero()).status().field(), "resources.cpus");

  JobSpec mem = MakeJob();
  mem.per_replica.memory_bytes = -1;
  EXPECT_EQ(state_.Submit(mem, Time::Zero()).status().field(), "resources.memory");
  EXPECT_EQ(state_.pending_count(), 0u);
}

TEST_F(ClusterStateTest, SubmitRejectsNonPositiveTimeLimit) {
  for (Duration limit : {Duration::Zero(), Duration::Seconds(-1)}) {
    SCOPED_TRACE(limit.ToString());
    StatusOr<JobId> r = state_.Submit(MakeJob(1, "H100", limit), Time::Zero());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().field(), "timeLimit");
  }
  EXPECT_EQ(state_.pending_count(), 0u);
  EXPECT_TRUE(state_.Submit(MakeJob(1, "H100", Duration::Millis(1)), Time::Zero()).ok());
}

TEST_F(ClusterStateTest, SubmitRejectsUnknownPriorityClass) {
  JobSpec spec = MakeJob();
  spec.priority_class = "urgent";
  StatusOr<JobId> r = state_.Submit(spec, Time::Zero());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "priority");
  const std::string msg = r.status().message();
  EXPECT_TRUE(Contains(msg, "\"urgent\"")) << msg;
  EXPECT_TRUE(Contains(msg, "low")) << msg;
  EXPECT_TRUE(Contains(msg, "normal")) << msg;
  EXPECT_TRUE(Contains(msg, "high")) << msg;
  EXPECT_EQ(state_.pending_count(), 0u);
}

TEST_F(ClusterStateTest, SubmitUsesConfiguredClassesAndDefault) {
  ClusterConfig config;
  config.priority_classes = {{"batch", 0}, {"prod", 5}};
  config.default_priority_class = "prod";
  ClusterState state(config);
  JobSpec spec = MakeJob();
  spec.priority_class = "";
  ASSERT_TRUE(state.Submit(spec, Time::Zero()).ok());
  spec.priority_class = "batch";
  ASSERT_TRUE(state.Submit(spec, Time::Zero()).ok());
  spec.priority_class = "normal";  // not configured here
  StatusOr<JobId> bad = state.Submit(spec, Time::Zero());
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "batch, prod")) << bad.status().message();

  const ClusterSnapshot snap = state.Snapshot(Time::Zero());
  ASSERT_EQ(snap.pending.size(), 2u);
  ASSERT_EQ(snap.classes.size(), 2u);
  std::set<std::string> classes;
  for (const PendingJob& p : snap.pending) classes.insert(snap.classes[p.priority_class].name);
  EXPECT_EQ(classes, (std::set<std::string>{"batch", "prod"}));
}

TEST_F(ClusterStateTest, SubmitRejectsDependencyOnUnknownJob) {
  JobSpec spec = MakeJob();
  spec.dependencies = {{DependencyType::kAfterOk, 42}};
  StatusOr<JobId> r = state_.Submit(spec, Time::Zero());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "dependencies[0].job");
  EXPECT_TRUE(Contains(r.status().message(), "42")) << r.status().message();
  EXPECT_EQ(state_.pending_count(), 0u);
}

TEST_F(ClusterStateTest, SubmitNamesTheBadDependencyIndex) {
  const JobId first = SubmitOk(MakeJob());
  JobSpec spec = MakeJob();
  spec.dependencies = {{DependencyType::kAfterOk, first}, {DependencyType::kAfterAny, 999}};
  StatusOr<JobId> r = state_.Submit(spec, Time::Zero());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "dependencies[1].job");

  spec.dependencies = {{DependencyType::kAfterOk, first}};
  StatusOr<JobId> ok = state_.Submit(spec, Time::Zero());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  const ClusterSnapshot snap = state_.Snapshot(Time::Zero());
  ASSERT_EQ(snap.pending.size(), 2u);
  ASSERT_NE(snap.StatusOf(first), nullptr);
  EXPECT_EQ(snap.StatusOf(first)->state, JobState::kPending);
  EXPECT_TRUE(snap.StatusOf(first)->start.is_max()) << "never ran";
  EXPECT_EQ(snap.StatusOf(777), nullptr);
}

TEST_F(ClusterStateTest, SubmitRejectsSelfDependency) {
  JobSpec spec = MakeJob();
  spec.dependencies = {{DependencyType::kAfterOk, 5}};
  StatusOr<JobId> r = state_.Submit(spec, Time::Zero(), 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "dependencies[0].job");
}

TEST_F(ClusterStateTest, SubmitWithHoldStartsHeld) {
  JobSpec spec = MakeJob();
  spec.hold = true;
  const JobId id = SubmitOk(spec);
  EXPECT_EQ(StateOf(id), JobState::kHeld);
  const ClusterSnapshot snap = state_.Snapshot(Time::Zero());
  ASSERT_EQ(snap.pending.size(), 1u);
  EXPECT_TRUE(snap.pending[0].held);
  EXPECT_EQ(snap.StateOf(id), JobState::kHeld);
}

TEST_F(ClusterStateTest, SubmitFillsPendingJob) {
  JobSpec spec = MakeJob(3, "A100", Duration::Minutes(30));
  spec.queue = "research";
  spec.topology = TopologyScope::kLeaf;
  spec.begin_time = Time::FromSeconds(500);
  const JobId id = SubmitOk(spec, Time::FromSeconds(7));
  const ClusterSnapshot snap = state_.Snapshot(Time::FromSeconds(8));
  ASSERT_EQ(snap.pending.size(), 1u);
  const PendingJob& p = snap.pending[0];
  EXPECT_EQ(p.id, id);
  EXPECT_EQ(p.submit_time, Time::FromSeconds(7));
  EXPECT_EQ(p.replicas, 3);
  EXPECT_EQ(p.per_replica, spec.per_replica);
  EXPECT_EQ(p.total_gpus(), 12);
  EXPECT_EQ(p.gpu_type, *state_.FindGpuType("A100"));
  EXPECT_EQ(p.time_limit, Duration::Minutes(30));
  EXPECT_EQ(p.topology, TopologyScope::kLeaf);
  EXPECT_EQ(p.begin_time, Time::FromSeconds(500));
  EXPECT_EQ(state_.QueueName(p.queue), "research");
  EXPECT_FALSE(p.held);
  EXPECT_EQ(snap.now, Time::FromSeconds(8));
}

TEST_F(ClusterStateTest, SubmitWithoutGpuTypeIsAny) {
  SubmitOk(MakeJob(1, ""));
  const ClusterSnapshot snap = state_.Snapshot(Time::Zero());
  ASSERT_EQ(snap.pending.size(), 1u);
  EXPECT_EQ(snap.pending[0].gpu_type, kAnyGpuType);
  EXPECT_EQ(snap.pending[0].begin_time, Time::Zero());
}

// --- Bind ---

TEST_F(ClusterStateTest, BindStartsJobAndReducesFree) {
  const JobSpec spec = MakeJob(2);
  const JobId id = SubmitOk(spec);
  const Time now = Time::FromSeconds(100);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 2, spec)}}, now).ok());

  EXPECT_EQ(StateOf(id), JobState::kRunning);
  EXPECT_EQ(Free(a_), Capacity(a_) - spec.per_replica * 2);
  EXPECT_EQ(Free(a_).gpus, 0);
  EXPECT_EQ(Free(b_), Capacity(b_));
  EXPECT_EQ(state_.pending_count(), 0u);
  EXPECT_EQ(state_.running_count(), 1u);

  const JobRecord* rec = state_.Find(id);
  EXPECT_EQ(rec->start_time, now);
  EXPECT_EQ(rec->first_start, now);
  ASSERT_EQ(rec->allocations.size(), 1u);
  EXPECT_EQ(rec->allocations[0], Alloc(a_, 2, spec));

  const RunningJob& run = state_.running().at(id);
  EXPECT_EQ(run.start, now);
  EXPECT_EQ(run.expected_end, now + Duration::Hours(1));
  EXPECT_EQ(state_.Snapshot(now).StateOf(id), JobState::kRunning);
  EXPECT_TRUE(state_.CheckInvariants().ok()) << state_.CheckInvariants().ToString();
}

TEST_F(ClusterStateTest, BindSplitsGangAcrossNodes) {
  const JobSpec spec = MakeJob(3);
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 2, spec), Alloc(b_, 1, spec)}}, Time::Zero()).ok());
  EXPECT_EQ(Free(a_).gpus, 0);
  EXPECT_EQ(Free(b_).gpus, 4);
  EXPECT_EQ(Free(b_).cpu_milli, 64'000 - 8'000);
  EXPECT_TRUE(state_.CheckInvariants().ok());
}

TEST_F(ClusterStateTest, BindWithoutTimeLimitEndsAtMax) {
  const JobSpec spec = MakeJob(1, "H100", Duration::Infinite());
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::FromSeconds(5)).ok());
  EXPECT_TRUE(state_.running().at(id).expected_end.is_max());
}

// Checks that a rejected Bind left the job pending and every node untouched.
void ExpectUnchanged(const ClusterState& state, JobId id, const std::vector<Resources>& free) {
  EXPECT_EQ(state.Find(id)->state, JobState::kPending);
  EXPECT_TRUE(state.Find(id)->allocations.empty());
  EXPECT_EQ(state.pending_count(), 1u);
  EXPECT_EQ(state.running_count(), 0u);
  ASSERT_EQ(state.nodes().size(), free.size());
  for (size_t i = 0; i < free.size(); ++i) EXPECT_EQ(state.nodes()[i].free, free[i]) << i;
  EXPECT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
}

std::vector<Resources> FreeOf(const ClusterState& state) {
  std::vector<Resources> out;
  for (const Node& n : state.nodes()) out.push_back(n.free);
  return out;
}

TEST_F(ClusterStateTest, BindRejectsWrongReplicaTotalAndChangesNothing) {
  const JobSpec spec = MakeJob(2);
  const JobId id = SubmitOk(spec);
  const std::vector<Resources> before = FreeOf(state_);

  Status too_few = state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::Zero());
  EXPECT_EQ(too_few.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(too_few.field(), "allocations");
  ExpectUnchanged(state_, id, before);

  Status too_many = state_.Bind({id, {Alloc(a_, 1, spec), Alloc(b_, 2, spec)}}, Time::Zero());
  EXPECT_EQ(too_many.code(), StatusCode::kInvalidArgument);
  ExpectUnchanged(state_, id, before);

  Status empty = state_.Bind({id, {}}, Time::Zero());
  EXPECT_FALSE(empty.ok());
  ExpectUnchanged(state_, id, before);

  // The same job still binds afterwards.
  EXPECT_TRUE(state_.Bind({id, {Alloc(a_, 2, spec)}}, Time::Zero()).ok());
}

TEST_F(ClusterStateTest, BindRejectsCapacityExceeded) {
  const JobSpec spec = MakeJob(3);
  const JobId id = SubmitOk(spec);
  const std::vector<Resources> before = FreeOf(state_);

  Status s = state_.Bind({id, {Alloc(a_, 3, spec)}}, Time::Zero());  // 12 GPUs on an 8-GPU node
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(s.message(), "node a ")) << s.message();
  ExpectUnchanged(state_, id, before);

  // Naming the node twice is summed: 2 + 1 replicas on node a is still 12 GPUs.
  s = state_.Bind({id, {Alloc(a_, 2, spec), Alloc(a_, 1, spec)}}, Time::Zero());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  ExpectUnchanged(state_, id, before);
}

TEST_F(ClusterStateTest, BindRejectsCapacityTakenByRunningJob) {
  const JobSpec spec = MakeJob(2);
  const JobId first = SubmitOk(spec);
  const JobId second = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({first, {Alloc(a_, 2, spec)}}, Time::Zero()).ok());
  Status s = state_.Bind({second, {Alloc(a_, 1, spec), Alloc(b_, 1, spec)}}, Time::Zero());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(StateOf(second), JobState::kPending);
  EXPECT_EQ(Free(b_), Capacity(b_));
  EXPECT_EQ(Free(a_).gpus, 0);
  EXPECT_TRUE(state_.CheckInvariants().ok());
}

TEST_F(ClusterStateTest, BindRejectsCpuOrMemoryExceeded) {
  JobSpec spec = MakeJob(1);
  spec.per_replica = {1, 65'000, kGi};  // one CPU more than the node has
  const JobId id = SubmitOk(spec);
  const std::vector<Resources> before = FreeOf(state_);
  EXPECT_EQ(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::Zero()).code(), StatusCode::kFailedPrecondition);
  ExpectUnchanged(state_, id, before);
}

TEST_F(ClusterStateTest, BindRejectsGpuTypeMismatch) {
  const JobSpec spec = MakeJob(1, "H100");
  const JobId id = SubmitOk(spec);
  const std::vector<Resources> before = FreeOf(state_);
  Status s = state_.Bind({id, {Alloc(c_, 1, spec)}}, Time::Zero());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "allocations");
  EXPECT_TRUE(Contains(s.message(), "A100")) << s.message();
  ExpectUnchanged(state_, id, before);
}

TEST_F(ClusterStateTest, BindRejectsMixedGpuTypesForAnyTypeGang) {
  const JobSpec spec = MakeJob(2, "");
  const JobId id = SubmitOk(spec);
  const std::vector<Resources> before = FreeOf(state_);
  Status s = state_.Bind({id, {Alloc(a_, 1, spec), Alloc(c_, 1, spec)}}, Time::Zero());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectUnchanged(state_, id, before);
  // Any single type is fine.
  EXPECT_TRUE(state_.Bind({id, {Alloc(c_, 2, spec)}}, Time::Zero()).ok());
}

TEST_F(ClusterStateTest, BindRejectsAllocationNotMatchingPerReplica) {
  const JobSpec spec = MakeJob(2);
  const JobId id = SubmitOk(spec);
  const std::vector<Resources> before = FreeOf(state_);
  Allocation wrong = Alloc(a_, 2, spec);
  wrong.resources.gpus = 4;  // half of what two replicas need
  EXPECT_EQ(state_.Bind({id, {wrong}}, Time::Zero()).code(), StatusCode::kInvalidArgument);
  ExpectUnchanged(state_, id, before);

  Allocation zero = Alloc(a_, 0, spec);
  EXPECT_EQ(state_.Bind({id, {zero, Alloc(a_, 2, spec)}}, Time::Zero()).code(), StatusCode::kInvalidArgument);
  ExpectUnchanged(state_, id, before);
}

TEST_F(ClusterStateTest, BindRejectsUnknownNode) {
  const JobSpec spec = MakeJob(1);
  const JobId id = SubmitOk(spec);
  const std::vector<Resources> before = FreeOf(state_);
  EXPECT_EQ(state_.Bind({id, {Alloc(17, 1, spec)}}, Time::Zero()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(state_.Bind({id, {Alloc(-1, 1, spec)}}, Time::Zero()).code(), StatusCode::kInvalidArgument);
  ExpectUnchanged(state_, id, before);
}

TEST_F(ClusterStateTest, BindRejectsUnknownOrNonPendingJob) {
  const JobSpec spec = MakeJob(1);
  EXPECT_EQ(state_.Bind({99, {Alloc(a_, 1, spec)}}, Time::Zero()).code(), StatusCode::kFailedPrecondition);
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::Zero()).ok());
  EXPECT_EQ(state_.Bind({id, {Alloc(b_, 1, spec)}}, Time::Zero()).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Free(b_), Capacity(b_));
  EXPECT_EQ(state_.running_count(), 1u);
}

// --- Finish ---

TEST_F(ClusterStateTest, FinishReleasesResources) {
  const JobSpec spec = MakeJob(3);
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 2, spec), Alloc(b_, 1, spec)}}, Time::Zero()).ok());
  const Time end = Time::FromSeconds(600);
  ASSERT_TRUE(state_.Finish(id, JobState::kCompleted, end, "exit 0").ok());

  EXPECT_EQ(Free(a_), Capacity(a_));
  EXPECT_EQ(Free(b_), Capacity(b_));
  EXPECT_EQ(state_.running_count(), 0u);
  const JobRecord* rec = state_.Find(id);
  EXPECT_EQ(rec->state, JobState::kCompleted);
  EXPECT_EQ(rec->end_time, end);
  EXPECT_EQ(rec->reason, "exit 0");
  EXPECT_TRUE(rec->allocations.empty());
  const ClusterSnapshot snap = state_.Snapshot(end);
  EXPECT_TRUE(snap.running_by_end->empty());
  EXPECT_EQ(snap.StateOf(id), JobState::kCompleted);
  EXPECT_TRUE(state_.CheckInvariants().ok());
}

TEST_F(ClusterStateTest, FinishRejectsNonTerminalStateAndChangesNothing) {
  const JobSpec spec = MakeJob(2);
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 2, spec)}}, Time::Zero()).ok());
  const Resources free_a = Free(a_);
  for (JobState s : {JobState::kPending, JobState::kRunning, JobState::kHeld}) {
    EXPECT_EQ(state_.Finish(id, s, Time::FromSeconds(1)).code(), StatusCode::kInvalidArgument) << JobStateName(s);
  }
  EXPECT_EQ(StateOf(id), JobState::kRunning);
  EXPECT_EQ(Free(a_), free_a);
  EXPECT_EQ(state_.running_count(), 1u);
  EXPECT_TRUE(state_.CheckInvariants().ok());
}

TEST_F(ClusterStateTest, FinishRejectsJobNotRunning) {
  const JobId id = SubmitOk(MakeJob());
  EXPECT_EQ(state_.Finish(id, JobState::kCompleted, Time::Zero()).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.Finish(404, JobState::kCompleted, Time::Zero()).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(StateOf(id), JobState::kPending);
  EXPECT_EQ(state_.pending_count(), 1u);
}

// --- EndPending, Hold, Release ---

TEST_F(ClusterStateTest, EndPendingCancelsPendingJob) {
  const JobId keep = SubmitOk(MakeJob());
  const JobId id = SubmitOk(MakeJob());
  ASSERT_TRUE(state_.EndPending(id, JobState::kCancelled, Time::FromSeconds(3), "user").ok());
  const JobRecord* rec = state_.Find(id);
  EXPECT_EQ(rec->state, JobState::kCancelled);
  EXPECT_EQ(rec->end_time, Time::FromSeconds(3));
  EXPECT_EQ(rec->reason, "user");
  EXPECT_EQ(state_.pending_count(), 1u);
  const ClusterSnapshot snap = state_.Snapshot(Time::Zero());
  ASSERT_EQ(snap.pending.size(), 1u);
  EXPECT_EQ(snap.pending[0].id, keep);
  EXPECT_EQ(snap.StateOf(id), JobState::kCancelled);
  EXPECT_TRUE(state_.CheckInvariants().ok());
}

TEST_F(ClusterStateTest, EndPendingFailsJobWithUnmetDependency) {
  const JobId id = SubmitOk(MakeJob());
  ASSERT_TRUE(state_.EndPending(id, JobState::kFailed, Time::Zero(), "dependency").ok());
  EXPECT_EQ(StateOf(id), JobState::kFailed);
  EXPECT_EQ(state_.pending_count(), 0u);
}

TEST_F(ClusterStateTest, EndPendingCancelsHeldJob) {
  JobSpec spec = MakeJob();
  spec.hold = true;
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.EndPending(id, JobState::kCancelled, Time::Zero(), "admin").ok());
  EXPECT_EQ(StateOf(id), JobState::kCancelled);
  EXPECT_EQ(state_.pending_count(), 0u);
}

TEST_F(ClusterStateTest, EndPendingRejectsInvalidTransition) {
  const JobId id = SubmitOk(MakeJob());
  Status s = state_.EndPending(id, JobState::kTimeout, Time::Zero(), "");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(s.message(), "PENDING")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "TIMEOUT")) << s.message();
  EXPECT_EQ(StateOf(id), JobState::kPending);
  EXPECT_EQ(state_.pending_count(), 1u);
}

TEST_F(ClusterStateTest, EndPendingRejectsRunningJob) {
  const JobSpec spec = MakeJob(1);
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::Zero()).ok());
  EXPECT_EQ(state_.EndPending(id, JobState::kCancelled, Time::Zero(), "").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(StateOf(id), JobState::kRunning);
  EXPECT_EQ(state_.running_count(), 1u);
}

TEST_F(ClusterStateTest, EndPendingRejectsNonTerminalState) {
  for (JobState s : {JobState::kRunning, JobState::kStarting, JobState::kHeld}) {
    SCOPED_TRACE(JobStateName(s));
    const JobId id = SubmitOk(MakeJob());
    EXPECT_FALSE(state_.EndPending(id, s, Time::Zero(), "").ok());
    EXPECT_EQ(StateOf(id), JobState::kPending);
  }
  EXPECT_EQ(state_.pending_count(), 3u);
}

TEST_F(ClusterStateTest, HoldAndRelease) {
  const JobSpec spec = MakeJob(1);
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Hold(id).ok());
  EXPECT_EQ(StateOf(id), JobState::kHeld);
  {
    const ClusterSnapshot snap = state_.Snapshot(Time::Zero());
    ASSERT_EQ(snap.pending.size(), 1u);
    EXPECT_TRUE(snap.pending[0].held);
    EXPECT_EQ(snap.StateOf(id), JobState::kHeld);
  }
  // A held job cannot start.
  EXPECT_EQ(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::Zero()).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Free(a_), Capacity(a_));

  ASSERT_TRUE(state_.Release(id).ok());
  EXPECT_EQ(StateOf(id), JobState::kPending);
  {
    const ClusterSnapshot snap = state_.Snapshot(Time::Zero());
    ASSERT_EQ(snap.pending.size(), 1u);
    EXPECT_FALSE(snap.pending[0].held);
    EXPECT_EQ(snap.StateOf(id), JobState::kPending);
  }
  EXPECT_TRUE(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::Zero()).ok());
}

TEST_F(ClusterStateTest, ReleaseOfJobSubmittedHeld) {
  JobSpec spec = MakeJob(1);
  spec.hold = true;
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Release(id).ok());
  EXPECT_EQ(StateOf(id), JobState::kPending);
  EXPECT_TRUE(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::Zero()).ok());
}

TEST_F(ClusterStateTest, HoldAndReleaseRejectJobsNotPending) {
  const JobSpec spec = MakeJob(1);
  const JobId id = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 1, spec)}}, Time::Zero()).ok());
  EXPECT_EQ(state_.Hold(id).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.Release(id).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(state_.Hold(555).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(StateOf(id), JobState::kRunning);
}

// --- Invariants and snapshots ---

TEST_F(ClusterStateTest, InvariantsHoldThroughASequence) {
  EXPECT_TRUE(state_.CheckInvariants().ok());
  const JobSpec big = MakeJob(3);
  const JobSpec one = MakeJob(1);
  const JobSpec any = MakeJob(2, "");
  const JobId j1 = SubmitOk(big);
  const JobId j2 = SubmitOk(one);
  const JobId j3 = SubmitOk(any);
  const JobId j4 = SubmitOk(one);
  ASSERT_TRUE(state_.Bind({j1, {Alloc(a_, 2, big), Alloc(b_, 1, big)}}, Time::FromSeconds(1)).ok());
  ASSERT_TRUE(state_.CheckInvariants().ok()) << state_.CheckInvariants().ToString();
  ASSERT_TRUE(state_.Bind({j2, {Alloc(b_, 1, one)}}, Time::FromSeconds(2)).ok());
  ASSERT_TRUE(state_.Bind({j3, {Alloc(c_, 2, any)}}, Time::FromSeconds(3)).ok());
  ASSERT_TRUE(state_.CheckInvariants().ok()) << state_.CheckInvariants().ToString();
  EXPECT_FALSE(state_.Bind({j4, {Alloc(b_, 1, one)}}, Time::FromSeconds(4)).ok());  // b is full
  ASSERT_TRUE(state_.Hold(j4).ok());
  ASSERT_TRUE(state_.Finish(j1, JobState::kTimeout, Time::FromSeconds(5)).ok());
  ASSERT_TRUE(state_.CheckInvariants().ok()) << state_.CheckInvariants().ToString();
  ASSERT_TRUE(state_.Release(j4).ok());
  ASSERT_TRUE(state_.Bind({j4, {Alloc(a_, 1, one)}}, Time::FromSeconds(6)).ok());
  ASSERT_TRUE(state_.Finish(j3, JobState::kFailed, Time::FromSeconds(7)).ok());
  ASSERT_TRUE(state_.CheckInvariants().ok()) << state_.CheckInvariants().ToString();

  EXPECT_EQ(state_.running_count(), 2u);
  EXPECT_EQ(state_.pending_count(), 0u);
  EXPECT_EQ(Free(a_).gpus, 4);
  EXPECT_EQ(Free(b_).gpus, 4);
  EXPECT_EQ(Free(c_), Capacity(c_));

  ASSERT_TRUE(state_.Finish(j2, JobState::kCompleted, Time::FromSeconds(8)).ok());
  ASSERT_TRUE(state_.Finish(j4, JobState::kCompleted, Time::FromSeconds(9)).ok());
  EXPECT_TRUE(state_.CheckInvariants().ok());
  for (NodeIndex n : {a_, b_, c_}) EXPECT_EQ(Free(n), Capacity(n));
}

TEST_F(ClusterStateTest, SnapshotListsPendingAndRunningByExpectedEnd) {
  const JobSpec three_h = MakeJob(1, "H100", Duration::Hours(3));
  const JobSpec one_h = MakeJob(1, "H100", Duration::Hours(1));
  const JobSpec no_limit = MakeJob(1, "A100", Duration::Infinite());
  const JobSpec two_h = MakeJob(1, "A100", Duration::Hours(2));
  const JobId j3h = SubmitOk(three_h);
  const JobId j1h = SubmitOk(one_h);
  const JobId jinf = SubmitOk(no_limit);
  const JobId j2h = SubmitOk(two_h);
  SubmitOk(MakeJob(1));
  SubmitOk(MakeJob(2));

  const Time t0 = Time::FromSeconds(1'000);
  ASSERT_TRUE(state_.Bind({j3h, {Alloc(a_, 1, three_h)}}, t0).ok());
  ASSERT_TRUE(state_.Bind({jinf, {Alloc(c_, 1, no_limit)}}, t0).ok());
  ASSERT_TRUE(state_.Bind({j1h, {Alloc(b_, 1, one_h)}}, t0 + Duration::Minutes(30)).ok());
  ASSERT_TRUE(state_.Bind({j2h, {Alloc(c_, 1, two_h)}}, t0).ok());

  const ClusterSnapshot snap = state_.Snapshot(t0);
  EXPECT_EQ(snap.pending.size(), 2u);
  EXPECT_EQ(snap.nodes.size(), 3u);
  ASSERT_NE(snap.running, nullptr);
  EXPECT_EQ(snap.running->size(), 4u);
  ASSERT_NE(snap.running_by_end, nullptr);
  std::vector<std::pair<Time, JobId>> order(snap.running_by_end->begin(), snap.running_by_end->end());
  const std::vector<std::pair<Time, JobId>> expected = {
      {t0 + Duration::Minutes(90), j1h},
      {t0 + Duration::Hours(2), j2h},
      {t0 + Duration::Hours(3), j3h},
      {Time::Max(), jinf},
  };
  EXPECT_EQ(order, expected);
  EXPECT_EQ(snap.nodes[c_].free.gpus, 0);
}

TEST_F(ClusterStateTest, SnapshotOrdersEqualEndsById) {
  const JobSpec spec = MakeJob(1, "H100", Duration::Hours(1));
  const JobId first = SubmitOk(spec);
  const JobId second = SubmitOk(spec);
  ASSERT_TRUE(state_.Bind({second, {Alloc(b_, 1, spec)}}, Time::Zero()).ok());
  ASSERT_TRUE(state_.Bind({first, {Alloc(a_, 1, spec)}}, Time::Zero()).ok());
  const ClusterSnapshot snap = state_.Snapshot(Time::Zero());
  ASSERT_EQ(snap.running_by_end->size(), 2u);
  EXPECT_EQ(snap.running_by_end->begin()->second, first);
  EXPECT_EQ(snap.running_by_end->rbegin()->second, second);
}

TEST_F(ClusterStateTest, BindAssignsDisjointGpuDevicesAndFinishFreesThem) {
  const JobSpec one = MakeJob(1);  // 4 GPUs
  const JobId j1 = SubmitOk(one), j2 = SubmitOk(one), j3 = SubmitOk(one);
  ASSERT_TRUE(state_.Bind({j1, {Alloc(a_, 1, one)}}, Time::FromSeconds(20)).ok());
  ASSERT_TRUE(state_.Bind({j2, {Alloc(a_, 1, one)}}, Time::FromSeconds(20)).ok());
  const auto& r1 = state_.running().at(j1);
  const auto& r2 = state_.running().at(j2);
  EXPECT_EQ(r1.gpu_ids.at(0), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(r2.gpu_ids.at(0), (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_TRUE(state_.CheckNode(a_).ok());
  // The devices of a finished job are the ones the next job gets.
  ASSERT_TRUE(state_.Finish(j1, JobState::kCompleted, Time::FromSeconds(30)).ok());
  ASSERT_TRUE(state_.Bind({j3, {Alloc(a_, 1, one)}}, Time::FromSeconds(30)).ok());
  EXPECT_EQ(state_.running().at(j3).gpu_ids.at(0), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(state_.CheckInvariants().ok()) << state_.CheckInvariants().ToString();
}

TEST_F(ClusterStateTest, BindOnNamedDevicesKeepsThemAndRefusesOnesInUse) {
  const JobSpec one = MakeJob(1);  // 4 GPUs on node a (8)
  const JobId j1 = SubmitOk(one), j2 = SubmitOk(one);
  const std::vector<std::vector<int32_t>> high = {{4, 5, 6, 7}};
  ASSERT_TRUE(state_.Bind({j1, {Alloc(a_, 1, one)}}, Time::FromSeconds(20), &high).ok());
  EXPECT_EQ(state_.running().at(j1).gpu_ids.at(0), high[0]);
  // Refused, and nothing changes: a device in use, one named twice, one out
  // of range, a list of the wrong size, lists that do not match the allocations.
  const std::vector<std::vector<int32_t>> bad[] = {
      {{3, 4, 0, 1}}, {{0, 1, 1, 2}}, {{0, 1, 2, 8}}, {{0, 1, 2}}, {{0, 1, 2, 3}, {0}}};
  for (const auto& ids : bad) {
    const Status st = state_.Bind({j2, {Alloc(a_, 1, one)}}, Time::FromSeconds(20), &ids);
    EXPECT_FALSE(st.ok());
    EXPECT_TRUE(state_.running().count(j2) == 0);
    EXPECT_EQ(state_.nodes()[a_].free.gpus, 4);
  }
  EXPECT_TRUE(state_.CheckInvariants().ok()) << state_.CheckInvariants().ToString();
  // Without names, the lowest free devices.
  ASSERT_TRUE(state_.Bind({j2, {Alloc(a_, 1, one)}}, Time::FromSeconds(20)).ok());
  EXPECT_EQ(state_.running().at(j2).gpu_ids.at(0), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(state_.CheckInvariants().ok()) << state_.CheckInvariants().ToString();
}

TEST_F(ClusterStateTest, GangGetsDevicesOnEveryNode) {
  const JobSpec gang = MakeJob(3);  // 3 x 4 GPUs over two nodes
  const JobId id = SubmitOk(gang);
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 2, gang), Alloc(b_, 1, gang)}}, Time::FromSeconds(20)).ok());
  const auto& r = state_.running().at(id);
  ASSERT_EQ(r.gpu_ids.size(), 2u);
  EXPECT_EQ(r.gpu_ids[0].size(), 8u);
  EXPECT_EQ(r.gpu_ids[1].size(), 4u);
  EXPECT_TRUE(state_.CheckInvariants().ok());
}

TEST_F(ClusterStateTest, RequeueReleasesEverythingAndKeepsSubmitTime) {
  const JobSpec gang = MakeJob(2);
  const JobId id = SubmitOk(gang, Time::FromSeconds(5));
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 2, gang)}}, Time::FromSeconds(20)).ok());
  const int64_t gpus = state_.running().at(id).gpus();
  ASSERT_GT(gpus, 0);
  ASSERT_TRUE(state_.Requeue(id, Time::FromSeconds(30), "requeued by user").ok());
  EXPECT_EQ(StateOf(id), JobState::kPending);
  EXPECT_EQ(Free(a_), Capacity(a_));
  const ClusterSnapshot snap = state_.Snapshot(Time::FromSeconds(31));
  ASSERT_EQ(snap.pending.size(), 1u);
  EXPECT_EQ(snap.pending[0].submit_time, Time::FromSeconds(5));
  // The 10 s it ran count as service, in this run and the next.
  EXPECT_EQ(snap.pending[0].attained_gpu_seconds, 10 * gpus);
  EXPECT_TRUE(state_.CheckInvariants().ok());
  // It can run again.
  ASSERT_TRUE(state_.Bind({id, {Alloc(b_, 2, gang)}}, Time::FromSeconds(40)).ok());
  EXPECT_EQ(state_.running().at(id).AttainedGpuSeconds(Time::FromSeconds(45)), 15 * gpus);
  EXPECT_FALSE(state_.Requeue(12345, Time::FromSeconds(50), "").ok());
}

TEST_F(ClusterStateTest, RestoredServiceCarriesIntoTheNextRun) {
  const JobSpec job = MakeJob(1);
  const JobId id = SubmitOk(job, Time::FromSeconds(5));
  // Earlier attempts (as a restart reads them from the store): 100 GPU-
  // seconds run, 20 s queued before them, pending again since t=200.
  ASSERT_TRUE(state_.RestoreService(id, 100, Duration::Seconds(20), Time::FromSeconds(200)).ok());
  ClusterSnapshot snap = state_.Snapshot(Time::FromSeconds(230));
  ASSERT_EQ(snap.pending.size(), 1u);
  EXPECT_EQ(snap.pending[0].attained_gpu_seconds, 100);
  EXPECT_EQ(snap.pending[0].QueuedFor(Time::FromSeconds(230)), Duration::Seconds(50));
  ASSERT_TRUE(state_.Bind({id, {Alloc(a_, 1, job)}}, Time::FromSeconds(230)).ok());
  const int64_t gpus = state_.running().at(id).gpus();
  EXPECT_EQ(state_.running().at(id).AttainedGpuSeconds(Time::FromSeconds(240)), 100 + 10 * gpus);
  EXPECT_EQ(state_.running().at(id).queued, Duration::Seconds(50));
  // Only a pending job's service is restored.
  EXPECT_FALSE(state_.RestoreService(id, 1, Duration::Zero(), Time::Zero()).ok());
}

TEST_F(ClusterStateTest, RestoredEndedJobsResolveDependencies) {
  ASSERT_TRUE(
      state_.RestoreEnded(50, MakeJob(1), Time::FromSeconds(1), JobState::kCompleted, Time::FromSeconds(9), "").ok());
  EXPECT_FALSE(
      state_.RestoreEnded(51, MakeJob(1), Time::FromSeconds(1), JobState::kRunning, Time::FromSeconds(9), "").ok());
  JobSpec dep = MakeJob(1);
  dep.dependencies.push_back({DependencyType::kAfterOk, 50});
  const JobId id = SubmitOk(dep);
  EXPECT_GT(id, 50);
  EXPECT_EQ(state_.Snapshot(Time::Zero()).StateOf(50), JobState::kCompleted);
}

}  // namespace
}  // namespace muster::core

namespace muster::core {
namespace {

// A GPU type first named by a job, and only later by a node: the per-queue
// GPU counts grow with it, and a queue's quota on that type applies once
// the type exists.
TEST(ClusterStateQuotas, ATypeNamedByAJobBeforeAnyNodeIsCountedOnceANodeHasIt) {
  ClusterConfig config;
  config.queues = {{"team", {}, {{"B200", 8}}, ""}};
  ClusterState state(config);
  ASSERT_TRUE(state.AddNode(MakeNode("a", "H100", 8)).ok());
  JobSpec spec = MakeJob(1, "B200");
  spec.queue = "team";
  StatusOr<JobId> id = state.Submit(spec, Time::FromSeconds(1));
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
  StatusOr<NodeIndex> b = state.AddNode(MakeNode("b", "B200", 8));
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(state.Bind({*id, {Alloc(*b, 1, spec)}}, Time::FromSeconds(2)).ok());
  EXPECT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
  const ClusterSnapshot snap = state.Snapshot(Time::FromSeconds(3));
  const int32_t b200 = *state.FindGpuType("B200");
  EXPECT_EQ(snap.UsageOf(0, b200), 4);
  EXPECT_EQ(snap.QuotaOf(0)->Limit(b200), 8);
  EXPECT_EQ(state.GpusByQueue(), (std::vector<std::pair<int32_t, int64_t>>{{0, 4}}));
}

}  // namespace
}  // namespace muster::core
