#include "cli/agent_command.h"

#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "cli/flags_file.h"
#include "common/log.h"
#include "common/quantity.h"
#include "common/service_notify.h"
#include "core/node.h"

namespace muster::cli {

CLI::App* AddAgentCommand(CLI::App& app, AgentFlags& f) {
  CLI::App* a =
      app.add_subcommand("agent", "Run the node agent: report this node's GPUs and run the tasks the server assigns");
  agent::AgentOptions& o = f.options;
  if (const char* env = std::getenv("MUSTER_SERVER")) o.server = env;
  a->add_option(
      "--server", o.server,
      "Server URL, or several comma-separated (HA: whichever leads); default $MUSTER_SERVER or http://127.0.0.1:8470");
  if (const char* env = std::getenv("MUSTER_CA")) o.ca_file = env;
  a->add_option("--ca", o.ca_file,
                "CA certificates (PEM) that vouch for an https:// server; default $MUSTER_CA, else the system's");
  a->add_option("--name", o.node, "Node name (default: the host name)");
  a->add_option("--address", o.address, "Address other nodes use to reach this one (MASTER_ADDR)");
  a->add_option("--log-port", o.log_port, "Port of the agent's log server (default: any free port)");
  a->add_option("--metrics-listen", o.metrics_listen,
                "Serve Prometheus metrics (GPU utilization by job, tasks, syncs) on HOST:PORT, plain HTTP without "
                "a credential: loopback or a monitoring network (default: not served)");
  a->add_option("--fake-gpus", o.fake_gpus, "Fake GPUs for development and tests, COUNTxTYPE (8xH100)");
  a->add_option("--nvml-library", o.nvml_library, "Path of libnvidia-ml.so.1 (default: the loader's search path)");
  a->add_option("--podman", o.podman,
                "Podman binary for container jobs (jobs with an image); none: this node runs none (default: podman "
                "on PATH)");
  a->add_option("--containers-conf", o.containers_conf,
                "containers.conf for Podman (CONTAINERS_CONF), e.g. one with default_ulimits = [] where the kernel "
                "refuses containers some rlimits (default: Podman's own)");
  a->add_option("--container-runtime", o.container_runtime,
                "OCI runtime for Podman, e.g. runc or crun (default: Podman's)");
  a->add_option("--gpu-type", o.gpu_type, "GPU type to report (default: from the GPU model, e.g. H100)");
  a->add_option("--cpus", f.cpus, "CPUs to offer (default: all of the machine's)");
  a->add_option("--memory", f.memory, "Memory to offer, e.g. 512Gi (default: all of the machine's)");
  a->add_option("--leaf", f.leaf, "Leaf switch of this node (topology)");
  a->add_option("--spine", f.spine, "Spine of this node's leaf (topology)");
  a->add_option("--zone", f.zone, "Zone label");
  a->add_option("--rack", f.rack, "Rack label");
  a->add_flag("--spot", o.spot, "This node is spot capacity: only jobs with spot: true run here");
  // A node feature's name: 1 to 64 letters, digits and ._-.
  const auto feature_name = [](const std::string& feature) {
    return core::IsFeatureName(feature) ? std::string()
                                        : "a feature is 1 to 64 letters, digits and ._-, got \"" + feature + "\"";
  };
  a->add_option("--feature", o.features,
                "A node feature jobs may require (sbatch -C/--constraint, the spec's features); repeat for more")
      ->check(feature_name);
  a->add_option("--pool", f.pool,
                "The pool this node is in, priced by the server's pools: (spot is --spot; another name is also a "
                "feature jobs may require); default spot with --spot, else on-demand")
      ->check(feature_name);
  a->add_option("--reclaim-notice-url", o.reclaim_notice_url,
                "Cloud metadata endpoint that gives notice of a spot reclaim, e.g. "
                "http://169.254.169.254/latest/meta-data/spot/instance-action (AWS) or "
                "http://metadata.google.internal/computeMetadata/v1/instance/preempted (GCE)");
  a->add_option("--reclaim-poll", f.reclaim_poll, "How often the endpoint is read (default 5s)");
  a->add_option("--state-dir", o.state_dir,
                "Where tasks, their state and logs are kept (default /var/lib/muster/agent-NAME)");
  a->add_option("--token-file", o.token_file,
                "The node's credential (muster token create --node NAME), mode 600 (default STATE-DIR/token)");
  a->add_flag("--no-cgroups", f.no_cgroups, "Run tasks without cgroups (no memory, CPU or pids limits)");
  a->add_option("--cgroup-root", o.cgroup_root,
                "Where task cgroups go: a group below each hierarchy's root (default muster), or self: below the "
                "agent's own, as a systemd unit with Delegate=yes hands it");
  a->add_flag("--run-as-self", f.as_self, "Run tasks as the agent's user even when it is root");
  a->add_flag("--stop-tasks-on-exit", o.stop_tasks_on_exit, "Stop every task when the agent stops (development)");
  a->add_flag("--shared-tmp", f.shared_tmp, "Let tasks share the node's /tmp (default: each task gets its own)");
  a->add_option("--start-jitter", f.start_jitter,
                "Spread of agents' first syncs: each waits a part of it fixed by its node name, so many started "
                "at once do not reach the server in one burst, e.g. 2s, 0 (default 1s)");
  a->add_option("--log-level", f.log_level, "debug, info, warn or error (default $MUSTER_LOG_LEVEL, else info)");
  a->add_option("--log-retention", f.log_retention,
                "How long the logs of tasks that ended are kept, e.g. 7d, 12h, 0 to keep them (default 7d)");
  a->add_option("-c,--config", f.config,
                "Read flags from this YAML file too (/etc/muster/agent.yaml: server: URL, name: NODE, ...); the "
                "command line's win");
  a->parse_complete_callback([a, &f] {
    if (f.config.empty()) return;
    if (Status s = ReadFlagsFile(f.config, *a); !s.ok()) throw CLI::ValidationError("--config", s.message());
  });
  return a;
}

int RunAgentCommand(AgentFlags& f) {
  agent::AgentOptions& o = f.options;
  if (!f.cpus.empty()) {
    auto cpu = ParseCpuMilli(f.cpus);
    if (!cpu.ok() || *cpu <= 0) {
      std::cerr << "muster agent: --cpus: must be a positive number of CPUs like 32 or 2.5, got \"" << f.cpus << "\"\n";
      return 2;
    }
    o.cpu_milli = *cpu;
  }
  if (!f.memory.empty()) {
    auto mem = ParseMemoryBytes(f.memory);
    if (!mem.ok() || *mem <= 0) {
      std::cerr << "muster agent: --memory: must be a size like 512Gi or 64G, got \"" << f.memory << "\"\n";
      return 2;
    }
    o.memory_bytes = *mem;
  }
  if (!f.log_retention.empty()) {
    auto keep = ParseDuration(f.log_retention);  // "0" is zero: keep them
    if (!keep.ok()) {
      std::cerr << "muster agent: --log-retention: " << keep.status().message() << "\n";
      return 2;
    }
    o.log_retention = *keep;
  }
  if (!f.start_jitter.empty()) {
    auto jitter = ParseDuration(f.start_jitter);
    if (!jitter.ok() || *jitter > Duration::Minutes(10)) {
      std::cerr << "muster agent: --start-jitter: must be a duration from 0 to 10m, like 1s, got \"" << f.start_jitter
                << "\"\n";
      return 2;
    }
    o.start_jitter = *jitter;
  }
  if (!f.reclaim_poll.empty()) {
    auto poll = ParseDuration(f.reclaim_poll);
    if (!poll.ok() || *poll < Duration::Millis(100) || *poll > Duration::Minutes(1)) {
      std::cerr << "muster agent: --reclaim-poll: must be a duration from 100ms to 1m, like 5s, got \""
                << f.reclaim_poll << "\"\n";
      return 2;
    }
    o.reclaim_poll = *poll;
  }
  if (!o.reclaim_notice_url.empty() && o.reclaim_notice_url.rfind("http://", 0) != 0) {
    std::cerr
        << "muster agent: --reclaim-notice-url: must be an http:// URL (metadata endpoints are plain HTTP), got \""
        << o.reclaim_notice_url << "\"\n";
    return 2;
  }
  if (f.pool == "spot") {
    o.spot = true;
  } else if (f.pool == "on-demand" && o.spot) {
    std::cerr << "muster agent: --pool: on-demand contradicts --spot\n";
    return 2;
  } else if (!f.pool.empty() && f.pool != "on-demand") {
    o.features.insert(o.features.begin(), f.pool);  // the pool a node is in is its first feature naming one
  }
  if (!f.leaf.empty()) o.labels["leaf"] = f.leaf;
  if (!f.spine.empty()) o.labels["spine"] = f.spine;
  if (!f.zone.empty()) o.labels["zone"] = f.zone;
  if (!f.rack.empty()) o.labels["rack"] = f.rack;
  o.use_cgroups = !f.no_cgroups;
  o.run_as_submitter = !f.as_self;
  o.private_tmp = !f.shared_tmp;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (Status s = log::Init("muster agent", f.log_level); !s.ok()) {
    std::cerr << "muster agent: --" << s.ToString() << "\n";
    return 2;
  }
  SystemClock clock;
  agent::Agent agent(o, clock);
  auto summary = agent.Init();
  if (!summary.ok()) {
    log::Error("{}", summary.status().ToString());
    return 1;
  }
  log::Info("{}; server {}", *summary, o.server);
  // Ready once its node is known and its tasks adopted: a server that is
  // down or far away is what the agent waits out by itself, not systemd.
  if (Status s = NotifyServiceManager("READY=1\nSTATUS=" + *summary); !s.ok()) log::Warn("{}", s.ToString());
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    (void)NotifyServiceManager("STOPPING=1");
    agent.Stop();
  });
  agent.Run();
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  log::Info("stopped");
  return 0;
}

}  // namespace muster::cli
