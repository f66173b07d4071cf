#include "core/cluster_state.h"

#include <cctype>

#include <algorithm>
#include <map>
#include <set>

namespace muster::core {

Status ClusterState::Reconfigure(ClusterConfig config) {
  for (size_t i = 0; i < config_.priority_classes.size(); ++i) {
    if (i >= config.priority_classes.size() || config.priority_classes[i].name != config_.priority_classes[i].name) {
      return FailedPrecondition("class \"" + config_.priority_classes[i].name + "\" must stay, as class " +
                                std::to_string(i + 1) + ": removing, renaming or reordering classes needs a restart");
    }
  }
  config_ = std::move(config);
  for (size_t i = 0; i < config_.priority_classes.size(); ++i) {
    class_ids_[config_.priority_classes[i].name] = static_cast<int32_t>(i);
  }
  running_per_class_.resize(config_.priority_classes.size(), 0);
  for (const QueueConfig& q : config_.queues) Intern(queues_, queue_ids_, q.name);
  ResolveQuotas();
  return Status::Ok();
}

ClusterState::ClusterState(ClusterConfig config) : config_(std::move(config)) {
  for (size_t i = 0; i < config_.priority_classes.size(); ++i) {
    class_ids_[config_.priority_classes[i].name] = static_cast<int32_t>(i);
  }
  running_per_class_.assign(config_.priority_classes.size(), 0);
  for (const QueueConfig& q : config_.queues) Intern(queues_, queue_ids_, q.name);
  ResolveQuotas();
}

int32_t ClusterState::QueueId(const std::string& name) { return InternQuotaKey(queues_, queue_ids_, name); }

namespace {

// GPU type names are matched without regard to case ("h100" is "H100", as
// users write Slurm's gres types); the first spelling seen is shown.
std::string GpuTypeKey(std::string_view name) {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

}  // namespace

int32_t ClusterState::InternGpuType(const std::string& name) {
  auto [it, inserted] = gpu_type_ids_.try_emplace(GpuTypeKey(name), static_cast<int32_t>(gpu_types_.size()));
  if (inserted) {
    gpu_types_.push_back(name);
    ResolveQuotas();
  }
  return it->second;
}

int32_t ClusterState::InternQuotaKey(std::vector<std::string>& names, std::unordered_map<std::string, int32_t>& ids,
                                     const std::string& name) {
  const size_t before = names.size();
  const int32_t id = Intern(names, ids, name);
  if (names.size() != before) ResolveQuotas();
  return id;
}

StatusOr<FeatureMask> ClusterState::InternFeatures(const std::vector<std::string>& names, const std::string& field) {
  FeatureMask mask = 0;
  for (const std::string& name : names) {
    auto it = std::find(features_.begin(), features_.end(), name);
    if (it == features_.end()) {
      if (features_.size() >= static_cast<size_t>(kMaxNodeFeatures)) {
        return InvalidArgument("\"" + name.substr(0, 64) + "\" would be the cluster's " +
                                   std::to_string(kMaxNodeFeatures + 1) + "th distinct node feature; at most " +
                                   std::to_string(kMaxNodeFeatures) + " are supported",
                               field);
      }
      features_.push_back(name);
      it = features_.end() - 1;
      if (name.find('|') != std::string::npos) {
        // A choice: the nodes that have one of its features have it.
        const FeatureMask bit = FeatureMask{1} << (it - features_.begin());
        for (Node& n : nodes_) {
          if (NodeHasFeature(n.spec.features, name)) n.features |= bit;
        }
        ++nodes_version_;
      }
    }
    mask |= FeatureMask{1} << (it - features_.begin());
  }
  return mask;
}

StatusOr<FeatureMask> ClusterState::NodeFeatureMask(const std::vector<std::string>& features) {
  ASSIGN_OR_RETURN(FeatureMask mask, InternFeatures(features, "features"));
  for (size_t bit = 0; bit < features_.size(); ++bit) {
    if (features_[bit].find('|') != std::string::npos && NodeHasFeature(features, features_[bit])) {
      mask |= FeatureMask{1} << bit;
    }
  }
  return mask;
}

std::string ClusterState::FeatureNames(FeatureMask mask) const {
  const bool spot = std::find(features_.begin(), features_.end(), kSpotFeature) != features_.end();
  std::string out;
  for (size_t bit = 0; bit < features_.size(); ++bit) {
    if (!(mask & (FeatureMask{1} << bit)) || (!spot && features_[bit] == kOnDemandFeature)) continue;
    out += (out.empty() ? "" : ", ") + features_[bit];
  }
  return out;
}

std::vector<std::pair<int32_t, int64_t>> ClusterState::GpusByQueue() const {
  std::vector<std::pair<int32_t, int64_t>> out;
  for (size_t q = 0; q < queue_usage_.size(); ++q) {
    int64_t gpus = 0;
    for (int64_t g : queue_usage_[q]) gpus += g;
    if (gpus > 0) out.emplace_back(static_cast<int32_t>(q), gpus);
  }
  return out;
}

void ClusterState::ResolveQuotas() {
  quotas_.assign(queues_.size(), QueueQuota{});
  queue_usage_.resize(queues_.size());
  for (auto& u : queue_usage_) u.resize(gpu_types_.size(), 0);
  for (const QueueConfig& q : config_.queues) {
    QueueQuota& quota = quotas_[queue_ids_.at(q.name)];
    if (!q.parent.empty()) quota.parent = queue_ids_.at(q.parent);  // validated by the configuration
    quota.guarantee.assign(gpu_types_.size(), 0);
    quota.limit.assign(gpu_types_.size(), kNoLimit);
    for (const auto& [type, n] : q.guarantee) {
      if (type == "*") {
        quota.guarantee_total = n;
      } else if (auto t = gpu_type_ids_.find(GpuTypeKey(type)); t != gpu_type_ids_.end()) {
        quota.guarantee[t->second] = n;
      }
    }
    for (const auto& [type, n] : q.limit) {
      if (type == "*") {
        quota.limit_total = n;
      } else if (auto t = gpu_type_ids_.find(GpuTypeKey(type)); t != gpu_type_ids_.end()) {
        quota.limit[t->second] = n;
      }
    }
  }
}

void ClusterState::CountUsage(const RunningJob& r, int sign) {
  for (const Allocation& a : r.allocations) {
    if (a.resources.gpus == 0) continue;
    queue_usage_[r.queue][nodes_[a.node].gpu_type] += sign * a.resources.gpus;
  }
}

int32_t ClusterState::Intern(std::vector<std::string>& names, std::unordered_map<std::string, int32_t>& ids,
                             const std::string& name) {
  auto [it, inserted] = ids.try_emplace(name, static_cast<int32_t>(names.size()));
  if (inserted) names.push_back(name);
  return it->second;
}

StatusOr<NodeIndex> ClusterState::AddNode(const NodeSpec& spec) {
  if (spec.name.empty()) return InvalidArgument("must not be empty", "name");
  if (node_by_name_.count(spec.name)) {
    return InvalidArgument("duplicate node name \"" + spec.name + "\"", "name");
  }
  if (!spec.capacity.IsNonNegative()) {
    return InvalidArgument("must not be negative, got " + spec.capacity.ToString(), "capacity");
  }
  // A node without a leaf label is alone under its own leaf.
  const std::string leaf = spec.topology.leaf.empty() ? "node:" + spec.name : spec.topology.leaf;
  // Validate before interning anything, so a rejected node changes nothing.
  if (auto known = leaf_ids_.find(leaf); known != leaf_ids_.end()) {
    const std::string& spine = spines_[leaf_spine_[known->second]];
    if (spine != spec.topology.spine) {
      return InvalidArgument("leaf \"" + leaf + "\" is already under spine \"" + spine + "\"", "topology.spine");
    }
  }
  ASSIGN_OR_RETURN(const FeatureMask features, NodeFeatureMask(spec.features));
  const size_t leaves_before = leaves_.size();
  const int32_t leaf_id = Intern(leaves_, leaf_ids_, leaf);
  const int32_t spine_id = Intern(spines_, spine_ids_, spec.topology.spine);
  if (leaves_.size() > leaves_before) leaf_spine_.push_back(spine_id);
  Node node;
  node.spec = spec;
  node.gpu_type = InternGpuType(spec.gpu_type);
  node.leaf = leaf_id;
  node.spine = spine_id;
  node.features = features;
  node.free = spec.capacity;
  const auto index = static_cast<NodeIndex>(nodes_.size());
  nodes_.push_back(std::move(node));
  gpu_owner_.emplace_back(static_cast<size_t>(spec.capacity.gpus), JobId{0});
  node_by_name_[spec.name] = index;
  for (size_t r = 0; r < reservation_specs_.size(); ++r) {
    const std::vector<std::string>& names = reservation_specs_[r].nodes;
    if (std::find(names.begin(), names.end(), spec.name) != names.end()) reservations_[r].nodes.push_back(index);
  }
  ++nodes_version_;
  return index;
}

Status ClusterState::SetSchedulable(NodeIndex node, bool schedulable) {
  if (node < 0 || node >= static_cast<NodeIndex>(nodes_.size())) {
    return NotFound("node index " + std::to_string(node));
  }
  if (nodes_[node].schedulable != schedulable) ++nodes_version_;
  nodes_[node].schedulable = schedulable;
  return Status::Ok();
}

Status ClusterState::SetFeatures(NodeIndex node, const std::vector<std::string>& features) {
  if (node < 0 || node >= static_cast<NodeIndex>(nodes_.size())) {
    return NotFound("node index " + std::to_string(node));
  }
  ASSIGN_OR_RETURN(const FeatureMask mask, NodeFeatureMask(features));
  Node& n = nodes_[node];
  n.spec.features = features;
  if (n.features != mask) ++nodes_version_;
  n.features = mask;
  return Status::Ok();
}

Status ClusterState::SetCapacity(NodeIndex node, const Resources& capacity) {
  if (node < 0 || node >= static_cast<NodeIndex>(nodes_.size())) {
    return NotFound("node index " + std::to_string(node));
  }
  if (!capacity.IsNonNegative()) {
    return InvalidArgument("must not be negative, got " + capacity.ToString(), "capacity");
  }
  Node& n = nodes_[node];
  const Resources used = n.spec.capacity - n.free;
  if (!used.FitsIn(capacity)) {
    return FailedPrecondition("node " + n.spec.name + ": its running jobs hold " + used.ToString() +
                              ", more than the new capacity " + capacity.ToString());
  }
  std::vector<JobId>& owners = gpu_owner_[node];
  for (size_t d = static_cast<size_t>(capacity.gpus); d < owners.size(); ++d) {
    if (owners[d] != 0) {
      return FailedPrecondition("node " + n.spec.name + ": GPU " + std::to_string(d) + " is held by job " +
                                std::to_string(owners[d]));
    }
  }
  owners.resize(static_cast<size_t>(capacity.gpus), JobId{0});
  n.spec.capacity = capacity;
  n.free = capacity - used;
  ++nodes_version_;
  return Status::Ok();
}

StatusOr<JobId> ClusterState::Submit(JobSpec spec, Time submit_time, JobId id) {
  if (spec.replicas < 1) {
    return InvalidArgument("must be >= 1, got " + std::to_string(spec.replicas), "replicas");
  }
  if (spec.min_replicas < 0 || spec.min_replicas > spec.replicas) {
    return InvalidArgument("must be between 1 and replicas (" + std::to_string(spec.replicas) + "), got " +
                               std::to_string(spec.min_replicas),
                           "replicas.min");
  }
  if (spec.per_replica.gpus < 0) {
    return InvalidArgument("must be >= 0, got " + std::to_string(spec.per_replica.gpus), "resources.gpus");
  }
  if (spec.per_replica.cpu_milli < 0) return InvalidArgument("must be >= 0", "resources.cpus");
  if (spec.per_replica.memory_bytes < 0) return InvalidArgument("must be >= 0", "resources.memory");
  if (spec.time_limit <= Duration::Zero()) {
    return InvalidArgument("must be positive, got " + spec.time_limit.ToString(), "timeLimit");
  }
  if (spec.priority_class.empty()) spec.priority_class = config_.default_priority_class;
  auto cls = class_ids_.find(spec.priority_class);
  if (cls == class_ids_.end()) {
    std::string known;
    for (const auto& c : config_.priority_classes) known += (known.empty() ? "" : ", ") + c.name;
    return InvalidArgument("unknown priority class \"" + spec.priority_class + "\" (known: " + known + ")", "priority");
  }
  if (id == 0) id = next_id_;
  if (id < 0) return InvalidArgument("must be positive", "id");
  if (jobs_.count(id)) return Status(StatusCode::kAlreadyExists, "job " + std::to_string(id));
  for (size_t i = 0; i < spec.dependencies.size(); ++i) {
    const JobId dep = spec.dependencies[i].job;
    if (dep == id || !jobs_.count(dep)) {
      return InvalidArgument("unknown job " + std::to_string(dep), "dependencies[" + std::to_string(i) + "].job");
    }
  }
  // A feature no node has yet is interned all the same, as a GPU type is:
  // the job is unschedulable until such a node joins. Last, so a job
  // refused for another reason interns nothing.
  RETURN_IF_ERROR(InternFeatures(spec.required_features, "requiredFeatures").status());
  next_id_ = std::max(next_id_, id + 1);

  PendingJob p = MakePending(id, spec, submit_time, cls->second);
  JobRecord rec;
  rec.id = id;
  rec.spec = std::move(spec);
  rec.submit_time = submit_time;
  rec.state = p.held ? JobState::kHeld : JobState::kPending;
  job_states_[id].state = rec.state;
  jobs_.emplace(id, std::move(rec));
  pending_pos_[id] = pending_.size();
  pending_.push_back(std::move(p));
  return id;
}

PendingJob ClusterState::MakePending(JobId id, const JobSpec& spec, Time submit_time, int32_t priority_class) {
  PendingJob p;
  p.id = id;
  p.submit_time = submit_time;
  p.priority_class = priority_class;
  p.queue = InternQuotaKey(queues_, queue_ids_, spec.queue);
  p.replicas = spec.replicas;
  p.min_replicas = spec.min_replicas;
  p.per_replica = spec.per_replica;
  // A type no node has yet is interned all the same: the job is reported
  // unschedulable until such a node joins.
  p.gpu_type = spec.gpu_type.empty() ? kAnyGpuType : InternGpuType(spec.gpu_type);
  p.reservation = ReservationOf(spec.reservation);
  // Interned when the job was accepted.
  if (auto mask = InternFeatures(spec.required_features, "requiredFeatures"); mask.ok()) p.required_features = *mask;
  p.time_limit = spec.time_limit;
  p.topology = spec.topology;
  p.one_per_node = spec.one_per_node;
  p.exclusive = spec.exclusive;
  p.run_group = spec.run_group;
  p.run_group_limit = spec.run_group_limit;
  p.begin_time = spec.begin_time.value_or(Time::Zero());
  p.held = spec.hold;
  if (auto rec = jobs_.find(id); rec != jobs_.end()) {
    p.released_at = rec->second.released_at;
    p.attained_gpu_seconds = rec->second.attained_gpu_seconds;
    p.queued_before = rec->second.queued;
  }
  p.known_duration = spec.known_duration;
  p.checkpoint_interval = spec.checkpoint_interval;
  p.user = predictor_.Intern(spec.user);
  p.dependencies = spec.dependencies;
  p.dependencies_any = spec.dependencies_any;
  p.pending_since = submit_time;
  return p;
}

void ClusterState::SetReservations(std::vector<AdminReservation> reservations) {
  reservation_specs_ = std::move(reservations);
  reservations_.clear();
  for (const AdminReservation& r : reservation_specs_) {
    ReservationWindow w{r.name, {}, r.start, r.end};
    for (const std::string& node : r.nodes) {
      if (auto it = node_by_name_.find(node); it != node_by_name_.end()) w.nodes.push_back(it->second);
    }
    reservations_.push_back(std::move(w));
  }
  for (PendingJob& p : pending_) {
    auto it = jobs_.find(p.id);
    if (it != jobs_.end()) p.reservation = ReservationOf(it->second.spec.reservation);
  }
}

int32_t ClusterState::ReservationOf(const std::string& name) const {
  if (name.empty()) return kNoReservation;
  for (size_t r = 0; r < reservation_specs_.size(); ++r) {
    if (reservation_specs_[r].name == name) return static_cast<int32_t>(r);
  }
  return kReservationGone;
}

ClusterSnapshot ClusterState::Snapshot(Time now) const {
  ClusterSnapshot s;
  s.now = now;
  s.nodes = nodes_;
  s.nodes_version = nodes_version_;
  s.num_gpu_types = static_cast<int32_t>(gpu_types_.size());
  s.num_leaves = static_cast<int32_t>(leaves_.size());
  s.num_spines = static_cast<int32_t>(spines_.size());
  s.leaf_spine = leaf_spine_;
  for (size_t bit = 0; bit < features_.size(); ++bit) {
    if (features_[bit] == kSpotFeature) s.spot_pool = FeatureMask{1} << bit;
    if (features_[bit] == kOnDemandFeature) s.on_demand_pool = FeatureMask{1} << bit;
  }
  if (s.spot_pool == 0) s.on_demand_pool = 0;
  s.pending = pending_;
  s.reservations = reservations_;
  s.running_by_end = &running_by_end_;
  s.running_by_predicted_end = &running_by_predicted_end_;
  s.predictor = &predictor_;
  s.running = &running_;
  s.classes = config_.priority_classes;
  s.running_per_class = running_per_class_;
  s.running_elastic = running_elastic_;
  s.quotas = quotas_;
  s.queue_usage = &queue_usage_;
  s.job_states = &job_states_;
  return s;
}

void ClusterState::RemovePending(JobId id) {
  auto it = pending_pos_.find(id);
  const size_t pos = it->second;
  pending_pos_.erase(it);
  if (pos + 1 != pending_.size()) {
    pending_[pos] = std::move(pending_.back());
    pending_pos_[pending_[pos].id] = pos;
  }
  pending_.pop_back();
}

StatusOr<int32_t> ClusterState::CheckPlacement(JobId job, const Resources& per_replica, int32_t gpu_type,
                                               const std::vector<Allocation>& allocations,
                                               const std::vector<std::vector<int32_t>>* gpu_ids, bool one_per_node,
                                               bool exclusive) const {
  int32_t replicas = 0;
  // Sum per node first: a binding may name a node twice.
  std::map<NodeIndex, Resources> per_node;
  for (const Allocation& a : allocations) {
    if (a.node < 0 || a.node >= static_cast<NodeIndex>(nodes_.size())) {
      return InvalidArgument("unknown node index " + std::to_string(a.node), "allocations");
    }
    const Node& n = nodes_[a.node];
    // An exclusive job's replica holds its node whole (placement.h).
    if (a.replicas < 1 || a.resources != (exclusive ? n.spec.capacity : per_replica * a.replicas)) {
      return InvalidArgument("allocation does not match the job's per-replica resources", "allocations");
    }
    if ((one_per_node || exclusive) && (a.replicas > 1 || per_node.count(a.node))) {
      return InvalidArgument("node " + n.spec.name + " would hold two replicas of a job that runs one per node",
                             "allocations");
    }
    if (exclusive && !per_replica.FitsIn(n.spec.capacity)) {
      return InvalidArgument("node " + n.spec.name + " is smaller than a replica", "allocations");
    }
    if (per_replica.gpus > 0 && gpu_type != kAnyGpuType && n.gpu_type != gpu_type) {
      return InvalidArgument("node " + n.spec.name + " has GPU type " + gpu_types_[n.gpu_type], "allocations");
    }
    replicas += a.replicas;
    per_node[a.node] += a.resources;
  }
  std::optional<int32_t> type;
  for (const auto& [node, res] : per_node) {
    const Node& n = nodes_[node];
    if (!res.FitsIn(n.free)) {
      return FailedPrecondition("node " + n.spec.name + " has " + n.free.ToString() + " free, binding needs " +
                                res.ToString());
    }
    if (per_replica.gpus > 0) {
      if (type && *type != n.gpu_type) {
        return InvalidArgument("a gang must use one GPU type", "allocations");
      }
      type = n.gpu_type;
    }
  }
  if (gpu_ids) {
    if (gpu_ids->size() != allocations.size()) {
      return InvalidArgument("device lists do not match the allocations", "gpus");
    }
    std::set<std::pair<NodeIndex, int32_t>> named;
    for (size_t i = 0; i < allocations.size(); ++i) {
      const Allocation& a = allocations[i];
      const std::vector<JobId>& owners = gpu_owner_[a.node];
      if (static_cast<int64_t>((*gpu_ids)[i].size()) != a.resources.gpus) {
        return InvalidArgument("allocation on node " + nodes_[a.node].spec.name + " needs " +
                                   std::to_string(a.resources.gpus) + " devices, " +
                                   std::to_string((*gpu_ids)[i].size()) + " named",
                               "gpus");
      }
      for (int32_t g : (*gpu_ids)[i]) {
        if (g < 0 || g >= static_cast<int32_t>(owners.size()) || owners[g] != 0 || !named.insert({a.node, g}).second) {
          return FailedPrecondition("GPU " + std::to_string(g) + " of node " + nodes_[a.node].spec.name +
                                    " is not free for job " + std::to_string(job));
        }
      }
    }
  }
  return replicas;
}

std::vector<std::vector<int32_t>> ClusterState::TakeDevices(JobId job, const std::vector<Allocation>& allocations,
                                                            const std::vector<std::vector<int32_t>>* gpu_ids) {
  std::vector<std::vector<int32_t>> out;
  // Devices: those named, or the lowest free indices on each node (the free
  // count was checked, so enough free devices exist).
  for (size_t i = 0; i < allocations.size(); ++i) {
    const Allocation& a = allocations[i];
    nodes_[a.node].free -= a.resources;
    std::vector<int32_t> ids;
    std::vector<JobId>& owners = gpu_owner_[a.node];
    if (gpu_ids) {
      ids = (*gpu_ids)[i];
      for (int32_t g : ids) owners[g] = job;
    } else {
      for (int32_t g = 0;
           g < static_cast<int32_t>(owners.size()) && static_cast<int64_t>(ids.size()) < a.resources.gpus; ++g) {
        if (owners[g] == 0) {
          owners[g] = job;
          ids.push_back(g);
        }
      }
    }
    out.push_back(std::move(ids));
  }
  return out;
}

Status ClusterState::Bind(const Binding& binding, Time now, const std::vector<std::vector<int32_t>>* gpu_ids) {
  auto pit = pending_pos_.find(binding.job);
  if (pit == pending_pos_.end()) {
    return FailedPrecondition("job " + std::to_string(binding.job) + " is not pending");
  }
  const PendingJob& p = pending_[pit->second];
  if (p.held) return FailedPrecondition("job " + std::to_string(p.id) + " is held");
  ASSIGN_OR_RETURN(const int32_t replicas, CheckPlacement(p.id, p.per_replica, p.gpu_type, binding.allocations, gpu_ids,
                                                          p.one_per_node, p.exclusive));
  if (p.elastic() ? replicas < p.min_replicas || replicas > p.replicas : replicas != p.replicas) {
    return InvalidArgument("binding places " + std::to_string(replicas) + " of " +
                               (p.elastic() ? std::to_string(p.min_replicas) + ".." : "") + std::to_string(p.replicas) +
                               " replicas (gangs are all or nothing)",
                           "allocations");
  }

  RunningJob r;
  r.gpu_ids = TakeDevices(p.id, binding.allocations, gpu_ids);
  r.id = p.id;
  r.start = now;
  r.expected_end = now + p.time_limit;
  r.predicted_end = now + std::min(predictor_.Predict(p.user), p.time_limit);
  r.priority_class = p.priority_class;
  r.queue = p.queue;
  r.allocations = binding.allocations;
  if (p.elastic()) {
    r.min_replicas = p.min_replicas;
    r.max_replicas = p.replicas;
  }
  r.per_replica = p.per_replica;
  r.required_features = p.required_features;
  r.run_group = p.run_group;
  if (r.elastic()) ++running_elastic_;
  running_by_end_.emplace(r.expected_end, r.id);
  running_by_predicted_end_.emplace(r.predicted_end, r.id);

  JobRecord& rec = jobs_.at(p.id);
  r.preempt_immune = rec.preempt_immune;
  r.attained_before_gpu_seconds = rec.attained_gpu_seconds;
  rec.queued = p.QueuedFor(now);
  r.queued = rec.queued;
  ++running_per_class_[p.priority_class];
  CountUsage(r, +1);
  rec.state = JobState::kRunning;
  rec.start_time = now;
  if (rec.first_start.is_max()) rec.first_start = now;
  rec.allocations = binding.allocations;
  ClusterSnapshot::JobStatus& status = job_states_[p.id];
  status.state = JobState::kRunning;
  status.start = std::min(status.start, now);
  running_.emplace(r.id, std::move(r));
  RemovePending(binding.job);
  return Status::Ok();
}

namespace {

// Folds the run's service at its present size into the job before a resize.
void NoteResize(RunningJob& r, Time now) {
  const Time since = r.held_since.is_max() ? r.start : r.held_since;
  if (now > since) r.resized_gpu_seconds += r.gpus() * ((now - since).millis() / 1000);
  r.held_since = now;
}

}  // namespace

Status ClusterState::Grow(JobId job, const std::vector<Allocation>& allocations, Time now,
                          const std::vector<std::vector<int32_t>>* gpu_ids) {
  auto it = running_.find(job);
  if (it == running_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not running");
  RunningJob& r = it->second;
  if (!r.elastic()) return FailedPrecondition("job " + std::to_string(job) + " is not elastic");
  if (r.shrinking) return FailedPrecondition("job " + std::to_string(job) + " is giving back replicas");
  const JobRecord& rec = jobs_.at(job);
  // The gang stays on one GPU type: the one it has.
  int32_t type = rec.spec.gpu_type.empty() ? kAnyGpuType : FindGpuType(rec.spec.gpu_type).value_or(kAnyGpuType);
  if (rec.spec.per_replica.gpus > 0 && !r.allocations.empty()) type = nodes_[r.allocations.front().node].gpu_type;
  ASSIGN_OR_RETURN(const int32_t added, CheckPlacement(job, rec.spec.per_replica, type, allocations, gpu_ids));
  if (r.replicas() + added > r.max_replicas) {
    return InvalidArgument("growing to " + std::to_string(r.replicas() + added) + " replicas, above its maximum of " +
                               std::to_string(r.max_replicas),
                           "allocations");
  }
  NoteResize(r, now);
  CountUsage(r, -1);
  std::vector<std::vector<int32_t>> ids = TakeDevices(job, allocations, gpu_ids);
  r.allocations.insert(r.allocations.end(), allocations.begin(), allocations.end());
  r.gpu_ids.insert(r.gpu_ids.end(), ids.begin(), ids.end());
  CountUsage(r, +1);
  jobs_.at(job).allocations = r.allocations;
  return Status::Ok();
}

Status ClusterState::MarkShrinking(JobId job) {
  auto it = running_.find(job);
  if (it == running_.end() || !it->second.elastic()) {
    return FailedPrecondition("job " + std::to_string(job) + " is not a running elastic job");
  }
  it->second.shrinking = true;
  return Status::Ok();
}

Status ClusterState::ShrinkTo(JobId job, int32_t replicas, Time now) {
  auto it = running_.find(job);
  if (it == running_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not running");
  RunningJob& r = it->second;
  if (!r.elastic()) return FailedPrecondition("job " + std::to_string(job) + " is not elastic");
  const int32_t now_running = r.replicas();
  if (replicas < r.min_replicas || replicas > now_running) {
    return InvalidArgument("must be between its minimum " + std::to_string(r.min_replicas) + " and its " +
                               std::to_string(now_running) + " replicas, got " + std::to_string(replicas),
                           "replicas");
  }
  const Resources per = jobs_.at(job).spec.per_replica;
  NoteResize(r, now);
  CountUsage(r, -1);
  for (int32_t drop = now_running - replicas; drop > 0;) {
    Allocation& last = r.allocations.back();
    std::vector<int32_t>& ids = r.gpu_ids.back();
    const int32_t k = std::min(drop, last.replicas);
    nodes_[last.node].free += per * k;
    for (int64_t g = 0; g < per.gpus * k && !ids.empty(); ++g) {
      gpu_owner_[last.node][ids.back()] = 0;
      ids.pop_back();
    }
    last.replicas -= k;
    last.resources = per * last.replicas;
    if (last.replicas == 0) {
      r.allocations.pop_back();
      r.gpu_ids.pop_back();
    }
    drop -= k;
  }
  CountUsage(r, +1);
  r.shrinking = false;
  jobs_.at(job).allocations = r.allocations;
  return Status::Ok();
}

Status ClusterState::Finish(JobId job, JobState terminal, Time now, std::string reason) {
  auto it = running_.find(job);
  if (it == running_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not running");
  if (!IsTerminal(terminal)) return InvalidArgument("not a terminal state", "state");
  const RunningJob& r = it->second;
  for (size_t i = 0; i < r.allocations.size(); ++i) {
    nodes_[r.allocations[i].node].free += r.allocations[i].resources;
    for (int32_t g : r.gpu_ids[i]) gpu_owner_[r.allocations[i].node][g] = 0;
  }
  running_by_end_.erase({it->second.expected_end, job});
  running_by_predicted_end_.erase({it->second.predicted_end, job});
  // Ended on its own: how long it ran predicts its user's next jobs.
  if (EndedOnItsOwn(terminal)) predictor_.Note(predictor_.Intern(jobs_.at(job).spec.user), now - r.start);
  --running_per_class_[it->second.priority_class];
  if (it->second.elastic()) --running_elastic_;
  CountUsage(it->second, -1);
  running_.erase(it);
  JobRecord& rec = jobs_.at(job);
  rec.state = terminal;
  rec.end_time = now;
  rec.allocations.clear();
  rec.reason = std::move(reason);
  job_states_[job].state = terminal;
  job_states_[job].end = now;
  return Status::Ok();
}

Status ClusterState::EndPending(JobId job, JobState terminal, Time now, std::string reason) {
  if (!pending_pos_.count(job)) {
    return FailedPrecondition("job " + std::to_string(job) + " is not pending");
  }
  if (!IsTerminal(terminal)) {
    return InvalidArgument(std::string(JobStateName(terminal)) + " is not a terminal state", "state");
  }
  JobRecord& rec = jobs_.at(job);
  if (!IsValidTransition(rec.state, terminal)) {
    return FailedPrecondition(std::string("cannot go from ") + JobStateName(rec.state) + " to " +
                              JobStateName(terminal));
  }
  RemovePending(job);
  rec.state = terminal;
  rec.end_time = now;
  rec.reason = std::move(reason);
  job_states_[job].state = terminal;
  job_states_[job].end = now;
  return Status::Ok();
}

Status ClusterState::Requeue(JobId job, Time now, std::string reason, Time not_before) {
  auto it = running_.find(job);
  if (it == running_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not running");
  const RunningJob& r = it->second;
  for (size_t i = 0; i < r.allocations.size(); ++i) {
    nodes_[r.allocations[i].node].free += r.allocations[i].resources;
    for (int32_t g : r.gpu_ids[i]) gpu_owner_[r.allocations[i].node][g] = 0;
  }
  running_by_end_.erase({r.expected_end, job});
  running_by_predicted_end_.erase({r.predicted_end, job});
  JobRecord& rec = jobs_.at(job);
  rec.attained_gpu_seconds = r.AttainedGpuSeconds(now);
  const int32_t cls = r.priority_class;
  --running_per_class_[cls];
  if (r.elastic()) --running_elastic_;
  CountUsage(r, -1);
  running_.erase(it);
  rec.state = JobState::kPending;
  rec.start_time = Time::Max();
  rec.allocations.clear();
  rec.reason = std::move(reason);
  job_states_[job].state = JobState::kPending;
  PendingJob p = MakePending(job, rec.spec, rec.submit_time, cls);
  p.held = false;
  p.begin_time = std::max(p.begin_time, not_before);
  p.pending_since = now;
  pending_pos_[job] = pending_.size();
  pending_.push_back(std::move(p));
  return Status::Ok();
}

Status ClusterState::RestoreService(JobId job, int64_t attained_gpu_seconds, Duration queued_before,
                                    Time pending_since) {
  auto pos = pending_pos_.find(job);
  if (pos == pending_pos_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not pending");
  JobRecord& rec = jobs_.at(job);
  rec.attained_gpu_seconds = attained_gpu_seconds;
  rec.queued = queued_before;
  PendingJob& p = pending_[pos->second];
  p.attained_gpu_seconds = attained_gpu_seconds;
  p.queued_before = queued_before;
  p.pending_since = pending_since;
  return Status::Ok();
}

Status ClusterState::MarkStopping(JobId job, Time by) {
  auto it = running_.find(job);
  if (it == running_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not running");
  RunningJob& r = it->second;
  r.stopping = true;
  if (by < r.expected_end) {
    running_by_end_.erase({r.expected_end, job});
    r.expected_end = by;
    running_by_end_.emplace(by, job);
  }
  if (by < r.predicted_end) {
    running_by_predicted_end_.erase({r.predicted_end, job});
    r.predicted_end = by;
    running_by_predicted_end_.emplace(by, job);
  }
  return Status::Ok();
}

Status ClusterState::NoteCheckpoint(JobId job, Time at, Duration interval) {
  auto it = running_.find(job);
  if (it == running_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not running");
  it->second.last_checkpoint = std::max(it->second.last_checkpoint, at);
  it->second.checkpoint_interval = interval;
  return Status::Ok();
}

Status ClusterState::Nominate(JobId job, std::vector<Allocation> allocations, std::vector<JobId> victims) {
  auto it = pending_pos_.find(job);
  if (it == pending_pos_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not pending");
  for (const Allocation& a : allocations) {
    if (a.node < 0 || a.node >= static_cast<NodeIndex>(nodes_.size())) {
      return InvalidArgument("unknown node index " + std::to_string(a.node), "allocations");
    }
  }
  pending_[it->second].nominated = std::move(allocations);
  pending_[it->second].victims = std::move(victims);
  return Status::Ok();
}

Status ClusterState::SetPreemptImmune(JobId job, bool immune) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return NotFound("job " + std::to_string(job));
  it->second.preempt_immune = immune;
  if (auto r = running_.find(job); r != running_.end()) r->second.preempt_immune = immune;
  return Status::Ok();
}

Status ClusterState::RestoreEnded(JobId id, JobSpec spec, Time submit_time, JobState state, Time end_time,
                                  std::string reason, Time first_start) {
  if (!IsTerminal(state)) return InvalidArgument("not a terminal state", "state");
  if (id <= 0) return InvalidArgument("must be positive", "id");
  if (jobs_.count(id)) return Status(StatusCode::kAlreadyExists, "job " + std::to_string(id));
  JobRecord rec;
  rec.id = id;
  rec.spec = std::move(spec);
  rec.submit_time = submit_time;
  rec.state = state;
  rec.end_time = end_time;
  rec.reason = std::move(reason);
  rec.first_start = first_start;
  job_states_[id] = {state, first_start, end_time};
  jobs_.emplace(id, std::move(rec));
  next_id_ = std::max(next_id_, id + 1);
  return Status::Ok();
}

Status ClusterState::Hold(JobId job) {
  auto it = pending_pos_.find(job);
  if (it == pending_pos_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not pending");
  pending_[it->second].held = true;
  jobs_.at(job).state = JobState::kHeld;
  job_states_[job].state = JobState::kHeld;
  return Status::Ok();
}

Status ClusterState::Release(JobId job, Time now) {
  auto it = pending_pos_.find(job);
  if (it == pending_pos_.end()) return FailedPrecondition("job " + std::to_string(job) + " is not pending");
  pending_[it->second].held = false;
  pending_[it->second].released_at = now;
  jobs_.at(job).released_at = now;
  jobs_.at(job).state = JobState::kPending;
  job_states_[job].state = JobState::kPending;
  return Status::Ok();
}

Status ClusterState::CheckInvariants() const {
  std::vector<Resources> used(nodes_.size());
  for (const auto& [id, r] : running_) {
    int32_t replicas = 0;
    for (const Allocation& a : r.allocations) {
      used[a.node] += a.resources;
      replicas += a.replicas;
    }
    const JobRecord& rec = jobs_.at(id);
    if (r.elastic() ? replicas < r.min_replicas || replicas > r.max_replicas : replicas != rec.spec.replicas) {
      return Internal("job " + std::to_string(id) + " runs " + std::to_string(replicas) + " of " +
                      std::to_string(rec.spec.replicas) + " replicas");
    }
    if (!running_by_end_.count({r.expected_end, id})) {
      return Internal("job " + std::to_string(id) + " missing from the end order");
    }
    if (r.predicted_end > r.expected_end || !running_by_predicted_end_.count({r.predicted_end, id})) {
      return Internal("job " + std::to_string(id) +
                      " missing from the predicted end order, or predicted past its limit");
    }
  }
  if (running_by_end_.size() != running_.size() || running_by_predicted_end_.size() != running_.size()) {
    return Internal("end order size mismatch");
  }
  // The counts kept for the scheduler: running jobs per class, GPUs per
  // queue and type.
  std::vector<int64_t> per_class(running_per_class_.size(), 0);
  std::vector<std::vector<int64_t>> usage(queue_usage_.size(), std::vector<int64_t>(gpu_types_.size(), 0));
  for (const auto& [id, r] : running_) {
    ++per_class[r.priority_class];
    for (const Allocation& a : r.allocations) usage[r.queue][nodes_[a.node].gpu_type] += a.resources.gpus;
  }
  if (per_class != running_per_class_) return Internal("running jobs per class miscounted");
  for (size_t q = 0; q < usage.size(); ++q) {
    if (usage[q] != queue_usage_[q]) return Internal("GPUs held by queue " + queues_[q] + " miscounted");
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!used[i].FitsIn(n.spec.capacity)) {
      return Internal("node " + n.spec.name + " over capacity: " + used[i].ToString() + " of " +
                      n.spec.capacity.ToString());
    }
    if (n.spec.capacity - used[i] != n.free) {
      return Internal("node " + n.spec.name + " free " + n.free.ToString() + " but allocations leave " +
                      (n.spec.capacity - used[i]).ToString());
    }
  }
  if (pending_.size() != pending_pos_.size()) return Internal("pending index size mismatch");
  for (size_t i = 0; i < nodes_.size(); ++i) RETURN_IF_ERROR(CheckNode(static_cast<NodeIndex>(i)));
  return Status::Ok();
}

Status ClusterState::CheckNode(NodeIndex node) const {
  const Node& n = nodes_[node];
  if (!n.free.IsNonNegative() || !n.free.FitsIn(n.spec.capacity)) {
    return Internal("node " + n.spec.name + " free " + n.free.ToString() + " outside [0, " +
                    n.spec.capacity.ToString() + "]");
  }
  int64_t held = 0;
  const std::vector<JobId>& owners = gpu_owner_[node];
  for (size_t g = 0; g < owners.size(); ++g) {
    const JobId holder = owners[g];
    if (holder == 0) continue;
    ++held;
    auto it = running_.find(holder);
    if (it == running_.end()) {
      return Internal("GPU " + std::to_string(g) + " of node " + n.spec.name + " is held by job " +
                      std::to_string(holder) + ", which is not running");
    }
    bool listed = false;
    for (size_t i = 0; i < it->second.allocations.size() && !listed; ++i) {
      if (it->second.allocations[i].node != node) continue;
      for (int32_t id : it->second.gpu_ids[i]) listed |= id == static_cast<int32_t>(g);
    }
    if (!listed) {
      return Internal("GPU " + std::to_string(g) + " of node " + n.spec.name + " is held by job " +
                      std::to_string(holder) + ", which does not list it");
    }
  }
  if (held != n.spec.capacity.gpus - n.free.gpus) {
    return Internal("node " + n.spec.name + " has " + std::to_string(held) + " GPUs held but " +
                    std::to_string(n.spec.capacity.gpus - n.free.gpus) + " allocated");
  }
  return Status::Ok();
}

const JobRecord* ClusterState::Find(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const std::string& ClusterState::GpuTypeName(int32_t id) const {
  static const std::string kAny = "any";
  return id == kAnyGpuType ? kAny : gpu_types_[id];
}

std::optional<int32_t> ClusterState::FindGpuType(std::string_view name) const {
  auto it = gpu_type_ids_.find(GpuTypeKey(name));
  if (it == gpu_type_ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace muster::core
