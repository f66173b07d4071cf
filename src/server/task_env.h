// The environment and command line of one replica of a job, as the server
// sends them to the agent (proto::TaskAssignment).
//
// Variables, on top of the job's own `env` (the job's values win, except
// for the identifiers below, which are always Muster's):
//   MUSTER_JOB_ID, MUSTER_ATTEMPT, MUSTER_RESTART_COUNT (attempt - 1),
//   MUSTER_REPLICA_INDEX, MUSTER_NUM_REPLICAS, MUSTER_NODELIST,
//   MUSTER_ARRAY_TASK_ID (arrays); with a checkpoint spec MUSTER_CHECKPOINT_DIR,
//   MUSTER_CHECKPOINT_SIGNAL ("SIGUSR1"), MUSTER_CHECKPOINT_INTERVAL (seconds,
//   when set); the agent adds MUSTER_RESUME_FROM and MUSTER_RESUME_STEP
//   when the attempt resumes from a verified checkpoint, and MUSTER_SERVER
//   torchrun: MASTER_ADDR (the node of replica 0), MASTER_PORT, WORLD_SIZE,
//     RANK, NODE_RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, NNODES
//   Slurm: SLURM_JOB_ID (and SLURM_JOBID), SLURM_JOB_NAME, SLURM_JOB_USER,
//     SLURM_JOB_PARTITION, SLURM_JOB_ACCOUNT, SLURM_JOB_QOS (the spec's
//     Slurm names, else its queue, queue and priority class), SLURM_PROCID,
//     SLURM_NNODES, SLURM_JOB_NUM_NODES, SLURM_NTASKS, SLURM_NTASKS_PER_NODE,
//     SLURM_JOB_NODELIST and SLURM_NODELIST, SLURM_GTIDS, SLURM_LOCALID,
//     SLURM_NODEID, SLURM_TOPOLOGY_ADDR (the replica's node) and
//     SLURM_TOPOLOGY_ADDR_PATTERN, SLURM_SUBMIT_DIR (the working directory),
//     SLURM_CPUS_PER_TASK and SLURM_CPUS_ON_NODE (whole CPUs),
//     SLURM_JOB_CPUS_PER_NODE ("2(x2)"), SLURM_MEM_PER_NODE (MiB),
//     SLURM_ARRAY_TASK_ID
//   Kubernetes Indexed Job: JOB_COMPLETION_INDEX
// Each replica is presented as a node of its own, whichever machine it
// shares: it sees only its own GPUs (the agent sets CUDA_VISIBLE_DEVICES
// to them), so LOCAL_RANK is 0 (cuda:0 is its first GPU), NODE_RANK and
// SLURM_NODEID are the replica index, NNODES and SLURM_NNODES the replica
// count. So both ways of running a gang work wherever the replicas land:
// one process per replica (RANK of WORLD_SIZE), or a launcher per replica
// (torchrun --nnodes $NNODES --node-rank $NODE_RANK --nproc-per-node
// <the replica's GPUs>). Two replicas on one machine used to get
// LOCAL_RANK 1 with one visible GPU, and node ranks that collided.
// MUSTER_NODELIST and SLURM_JOB_NODELIST list the machines. The agent adds
// CUDA_VISIBLE_DEVICES (GPU UUIDs), NVIDIA_VISIBLE_DEVICES,
// SLURM_GPUS_ON_NODE (the replica's GPUs), PATH, HOME, USER.
//
// Slurm-style jobs (spec.slurm), Slurm's job model: the job's command (the
// batch script) runs on replica 0 only; every other replica runs the step
// host (`muster step-host`), which starts the tasks of srun's steps
// (step/step_wire.h). They get MUSTER_STEP_HOSTS (each replica's
// "node=address:port", the port StepPort) and none of the torchrun
// variables (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, NODE_RANK, NNODES,
// LOCAL_RANK, LOCAL_WORLD_SIZE) nor JOB_COMPLETION_INDEX, which Slurm does
// not set and which would mislead a task of a multi-task step.
//
// Elastic jobs (replicas {min, max}) are re-formed by torchrun's elastic
// rendezvous, not by Muster's ranks: their replicas come and go, so they
// get no WORLD_SIZE, RANK, NODE_RANK, NNODES, MASTER_ADDR or MASTER_PORT;
// instead torchrun's own settings (read from PET_<OPTION>, so a bare
// `torchrun train.py` joins): PET_NNODES=min:max, PET_RDZV_BACKEND=c10d,
// PET_RDZV_ENDPOINT (replica 0's node, which is never given back, at the
// job's port), PET_RDZV_ID (job and attempt), PET_RDZV_CONF (is_host=1 on
// replica 0 only, which holds the rendezvous store; last_call_timeout=5,
// as Muster starts replicas together), PET_NPROC_PER_NODE (the
// replica's GPUs, or 1) and PET_MAX_RESTARTS=100 (a replica given back
// costs the others a restart). The job's own env wins for PET_*. Also
// MUSTER_MIN_REPLICAS and MUSTER_MAX_REPLICAS; MUSTER_NUM_REPLICAS is the
// count when the replica started.
//
// MASTER_PORT is derived from job id, attempt and a per-cluster salt
// (29500..32499, below Linux's ephemeral port range, so an outgoing
// connection on the node never holds it), so every replica gets the same port, a new attempt does
// not reuse the previous attempt's port, and two clusters on the same
// machines do not hand out the same port for the same job id.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/job_spec.h"

namespace muster::server {

struct ReplicaPlace {
  std::string node;
  std::string address;  // the node's address for MASTER_ADDR
};

struct TaskEnvInput {
  int64_t job = 0;
  int32_t attempt = 1;
  int32_t replica = 0;
  std::vector<ReplicaPlace> replicas;  // every replica's node, in replica order
  int32_t array_index = -1;            // -1: not an array task
  int32_t port_salt = 0;
  int32_t staying = -1;  // replicas running and staying (elastic jobs); -1: all of `replicas`
  std::string user;      // the job's owner (SLURM_JOB_USER)
};

std::map<std::string, std::string> TaskEnvironment(const api::JobSpec& spec, const TaskEnvInput& in);
// Whether the replica runs a step host instead of the job's command: every
// replica of a Slurm-style job (spec.slurm) but the first.
bool RunsStepHost(const api::JobSpec& spec, int32_t replica);
// The argv of the replica: the job's command, ["/bin/sh", "-c", script]
// (with arguments: then the job's name as $0 and the arguments), or the
// step host.
std::vector<std::string> TaskArgv(const api::JobSpec& spec, int32_t replica);
int32_t MasterPort(int64_t job, int32_t attempt, int32_t salt = 0);
// Where a Slurm-style job's step hosts listen: from the same inputs as
// MasterPort, in the same range, never equal to it.
int32_t StepPort(int64_t job, int32_t attempt, int32_t salt = 0);

}  // namespace muster::server
