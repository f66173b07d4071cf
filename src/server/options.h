// ServerOptions: everything `muster server` is configured with, from a YAML
// file and flags, validated once at start (a bad value is a clear fatal
// error naming the option).
//
// YAML (every key optional):
//   listen: 127.0.0.1:8470
//   tls: {cert: /etc/muster/tls/server.crt, key: /etc/muster/tls/server.key}
//                            # HTTPS; a non-loopback `listen` needs it, or
//   allowPlainHttp: false    # true: plain HTTP on any address (behind a TLS proxy)
//   store: /var/lib/muster/muster.db   # or postgres://muster@db1,db2/muster?target_session_attrs=read-write
//   ha: {name: server-a, advertise: http://10.0.0.5:8470, lease: 6s, renewEvery: 1s, pollEvery: 500ms}
//                            # with a PostgreSQL store: several servers, one leader (docs/operations.md)
//   admins: [root]
//   auth: {munge: /run/munge/munge.socket.2, operators: [ops], rootJobs: [],
//          queues: {research: {users: [alice], admins: [carol]}}}   # server/auth_options.h
//   priorityClasses: [{name: low, weight: 0, preemptible: true}, {name: normal, weight: 10000},
//                     {name: high, weight: 20000, mayPreempt: true}]
//   defaultPriorityClass: normal
//   scheduler: {policy: muster, maxReservations: 8, starvationThreshold: 8h,
//               agePointsPerHour: 500, ageCap: 20000,
//               preemption: {enabled: true, minRunTime: 5m, maxPerCycle: 4, reclaimAnyClass: false,
//                            reclaimPastGuarantee: false}}
//   queues:                  # quotas in GPUs: a count (all types) or by type ("*": all)
//     - {name: research, guarantee: {H100: 16}, limit: {H100: 32, "*": 48}, share: 3}
//   strictQueues: false      # true: a job must name a queue listed above
//   acceptUnfitJobs: false   # true: accept jobs no node can hold (nodes yet to join)
//   prices: {H100: 3.20, A100: 1.60, "*": 1.00}   # per GPU-hour, by GPU type ("*": the others)
//   pools: {spot: {prices: {H100: 1.10}}, reserved-east: {prices: {"*": 2.00}}}
//                            # a price each; a pool holds the nodes with its name as a feature
//   accessLog: /var/log/muster/access.log   # a line per request answered (none by default)
//   stragglers: {ratio: 0.5, window: 5m, after: 2m, minReports: 3, cordon: false}
//   fairShare: {weight: 5000, halfLife: 7d, shares: {research: 3, prod: 1}}
//                            # between queues; unlisted queues have share 1; weight 0 = off
//   cycleInterval: 1s        # periodic scheduling cycle (aging, begin times)
//   maxBodyBytes: 1048576    # larger request bodies get 413
//   rateLimit: {perSecond: 500, burst: 1000,    # per authenticated caller (user, job); 429 beyond
//               unauthenticated: {perSecond: 20, burst: 100}}   # requests with no valid credential, per address
//   maxConnections: 10000    # open connections in all (each agent holds one); 503 beyond
//   maxConnectionsPerClient: 1000   # unauthenticated connections from one address (0: no bound); past
//                            # it the oldest idle one is closed
//   maxConnectionsPerUser: 1000     # connections of one authenticated caller; 503 beyond (0: no bound)
//   firstRequestTimeout: 10s # a new connection that sends no whole request in this time is closed
//   limits: {pendingJobsPerUser: 10000, arraySize: 10000, tokensPerUser: 50, tokenLifetime: 365d,
//            jobTokenAfterEnd: 1h}   # per user (0: no limit); a job token reads its ended job this long
//   threads: 128             # HTTP worker threads for requests that block (lists, events, logs, nodes)
//   agents: {unreachableAfter: 20s, lostAfter: 120s, maxLostFraction: 0.3, silenceBurstWindow: 60s,
//            silenceHold: 10m, lease: 60s, defaultGrace: 30s, syncWait: 10s}
//   checkpoints: {signalsPerSecond: 20}   # staggered checkpoint stops (0: no limit)
//   jobDefaults:             # what a job spec gets for fields it leaves out
//     retry: {limit: 3, backoff: {initial: 30s, factor: 2, max: 10m}, failOnExitCodes: [], retryOnOom: false}
//     checkpoint: {gracePeriod: 5m, keep: 3}
//     resources: {memoryPerGpu: 64Gi, cpusPerGpu: 8, memory: 4Gi, cpus: 1}   # limits for jobs naming none
//   nodes:                   # static nodes (agents register theirs)
//     - {name: n1, gpus: 8, gpuType: H100, cpus: 64, memory: 512Gi, leaf: l1, spine: s1}
//   nodeGroups: [...]        # as in the simulator's cluster file
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "common/time.h"
#include "core/cluster_state.h"
#include "core/node.h"
#include "scheduler/fairshare.h"
#include "scheduler/scheduler.h"
#include "server/auth_options.h"
#include "server/pool_prices.h"
#include "server/straggler_detector.h"

namespace muster::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8470;
  // HTTPS: the certificate (chain) and its key, PEM files read at start.
  // Without them the server speaks plain HTTP, which it does only on a
  // loopback address unless `allow_plain_http`.
  std::string tls_cert;
  std::string tls_key;
  bool allow_plain_http = false;
  // The file these were read from (LoadServerOptions), named in messages
  // about what only it may change; "" when none.
  std::string config_path;
  std::string store_path = "muster.db";  // a file, sqlite:FILE, or postgres://... (store/open_store.h)
  // High availability, with a PostgreSQL store. The leader holds a lease
  // for `leader_lease` and renews it every `lease_renew_every`; a standby
  // looks for a leader every `standby_poll_every`. Clients are sent to
  // `advertise` (default http://HOST:PORT as listened on); `server_name`
  // identifies this server in the lease (default: host name and port).
  Duration leader_lease = Duration::Seconds(6);
  Duration lease_renew_every = Duration::Seconds(1);
  Duration standby_poll_every = Duration::Millis(500);
  std::string advertise;
  std::string server_name;
  std::vector<std::string> admins = {"root"};
  AuthOptions auth;  // roles, queue access lists, MUNGE (server/auth_options.h)
  // Jobs may name only the queues configured under `queues` (a misspelt
  // queue would otherwise be a new one, outside every quota).
  bool strict_queues = false;
  // A job no node of the cluster could ever hold (core/fit_check.h) is
  // refused at submit, naming the limit; true accepts it, to wait for nodes
  // that have yet to join.
  bool accept_unfit_jobs = false;
  // What a GPU-hour costs, by pool and GPU type, in the site's currency:
  // usage reports and the cost metrics (server/pool_prices.h).
  PoolPrices prices;
  // A line per request answered: time, client, who, request, status, body
  // bytes, seconds. "": none.
  std::string access_log;
  // Replicas that train well behind their siblings (server/straggler_detector.h).
  StragglerOptions stragglers;
  core::ClusterConfig cluster;
  scheduler::SchedulerOptions scheduler;
  scheduler::FairShareOptions fairshare;
  Duration cycle_interval = Duration::Seconds(1);
  // After a change, the next cycle waits this long (debounce), or nine
  // times the last cycle's duration when that is longer.
  Duration cycle_delay = Duration::Millis(5);
  int64_t max_body_bytes = 1 << 20;
  int64_t rate_per_second = 500;  // per authenticated caller
  int64_t rate_burst = 1000;
  int64_t unauthenticated_rate_per_second = 20;  // per address, for requests with no valid credential
  int64_t unauthenticated_rate_burst = 100;
  int64_t max_connections = 10'000;           // open connections in all; the process's file limit bounds it too
  int64_t max_connections_per_client = 1000;  // unauthenticated, per address; 0: no bound
  int64_t max_connections_per_user = 1000;    // per authenticated caller; 0: no bound
  Duration first_request_timeout = Duration::Seconds(10);
  // Per-user limits, 0: none (limits:). Jobs waiting to start (PENDING or
  // HELD), tasks of one array, live tokens and their longest lifetime.
  int64_t max_pending_jobs_per_user = 10'000;
  int64_t max_array_size = 10'000;
  int64_t max_tokens_per_user = 50;
  Duration max_token_lifetime = Duration::Hours(int64_t{24} * 365);
  // A job's own token reads the job this long after it ended, no longer.
  Duration job_token_after_end = Duration::Hours(1);
  int threads = 128;  // workers for blocking requests; submits and agents' syncs hold none
  // Agents: a node whose agent is silent this long gets no new work; an
  // agent that cannot sync for the lease stops its tasks; a job without a
  // checkpoint grace period gets this long between SIGTERM and SIGKILL.
  Duration node_unreachable_after = Duration::Seconds(20);
  Duration node_lost_after = Duration::Seconds(120);  // then its jobs are requeued
  // Nodes going silent together (within silence_burst_window of each other)
  // that are more than this fraction of the nodes: assume our own fault and
  // hold their loss back, for at most silence_hold (lifecycle/node_liveness.h).
  double max_lost_fraction = 0.3;
  Duration silence_burst_window = Duration::Seconds(60);
  Duration silence_hold = Duration::Minutes(10);
  Duration agent_lease = Duration::Seconds(60);
  Duration default_grace = Duration::Seconds(30);
  Duration agent_sync_wait = Duration::Seconds(10);
  // Defaults for the retry policy and checkpoint settings of submitted
  // specs (a stored spec keeps the values it was accepted with).
  api::SpecDefaults job_defaults;
  // What submitted specs are parsed with: job_defaults, the default class
  // and each class's maxTimeLimit.
  api::SpecDefaults SpecDefaults() const;
  // Stops that ask for a checkpoint (requeue, drain, preemption) reach the
  // agents at most this often; 0: all at once.
  int64_t checkpoint_signals_per_second = 20;
  // The checkpoint storage's write bandwidth (bytes a second) that stops
  // asking for a checkpoint share, each taking its job's last checkpoint
  // size of it (lifecycle/job_lifecycle.h); 0: no budget.
  int64_t checkpoint_bytes_per_second = 0;
  std::vector<core::NodeSpec> nodes;

  Status Validate() const;
};

// Reads a YAML options file over the defaults. Errors name the key path.
StatusOr<ServerOptions> LoadServerOptions(const std::string& path);
StatusOr<ServerOptions> ParseServerOptions(const std::string& yaml_text, const std::string& source);
// Splits "host:port" into the options.
Status SetListen(ServerOptions& o, const std::string& listen);

}  // namespace muster::server
