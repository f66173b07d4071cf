#include "server/task_env.h"

#include <algorithm>

namespace muster::server {

int32_t MasterPort(int64_t job, int32_t attempt, int32_t salt) {
  const uint64_t h = static_cast<uint64_t>(job) * 7919u + static_cast<uint64_t>(attempt) * 104729u +
                     static_cast<uint64_t>(salt < 0 ? 0 : salt);
  // Below Linux's ephemeral range (32768 and up): an outgoing connection of
  // some other process never holds the port the job needs to listen on.
  return 29500 + static_cast<int32_t>(h % 3000);
}

int32_t StepPort(int64_t job, int32_t attempt, int32_t salt) {
  // Half the range away from the job's MASTER_PORT, which the first node's
  // tasks may listen on.
  return 29500 + (MasterPort(job, attempt, salt) - 29500 + 1500) % 3000;
}

bool RunsStepHost(const api::JobSpec& spec, int32_t replica) { return spec.slurm.has_value() && replica > 0; }

std::vector<std::string> TaskArgv(const api::JobSpec& spec, int32_t replica) {
  if (RunsStepHost(spec, replica)) {
    // The node's muster (MUSTER_BIN, which its agent sets).
    return {"/bin/sh", "-c", "exec \"${MUSTER_BIN:-muster}\" step-host", "muster-step-host"};
  }
  if (spec.script) {
    // sh -c SCRIPT NAME ARGS...: the arguments are the script's $1, $2, ...
    std::vector<std::string> argv = {"/bin/sh", "-c", *spec.script};
    if (!spec.script_args.empty()) {
      argv.push_back(spec.name.empty() ? "script" : spec.name);
      argv.insert(argv.end(), spec.script_args.begin(), spec.script_args.end());
    }
    return argv;
  }
  return spec.command;
}

std::map<std::string, std::string> TaskEnvironment(const api::JobSpec& spec, const TaskEnvInput& in) {
  std::map<std::string, std::string> env = spec.env;
  env.insert(spec.secret_env.begin(), spec.secret_env.end());
  const int32_t n = static_cast<int32_t>(in.replicas.size());
  // The machines, in order of first appearance.
  std::vector<std::string> nodes;
  for (int32_t r = 0; r < n; ++r) {
    const std::string& node = in.replicas[r].node;
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  std::string nodelist;
  for (const std::string& node : nodes) nodelist += (nodelist.empty() ? "" : ",") + node;
  const std::string id = std::to_string(in.job);
  const std::string rank = std::to_string(in.replica);
  auto set = [&](const char* k, const std::string& v) { env[k] = v; };
  set("MUSTER_JOB_ID", id);
  set("MUSTER_ATTEMPT", std::to_string(in.attempt));
  set("MUSTER_RESTART_COUNT", std::to_string(in.attempt - 1));
  set("MUSTER_REPLICA_INDEX", rank);
  const bool elastic = spec.min_replicas > 0;
  const std::string count = std::to_string(elastic && in.staying >= 0 ? in.staying : n);
  set("MUSTER_NUM_REPLICAS", count);
  set("MUSTER_NODELIST", nodelist);
  const std::string master = n > 0 ? in.replicas[0].address : "127.0.0.1";
  const std::string port = std::to_string(MasterPort(in.job, in.attempt, in.port_salt));
  if (elastic) {
    set("MUSTER_MIN_REPLICAS", std::to_string(spec.min_replicas));
    set("MUSTER_MAX_REPLICAS", std::to_string(spec.replicas));
    auto fallback = [&](const char* k, const std::string& v) { env.try_emplace(k, v); };
    fallback("PET_NNODES", std::to_string(spec.min_replicas) + ":" + std::to_string(spec.replicas));
    fallback("PET_RDZV_BACKEND", "c10d");
    fallback("PET_RDZV_ENDPOINT", master + ":" + port);
    fallback("PET_RDZV_ID", "muster-" + id + "-" + std::to_string(in.attempt));
    // Muster starts a job's replicas together: a rendezvous need not wait
    // torchrun's default 30 s for more once the minimum has joined.
    fallback("PET_RDZV_CONF", std::string(in.replica == 0 ? "is_host=1" : "is_host=0") + ",last_call_timeout=5");
    fallback("PET_NPROC_PER_NODE", std::to_string(std::max<int64_t>(1, spec.resources.gpus)));
    fallback("PET_MAX_RESTARTS", "100");
  } else if (spec.slurm) {
    // Slurm's job model: no torchrun variables (Slurm sets none; a script
    // reading RANK would take the node's index for its task's), and every
    // node's step host, for srun (step/step_wire.h).
    const std::string step_port = std::to_string(StepPort(in.job, in.attempt, in.port_salt));
    std::string hosts;
    for (const ReplicaPlace& p : in.replicas) {
      const std::string address = p.address.find(':') != std::string::npos ? "[" + p.address + "]" : p.address;
      hosts += (hosts.empty() ? "" : ",") + p.node + "=" + address + ":" + step_port;
    }
    set("MUSTER_STEP_HOSTS", hosts);
  } else {
    set("MASTER_ADDR", master);
    set("MASTER_PORT", port);
    // Each replica is a node of its own: it sees only its GPUs.
    set("WORLD_SIZE", count);
    set("RANK", rank);
    set("NODE_RANK", rank);
    set("NNODES", count);
  }
  if (!spec.slurm) {
    set("LOCAL_RANK", "0");
    set("LOCAL_WORLD_SIZE", "1");
  }
  set("SLURM_JOB_ID", id);
  set("SLURM_JOBID", id);
  set("SLURM_JOB_NAME", spec.name);
  set("SLURM_JOB_USER", in.user);
  // Slurm's names, else Muster's own for the same thing.
  const std::optional<api::SlurmSpec>& names = spec.slurm;
  set("SLURM_JOB_PARTITION", names && names->partition ? *names->partition : spec.queue);
  set("SLURM_JOB_ACCOUNT", names && names->account ? *names->account : spec.queue);
  set("SLURM_JOB_QOS", names && names->qos ? *names->qos : spec.priority);
  const std::string replica_node = in.replica < n ? in.replicas[in.replica].node : "";
  set("SLURM_TOPOLOGY_ADDR", replica_node);
  set("SLURM_TOPOLOGY_ADDR_PATTERN", "node");
  set("SLURM_PROCID", rank);
  set("SLURM_NNODES", count);
  set("SLURM_JOB_NUM_NODES", count);
  set("SLURM_NTASKS", count);
  set("SLURM_NTASKS_PER_NODE", "1");
  set("SLURM_JOB_NODELIST", nodelist);
  set("SLURM_NODELIST", nodelist);
  set("SLURM_GTIDS", rank);
  set("SLURM_LOCALID", "0");
  set("SLURM_NODEID", rank);
  if (spec.working_dir) set("SLURM_SUBMIT_DIR", *spec.working_dir);
  if (spec.resources.cpu_milli > 0 && spec.resources.cpu_milli % 1000 == 0) {
    const std::string cpus = std::to_string(spec.resources.cpu_milli / 1000);
    set("SLURM_CPUS_PER_TASK", cpus);
    set("SLURM_CPUS_ON_NODE", cpus);
    set("SLURM_JOB_CPUS_PER_NODE", api::SlurmRunLengths(std::vector<int32_t>(static_cast<size_t>(std::max(n, 1)),
                                                                             spec.resources.cpu_milli / 1000)));
  }
  if (spec.resources.memory_bytes > 0) set("SLURM_MEM_PER_NODE", std::to_string(spec.resources.memory_bytes >> 20));
  // A Slurm job's tasks as Slurm counts them: block distribution, the
  // first nodes full ("8(x2)" is 8 on each of 2 nodes).
  if (spec.slurm && spec.slurm->tasks > 0) {
    const int32_t tasks = spec.slurm->tasks, per_node = std::max<int32_t>(1, spec.slurm->tasks_per_node);
    std::vector<int32_t> on_node;
    for (int32_t left = tasks; static_cast<int32_t>(on_node.size()) < n; left -= on_node.back()) {
      on_node.push_back(std::max<int32_t>(0, std::min(left, per_node)));
    }
    const std::string runs = api::SlurmRunLengths(on_node);
    set("SLURM_NTASKS", std::to_string(tasks));
    set("SLURM_NPROCS", std::to_string(tasks));
    set("SLURM_NTASKS_PER_NODE", std::to_string(per_node));
    set("SLURM_TASKS_PER_NODE", runs);
    if (spec.slurm->cpus_per_task > 0) set("SLURM_CPUS_PER_TASK", std::to_string(spec.slurm->cpus_per_task));
    if (spec.slurm->gpus_per_task > 0) set("SLURM_GPUS_PER_TASK", std::to_string(spec.slurm->gpus_per_task));
  }
  if (!spec.slurm) set("JOB_COMPLETION_INDEX", rank);
  if (in.array_index >= 0) {
    set("MUSTER_ARRAY_TASK_ID", std::to_string(in.array_index));
    set("SLURM_ARRAY_TASK_ID", std::to_string(in.array_index));
  }
  if (spec.checkpoint) {
    set("MUSTER_CHECKPOINT_DIR", spec.checkpoint->dir);
    set("MUSTER_CHECKPOINT_SIGNAL", api::CheckpointSignalName(spec.checkpoint->signal));
    if (spec.checkpoint->interval) {
      set("MUSTER_CHECKPOINT_INTERVAL", std::to_string(spec.checkpoint->interval->millis() / 1000));
    }
  }
  return env;
}

}  // namespace muster::server
