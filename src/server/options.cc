#include "server/options.h"

#include <charconv>
#include <fstream>
#include <sstream>

#include "api/job_spec.h"
#include "common/message_text.h"
#include "config/node_list.h"
#include "config/queue_list.h"
#include "config/yaml_fields.h"
#include "http/tls.h"

namespace muster::server {

using config::CheckKeys;

Status SetListen(ServerOptions& o, const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = 0;
  const std::string port_text = colon == std::string::npos ? "" : listen.substr(colon + 1);
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (colon == std::string::npos || colon == 0 || ec != std::errc() || p != port_text.data() + port_text.size() ||
      port < 0 || port > 65535) {
    return InvalidArgument("expected HOST:PORT such as 127.0.0.1:8470, got " + QuoteForMessage(listen), "listen");
  }
  o.host = listen.substr(0, colon);
  o.port = port;
  return Status::Ok();
}

Status ServerOptions::Validate() const {
  if (store_path.empty()) return InvalidArgument("must not be empty", "store");
  if (tls_cert.empty() != tls_key.empty()) {
    return InvalidArgument("needs both cert and key", tls_cert.empty() ? "tls.cert" : "tls.key");
  }
  if (tls_cert.empty() && !allow_plain_http && !http::IsLoopbackHost(host)) {
    // Tokens and job secrets would cross the network in the clear.
    return InvalidArgument(QuoteForMessage(host) +
                               " is not a loopback address, and plain HTTP beyond this machine would carry "
                               "credentials in the clear: configure tls: {cert, key}, or set allowPlainHttp: true "
                               "(behind a TLS proxy)",
                           "listen");
  }
  if (cluster.priority_classes.empty()) return InvalidArgument("at least one class is needed", "priorityClasses");
  bool has_default = false;
  for (size_t i = 0; i < cluster.priority_classes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (cluster.priority_classes[i].name == cluster.priority_classes[j].name) {
        return InvalidArgument("duplicate class " + QuoteForMessage(cluster.priority_classes[i].name),
                               "priorityClasses[" + std::to_string(i) + "].name");
      }
    }
    has_default |= cluster.priority_classes[i].name == cluster.default_priority_class;
  }
  if (!has_default) {
    return InvalidArgument(QuoteForMessage(cluster.default_priority_class) + " is not a priority class",
                           "defaultPriorityClass");
  }
  for (const auto& mapped : job_defaults.slurm.qos) {
    const std::string& cls = mapped.second;  // (clang 14 captures no structured binding)
    const bool known = std::any_of(cluster.priority_classes.begin(), cluster.priority_classes.end(),
                                   [&](const core::PriorityClass& c) { return c.name == cls; });
    if (!known) return InvalidArgument(QuoteForMessage(cls) + " is not a priority class", "slurm.qos." + mapped.first);
  }
  if (Status s = scheduler.Validate(); !s.ok()) return s;
  if (Status s = fairshare.Validate(); !s.ok()) return s;
  if (cycle_interval < Duration::Millis(10)) return InvalidArgument("must be at least 10ms", "cycleInterval");
  if (max_body_bytes < 1024) return InvalidArgument("must be at least 1024", "maxBodyBytes");
  if (rate_per_second < 1 || rate_burst < 1) return InvalidArgument("must be positive", "rateLimit");
  if (threads < 2) return InvalidArgument("must be at least 2", "threads");
  if (leader_lease < Duration::Seconds(1)) return InvalidArgument("must be at least 1s", "ha.lease");
  if (lease_renew_every < Duration::Millis(100) || lease_renew_every * 3 > leader_lease) {
    // Three renewals a lease: one lost round trip does not cost the lease.
    return InvalidArgument("must be 100ms..a third of ha.lease", "ha.renewEvery");
  }
  if (standby_poll_every < Duration::Millis(50) || standby_poll_every > leader_lease) {
    return InvalidArgument("must be 50ms..ha.lease", "ha.pollEvery");
  }
  if (!advertise.empty() && advertise.rfind("http://", 0) != 0 && advertise.rfind("https://", 0) != 0) {
    return InvalidArgument("must be a URL such as http://10.0.0.5:8470", "ha.advertise");
  }
  if (node_unreachable_after < Duration::Seconds(1))
    return InvalidArgument("must be at least 1s", "agents.unreachableAfter");
  if (agent_lease < Duration::Seconds(2)) return InvalidArgument("must be at least 2s", "agents.lease");
  if (node_lost_after <= agent_lease || node_lost_after <= node_unreachable_after) {
    // A node's tasks must have stopped themselves (lease) before they are started elsewhere.
    return InvalidArgument("must be longer than agents.lease and agents.unreachableAfter", "agents.lostAfter");
  }
  if (silence_burst_window < Duration::Zero()) return InvalidArgument("must be >= 0s", "agents.silenceBurstWindow");
  if (silence_hold < Duration::Zero()) return InvalidArgument("must be >= 0s", "agents.silenceHold");
  if (default_grace < Duration::Zero() || default_grace > Duration::Hours(1)) {
    return InvalidArgument("must be 0s..1h", "agents.defaultGrace");
  }
  if (agent_sync_wait < Duration::Millis(100) || agent_sync_wait > Duration::Seconds(60)) {
    return InvalidArgument("must be 100ms..60s", "agents.syncWait");
  }
  return Status::Ok();
}

namespace {

// jobDefaults: {timeLimit, retry: {...}, checkpoint: {gracePeriod, keep},
// resources: {memoryPerGpu, cpusPerGpu, memory, cpus}}. Validated
// by the job spec's own rules (a probe spec carrying them), so a default
// can be exactly what a spec may say, with the same messages.
}  // namespace

api::SpecDefaults ServerOptions::SpecDefaults() const {
  api::SpecDefaults d = job_defaults;
  d.priority = cluster.default_priority_class;
  d.map_slurm_names = true;
  for (const core::PriorityClass& c : cluster.priority_classes) {
    if (!c.max_time_limit.is_infinite()) d.max_time_limits[c.name] = c.max_time_limit;
  }
  return d;
}

namespace {

// slurm: {qos: {NAME: class}, partitions: {NAME: {queue, features}},
// accounts: {NAME: queue}} (api/slurm_mapping.h). Classes are checked
// against priorityClasses by the caller.
StatusOr<api::SlurmMapping> ParseSlurmMapping(const YAML::Node& s) {
  const std::string path = "server.slurm";
  if (!s.IsMap()) return InvalidArgument("must be a mapping {qos, partitions, accounts}", path);
  RETURN_IF_ERROR(CheckKeys(s, {"qos", "partitions", "accounts"}, path));
  api::SlurmMapping m;
  for (const char* table : {"qos", "partitions", "accounts"}) {
    const YAML::Node t = s[table];
    if (!t) continue;
    const std::string at = path + "." + table;
    if (!t.IsMap()) return InvalidArgument("must be a mapping of Slurm names", at);
    for (const auto& kv : t) {
      const std::string name = kv.first.Scalar();
      const std::string item = at + "." + name;
      if (std::string(table) == "partitions") {
        api::SlurmMapping::Partition p;
        if (!kv.second.IsNull()) {
          if (!kv.second.IsMap()) return InvalidArgument("must be a mapping {queue, features}", item);
          RETURN_IF_ERROR(CheckKeys(kv.second, {"queue", "features"}, item));
          if (kv.second["queue"]) {
            ASSIGN_OR_RETURN(p.queue, config::Str(kv.second["queue"], item + ".queue"));
          }
          if (const YAML::Node f = kv.second["features"]) {
            if (!f.IsSequence()) return InvalidArgument("must be a list of node features", item + ".features");
            for (size_t i = 0; i < f.size(); ++i) {
              ASSIGN_OR_RETURN(std::string feature, config::Str(f[i], item + ".features[" + std::to_string(i) + "]"));
              p.features.push_back(std::move(feature));
            }
          }
        }
        m.partitions[name] = std::move(p);
      } else {
        ASSIGN_OR_RETURN(std::string target, config::Str(kv.second, item));
        (std::string(table) == "qos" ? m.qos : m.accounts)[name] = std::move(target);
      }
    }
  }
  return m;
}

StatusOr<api::SpecDefaults> ParseJobDefaults(const YAML::Node& d) {
  const std::string path = "server.jobDefaults";
  if (!d.IsMap()) return InvalidArgument("must be a mapping {timeLimit, retry, checkpoint, resources}", path);
  RETURN_IF_ERROR(CheckKeys(d, {"timeLimit", "retry", "checkpoint", "resources"}, path));
  YAML::Node probe(YAML::NodeType::Map);
  probe["command"].push_back("true");
  if (d["timeLimit"]) probe["timeLimit"] = YAML::Clone(d["timeLimit"]);
  if (d["retry"]) probe["retry"] = YAML::Clone(d["retry"]);
  if (d["checkpoint"]) {
    if (!d["checkpoint"].IsMap()) return InvalidArgument("must be a mapping {gracePeriod, keep}", path + ".checkpoint");
    RETURN_IF_ERROR(CheckKeys(d["checkpoint"], {"gracePeriod", "keep"}, path + ".checkpoint"));
    YAML::Node c = YAML::Clone(d["checkpoint"]);
    c["dir"] = "/";
    probe["checkpoint"] = c;
  }
  YAML::Emitter out;
  out << probe;
  auto spec = api::ParseJobSpecYaml(out.c_str());
  if (!spec.ok()) {
    std::string field = spec.status().field();
    if (field.rfind("spec.", 0) == 0) field = path + field.substr(4);
    return InvalidArgument(spec.status().message(), field);
  }
  api::SpecDefaults defaults;
  defaults.time_limit = spec->time_limit;
  defaults.retry = spec->retry;
  if (spec->checkpoint) {
    defaults.grace_period = spec->checkpoint->grace_period;
    defaults.keep = spec->checkpoint->keep;
  }
  if (const YAML::Node r = d["resources"]) {
    const std::string at = path + ".resources";
    if (!r.IsMap())
      return InvalidArgument("must be a mapping {memoryPerGpu, memoryPerCpu, cpusPerGpu, memory, cpus}", at);
    RETURN_IF_ERROR(CheckKeys(r, {"memoryPerGpu", "memoryPerCpu", "cpusPerGpu", "memory", "cpus"}, at));
    if (r["memoryPerCpu"]) {
      if (r["memoryPerGpu"])
        return InvalidArgument("and memoryPerGpu exclude each other (as DefMemPerCPU and DefMemPerGPU)",
                               at + ".memoryPerCpu");
      ASSIGN_OR_RETURN(defaults.memory_per_cpu, config::MemoryBytes(r["memoryPerCpu"], at + ".memoryPerCpu"));
    }
    if (r["memoryPerGpu"]) {
      ASSIGN_OR_RETURN(defaults.memory_per_gpu, config::MemoryBytes(r["memoryPerGpu"], at + ".memoryPerGpu"));
    }
    if (r["cpusPerGpu"]) {
      ASSIGN_OR_RETURN(defaults.cpu_milli_per_gpu, config::CpuMilli(r["cpusPerGpu"], at + ".cpusPerGpu"));
    }
    if (r["memory"]) {
      ASSIGN_OR_RETURN(defaults.memory_bytes, config::MemoryBytes(r["memory"], at + ".memory"));
    }
    if (r["cpus"]) {
      ASSIGN_OR_RETURN(defaults.cpu_milli, config::CpuMilli(r["cpus"], at + ".cpus"));
    }
  }
  return defaults;
}

}  // namespace

StatusOr<ServerOptions> ParseServerOptions(const std::string& yaml_text, const std::string& source) {
  ASSIGN_OR_RETURN(YAML::Node root, config::LoadYaml(yaml_text, source));
  ServerOptions o;
  auto body = [&]() -> Status {
    if (root.IsNull()) return Status::Ok();
    if (!root.IsMap()) return InvalidArgument("the configuration must be a YAML mapping", "server");
    RETURN_IF_ERROR(CheckKeys(root,
                              {"listen",
                               "store",
                               "admins",
                               "priorityClasses",
                               "defaultPriorityClass",
                               "scheduler",
                               "fairShare",
                               "cycleInterval",
                               "maxBodyBytes",
                               "rateLimit",
                               "maxConnections",
                               "maxConnectionsPerClient",
                               "maxConnectionsPerUser",
                               "firstRequestTimeout",
                               "limits",
                               "threads",
                               "agents",
                               "checkpoints",
                               "jobDefaults",
                               "nodes",
                               "nodeGroups",
                               "queues",
                               "strictQueues",
                               "acceptUnfitJobs",
                               "ha",
                               "auth",
                               "tls",
                               "allowPlainHttp",
                               "prices",
                               "pools",
                               "accessLog",
                               "stragglers",
                               "slurm"},
                              "server"));
    if (root["listen"]) {
      ASSIGN_OR_RETURN(std::string listen, config::Str(root["listen"], "server.listen"));
      RETURN_IF_ERROR(SetListen(o, listen).WithFieldPrefix("server"));
    }
    if (root["store"]) {
      ASSIGN_OR_RETURN(o.store_path, config::Str(root["store"], "server.store"));
    }
    if (const YAML::Node admins = root["admins"]) {
      if (!admins.IsSequence()) return InvalidArgument("must be a list of user names", "server.admins");
      o.admins.clear();
      for (size_t i = 0; i < admins.size(); ++i) {
        ASSIGN_OR_RETURN(std::string a, config::Str(admins[i], "server.admins[" + std::to_string(i) + "]"));
        o.admins.push_back(a);
      }
    }
    if (const YAML::Node auth = root["auth"]) RETURN_IF_ERROR(ReadAuthOptions(auth, o.auth));
    if (const YAML::Node tls = root["tls"]) {
      if (!tls.IsMap()) return InvalidArgument("must be a mapping {cert, key}", "server.tls");
      RETURN_IF_ERROR(CheckKeys(tls, {"cert", "key"}, "server.tls"));
      if (tls["cert"]) {
        ASSIGN_OR_RETURN(o.tls_cert, config::Str(tls["cert"], "server.tls.cert"));
      }
      if (tls["key"]) {
        ASSIGN_OR_RETURN(o.tls_key, config::Str(tls["key"], "server.tls.key"));
      }
    }
    ASSIGN_OR_RETURN(o.prices, ReadPoolPrices(root["prices"], root["pools"]));
    if (const YAML::Node st = root["stragglers"]) {
      const std::string path = "server.stragglers";
      if (!st.IsMap()) return InvalidArgument("must be a mapping {ratio, window, after, minReports, cordon}", path);
      RETURN_IF_ERROR(CheckKeys(st, {"ratio", "window", "after", "minReports", "cordon"}, path));
      StragglerOptions& so = o.stragglers;
      if (st["ratio"]) {
        ASSIGN_OR_RETURN(so.ratio, config::Number(st["ratio"], path + ".ratio", 0.01, 0.99));
      }
      if (st["window"]) {
        ASSIGN_OR_RETURN(so.window, config::Dur(st["window"], path + ".window"));
        if (so.window < Duration::Seconds(1)) return InvalidArgument("must be at least 1s", path + ".window");
      }
      if (st["after"]) {
        ASSIGN_OR_RETURN(so.after, config::Dur(st["after"], path + ".after"));
      }
      if (st["minReports"]) {
        ASSIGN_OR_RETURN(int64_t n, config::Int(st["minReports"], path + ".minReports", 2, 1000));
        so.min_reports = static_cast<int32_t>(n);
      }
      if (st["cordon"]) {
        ASSIGN_OR_RETURN(so.cordon, config::Bool(st["cordon"], path + ".cordon"));
      }
    }
    if (root["accessLog"]) {
      ASSIGN_OR_RETURN(o.access_log, config::Str(root["accessLog"], "server.accessLog"));
    }
    if (root["allowPlainHttp"]) {
      ASSIGN_OR_RETURN(o.allow_plain_http, config::Bool(root["allowPlainHttp"], "server.allowPlainHttp"));
    }
    if (const YAML::Node classes = root["priorityClasses"]) {
      if (!classes.IsSequence()) return InvalidArgument("must be a list", "server.priorityClasses");
      o.cluster.priority_classes.clear();
      for (size_t i = 0; i < classes.size(); ++i) {
        const std::string path = "server.priorityClasses[" + std::to_string(i) + "]";
        const YAML::Node c = classes[i];
        if (!c.IsMap()) {
          return InvalidArgument(
              "must be a mapping {name, weight, preemptible, mayPreempt, interactive, maxTimeLimit, preemptGrace}",
              path);
        }
        RETURN_IF_ERROR(CheckKeys(
            c, {"name", "weight", "preemptible", "mayPreempt", "interactive", "maxTimeLimit", "preemptGrace"}, path));
        core::PriorityClass pc;
        if (!c["name"]) return InvalidArgument("is required", path + ".name");
        ASSIGN_OR_RETURN(pc.name, config::Str(c["name"], path + ".name"));
        if (c["weight"]) {
          ASSIGN_OR_RETURN(pc.weight, config::Int(c["weight"], path + ".weight", 0, 1'000'000'000));
        }
        if (c["preemptible"]) {
          ASSIGN_OR_RETURN(pc.preemptible, config::Bool(c["preemptible"], path + ".preemptible"));
        }
        if (c["mayPreempt"]) {
          ASSIGN_OR_RETURN(pc.may_preempt, config::Bool(c["mayPreempt"], path + ".mayPreempt"));
        }
        if (c["interactive"]) {
          ASSIGN_OR_RETURN(pc.interactive, config::Bool(c["interactive"], path + ".interactive"));
        }
        if (c["maxTimeLimit"]) {
          ASSIGN_OR_RETURN(pc.max_time_limit, config::Dur(c["maxTimeLimit"], path + ".maxTimeLimit"));
          if (pc.max_time_limit <= Duration::Zero()) return InvalidArgument("must be positive", path + ".maxTimeLimit");
        }
        if (pc.interactive) {
          // Interactive work preempts best-effort work and is never itself
          // preempted; backfill plans around its bounded time limit.
          if (pc.preemptible)
            return InvalidArgument("an interactive class cannot be preemptible", path + ".preemptible");
          if (c["mayPreempt"] && !pc.may_preempt) {
            return InvalidArgument("an interactive class preempts best-effort work; leave mayPreempt out",
                                   path + ".mayPreempt");
          }
          pc.may_preempt = true;
          if (pc.max_time_limit.is_infinite()) pc.max_time_limit = Duration::Hours(8);
          if (!c["preemptGrace"]) pc.preempt_grace = Duration::Seconds(30);
        }
        if (c["preemptGrace"]) {
          ASSIGN_OR_RETURN(pc.preempt_grace, config::Dur(c["preemptGrace"], path + ".preemptGrace"));
          if (pc.preempt_grace < Duration::Zero()) return InvalidArgument("must be 0 or more", path + ".preemptGrace");
        }
        o.cluster.priority_classes.push_back(pc);
      }
    }
    if (const YAML::Node queues = root["queues"]) {
      RETURN_IF_ERROR(config::ReadQueueList(queues, "server.queues", o.cluster.queues, o.fairshare.shares));
    }
    if (root["acceptUnfitJobs"]) {
      ASSIGN_OR_RETURN(o.accept_unfit_jobs, config::Bool(root["acceptUnfitJobs"], "server.acceptUnfitJobs"));
    }
    if (root["strictQueues"]) {
      ASSIGN_OR_RETURN(o.strict_queues, config::Bool(root["strictQueues"], "server.strictQueues"));
      if (o.strict_queues && o.cluster.queues.empty()) {
        return InvalidArgument("needs the queues jobs may name, under queues", "server.strictQueues");
      }
    }
    if (root["defaultPriorityClass"]) {
      ASSIGN_OR_RETURN(o.cluster.default_priority_class,
                       config::Str(root["defaultPriorityClass"], "server.defaultPriorityClass"));
    }
    if (const YAML::Node s = root["scheduler"]) {
      const std::string path = "server.scheduler";
      if (!s.IsMap()) return InvalidArgument("must be a mapping", path);
      RETURN_IF_ERROR(CheckKeys(
          s,
          {"policy", "maxReservations", "starvationThreshold", "maxStarvationReservations", "agePointsPerHour",
           "ageCap", "sizePointsPerGpu", "sizeCap", "preemption", "backfillBy", "spotCheckpointInterval"},
          path));
      auto& so = o.scheduler;
      if (s["backfillBy"]) {
        ASSIGN_OR_RETURN(const std::string by, config::Str(s["backfillBy"], path + ".backfillBy"));
        if (by != "limit" && by != "prediction") {
          return InvalidArgument("must be limit or prediction, got \"" + by.substr(0, 64) + "\"", path + ".backfillBy");
        }
        so.predict_run_times = by == "prediction";
      }
      if (s["policy"]) {
        ASSIGN_OR_RETURN(so.policy, config::Str(s["policy"], path + ".policy"));
      }
      if (s["maxReservations"]) {
        ASSIGN_OR_RETURN(int64_t v, config::Int(s["maxReservations"], path + ".maxReservations", 0, 10'000));
        so.max_reservations = static_cast<int32_t>(v);
      }
      if (s["maxStarvationReservations"]) {
        ASSIGN_OR_RETURN(int64_t v,
                         config::Int(s["maxStarvationReservations"], path + ".maxStarvationReservations", 0, 10'000));
        so.max_starvation_reservations = static_cast<int32_t>(v);
      }
      if (s["starvationThreshold"]) {
        ASSIGN_OR_RETURN(so.starvation_threshold, config::Dur(s["starvationThreshold"], path + ".starvationThreshold"));
      }
      if (s["spotCheckpointInterval"]) {
        ASSIGN_OR_RETURN(so.spot_checkpoint_interval,
                         config::Dur(s["spotCheckpointInterval"], path + ".spotCheckpointInterval"));
      }
      if (s["agePointsPerHour"]) {
        ASSIGN_OR_RETURN(so.weights.age_points_per_hour,
                         config::Int(s["agePointsPerHour"], path + ".agePointsPerHour", 0, 1'000'000));
      }
      if (s["ageCap"]) {
        ASSIGN_OR_RETURN(so.weights.age_cap, config::Int(s["ageCap"], path + ".ageCap", 0, 1'000'000'000));
      }
      if (s["sizePointsPerGpu"]) {
        ASSIGN_OR_RETURN(so.weights.size_points_per_gpu,
                         config::Int(s["sizePointsPerGpu"], path + ".sizePointsPerGpu", 0, 1'000'000));
      }
      if (s["sizeCap"]) {
        ASSIGN_OR_RETURN(so.weights.size_cap, config::Int(s["sizeCap"], path + ".sizeCap", 0, 1'000'000'000));
      }
      if (const YAML::Node pr = s["preemption"]) {
        const std::string pp = path + ".preemption";
        if (!pr.IsMap()) return InvalidArgument("must be a mapping {enabled, minRunTime, maxPerCycle}", pp);
        RETURN_IF_ERROR(
            CheckKeys(pr, {"enabled", "minRunTime", "maxPerCycle", "reclaimAnyClass", "reclaimPastGuarantee"}, pp));
        if (pr["reclaimAnyClass"]) {
          ASSIGN_OR_RETURN(so.preemption.reclaim_any_class,
                           config::Bool(pr["reclaimAnyClass"], pp + ".reclaimAnyClass"));
        }
        if (pr["reclaimPastGuarantee"]) {
          ASSIGN_OR_RETURN(so.preemption.reclaim_past_guarantee,
                           config::Bool(pr["reclaimPastGuarantee"], pp + ".reclaimPastGuarantee"));
        }
        if (pr["enabled"]) {
          ASSIGN_OR_RETURN(so.preemption.enabled, config::Bool(pr["enabled"], pp + ".enabled"));
        }
        if (pr["minRunTime"]) {
          ASSIGN_OR_RETURN(so.preemption.min_run_time, config::Dur(pr["minRunTime"], pp + ".minRunTime"));
        }
        if (pr["maxPerCycle"]) {
          ASSIGN_OR_RETURN(int64_t v, config::Int(pr["maxPerCycle"], pp + ".maxPerCycle", 0, 10'000));
          so.preemption.max_per_cycle = static_cast<int32_t>(v);
        }
      }
    }
    if (const YAML::Node f = root["fairShare"]) {
      if (!f.IsMap()) return InvalidArgument("must be a mapping {weight, halfLife, shares}", "server.fairShare");
      RETURN_IF_ERROR(CheckKeys(f, {"weight", "halfLife", "shares"}, "server.fairShare"));
      if (const YAML::Node sh = f["shares"]) {
        if (!sh.IsMap()) return InvalidArgument("must be a mapping of queue name to share", "server.fairShare.shares");
        for (const auto& kv : sh) {
          if (!kv.first.IsScalar()) return InvalidArgument("keys must be queue names", "server.fairShare.shares");
          const std::string name = kv.first.Scalar();
          const std::string path = ChildPath("server.fairShare.shares", name);
          ASSIGN_OR_RETURN(int64_t share, config::Int(kv.second, path, 1, 1'000'000));
          o.fairshare.shares[name] = static_cast<double>(share);
        }
      }
      if (f["weight"]) {
        ASSIGN_OR_RETURN(o.fairshare.weight, config::Int(f["weight"], "server.fairShare.weight", 0, 1'000'000'000));
      }
      if (f["halfLife"]) {
        ASSIGN_OR_RETURN(o.fairshare.half_life, config::Dur(f["halfLife"], "server.fairShare.halfLife"));
      }
    }
    if (root["cycleInterval"]) {
      ASSIGN_OR_RETURN(o.cycle_interval, config::Dur(root["cycleInterval"], "server.cycleInterval"));
    }
    if (root["maxBodyBytes"]) {
      ASSIGN_OR_RETURN(o.max_body_bytes, config::Int(root["maxBodyBytes"], "server.maxBodyBytes", 1024, 64 << 20));
    }
    if (const YAML::Node r = root["rateLimit"]) {
      if (!r.IsMap()) {
        return InvalidArgument("must be a mapping {perSecond, burst, unauthenticated}", "server.rateLimit");
      }
      RETURN_IF_ERROR(CheckKeys(r, {"perSecond", "burst", "unauthenticated"}, "server.rateLimit"));
      if (r["perSecond"]) {
        ASSIGN_OR_RETURN(o.rate_per_second, config::Int(r["perSecond"], "server.rateLimit.perSecond", 1, 10'000'000));
      }
      if (r["burst"]) {
        ASSIGN_OR_RETURN(o.rate_burst, config::Int(r["burst"], "server.rateLimit.burst", 1, 10'000'000));
      }
      if (const YAML::Node u = r["unauthenticated"]) {
        const std::string at = "server.rateLimit.unauthenticated";
        if (!u.IsMap()) return InvalidArgument("must be a mapping {perSecond, burst}", at);
        RETURN_IF_ERROR(CheckKeys(u, {"perSecond", "burst"}, at));
        if (u["perSecond"]) {
          ASSIGN_OR_RETURN(o.unauthenticated_rate_per_second,
                           config::Int(u["perSecond"], at + ".perSecond", 1, 10'000'000));
        }
        if (u["burst"]) {
          ASSIGN_OR_RETURN(o.unauthenticated_rate_burst, config::Int(u["burst"], at + ".burst", 1, 10'000'000));
        }
      }
    }
    if (root["maxConnectionsPerUser"]) {
      ASSIGN_OR_RETURN(o.max_connections_per_user,
                       config::Int(root["maxConnectionsPerUser"], "server.maxConnectionsPerUser", 0, 1'000'000));
    }
    if (root["firstRequestTimeout"]) {
      ASSIGN_OR_RETURN(o.first_request_timeout, config::Dur(root["firstRequestTimeout"], "server.firstRequestTimeout"));
      if (o.first_request_timeout < Duration::Seconds(1)) {
        return InvalidArgument("must be at least 1s", "server.firstRequestTimeout");
      }
    }
    if (const YAML::Node l = root["limits"]) {
      const std::string at = "server.limits";
      if (!l.IsMap()) {
        return InvalidArgument(
            "must be a mapping {pendingJobsPerUser, arraySize, tokensPerUser, tokenLifetime, jobTokenAfterEnd}", at);
      }
      RETURN_IF_ERROR(
          CheckKeys(l, {"pendingJobsPerUser", "arraySize", "tokensPerUser", "tokenLifetime", "jobTokenAfterEnd"}, at));
      if (l["pendingJobsPerUser"]) {
        ASSIGN_OR_RETURN(o.max_pending_jobs_per_user,
                         config::Int(l["pendingJobsPerUser"], at + ".pendingJobsPerUser", 0, 100'000'000));
      }
      if (l["arraySize"]) {
        ASSIGN_OR_RETURN(o.max_array_size, config::Int(l["arraySize"], at + ".arraySize", 0, 10'000));
      }
      if (l["tokensPerUser"]) {
        ASSIGN_OR_RETURN(o.max_tokens_per_user, config::Int(l["tokensPerUser"], at + ".tokensPerUser", 0, 1'000'000));
      }
      if (l["tokenLifetime"]) {
        ASSIGN_OR_RETURN(o.max_token_lifetime, config::Dur(l["tokenLifetime"], at + ".tokenLifetime"));
        if (o.max_token_lifetime < Duration::Minutes(1))
          return InvalidArgument("must be at least 1m", at + ".tokenLifetime");
      }
      if (l["jobTokenAfterEnd"]) {
        ASSIGN_OR_RETURN(o.job_token_after_end, config::Dur(l["jobTokenAfterEnd"], at + ".jobTokenAfterEnd"));
      }
    }
    if (root["maxConnections"]) {
      ASSIGN_OR_RETURN(o.max_connections, config::Int(root["maxConnections"], "server.maxConnections", 1, 1'000'000));
    }
    if (root["maxConnectionsPerClient"]) {
      ASSIGN_OR_RETURN(o.max_connections_per_client,
                       config::Int(root["maxConnectionsPerClient"], "server.maxConnectionsPerClient", 0, 1'000'000));
    }
    if (root["threads"]) {
      ASSIGN_OR_RETURN(int64_t t, config::Int(root["threads"], "server.threads", 2, 1024));
      o.threads = static_cast<int>(t);
    }
    if (const YAML::Node c = root["checkpoints"]) {
      if (!c.IsMap()) {
        return InvalidArgument("must be a mapping {signalsPerSecond, writeBandwidth}", "server.checkpoints");
      }
      RETURN_IF_ERROR(CheckKeys(c, {"signalsPerSecond", "writeBandwidth"}, "server.checkpoints"));
      if (c["signalsPerSecond"]) {
        ASSIGN_OR_RETURN(o.checkpoint_signals_per_second,
                         config::Int(c["signalsPerSecond"], "server.checkpoints.signalsPerSecond", 0, 1000));
      }
      if (c["writeBandwidth"]) {
        // Bytes a second, written as a size ("5G": 5 GB a second).
        ASSIGN_OR_RETURN(o.checkpoint_bytes_per_second,
                         config::MemoryBytes(c["writeBandwidth"], "server.checkpoints.writeBandwidth"));
      }
    }
    if (const YAML::Node d = root["jobDefaults"]) {
      ASSIGN_OR_RETURN(o.job_defaults, ParseJobDefaults(d));
    }
    if (const YAML::Node sl = root["slurm"]) {
      ASSIGN_OR_RETURN(o.job_defaults.slurm, ParseSlurmMapping(sl));
    }
    if (const YAML::Node a = root["agents"]) {
      if (!a.IsMap())
        return InvalidArgument(
            "must be a mapping {unreachableAfter, lostAfter, maxLostFraction, silenceBurstWindow, silenceHold, lease, "
            "defaultGrace, syncWait}",
            "server.agents");
      RETURN_IF_ERROR(CheckKeys(a,
                                {"unreachableAfter", "lostAfter", "maxLostFraction", "silenceBurstWindow",
                                 "silenceHold", "lease", "defaultGrace", "syncWait"},
                                "server.agents"));
      if (a["unreachableAfter"]) {
        ASSIGN_OR_RETURN(o.node_unreachable_after,
                         config::Dur(a["unreachableAfter"], "server.agents.unreachableAfter"));
      }
      if (a["lostAfter"]) {
        ASSIGN_OR_RETURN(o.node_lost_after, config::Dur(a["lostAfter"], "server.agents.lostAfter"));
      }
      if (a["maxLostFraction"]) {
        ASSIGN_OR_RETURN(o.max_lost_fraction, config::Fraction(a["maxLostFraction"], "server.agents.maxLostFraction"));
      }
      if (a["silenceBurstWindow"]) {
        ASSIGN_OR_RETURN(o.silence_burst_window,
                         config::Dur(a["silenceBurstWindow"], "server.agents.silenceBurstWindow"));
      }
      if (a["silenceHold"]) {
        ASSIGN_OR_RETURN(o.silence_hold, config::Dur(a["silenceHold"], "server.agents.silenceHold"));
      }
      if (a["lease"]) {
        ASSIGN_OR_RETURN(o.agent_lease, config::Dur(a["lease"], "server.agents.lease"));
      }
      if (a["defaultGrace"]) {
        ASSIGN_OR_RETURN(o.default_grace, config::Dur(a["defaultGrace"], "server.agents.defaultGrace"));
      }
      if (a["syncWait"]) {
        ASSIGN_OR_RETURN(o.agent_sync_wait, config::Dur(a["syncWait"], "server.agents.syncWait"));
      }
    }
    if (const YAML::Node h = root["ha"]) {
      if (!h.IsMap())
        return InvalidArgument("must be a mapping {name, advertise, lease, renewEvery, pollEvery}", "server.ha");
      RETURN_IF_ERROR(CheckKeys(h, {"name", "advertise", "lease", "renewEvery", "pollEvery"}, "server.ha"));
      if (h["name"]) {
        ASSIGN_OR_RETURN(o.server_name, config::Str(h["name"], "server.ha.name"));
      }
      if (h["advertise"]) {
        ASSIGN_OR_RETURN(o.advertise, config::Str(h["advertise"], "server.ha.advertise"));
      }
      if (h["lease"]) {
        ASSIGN_OR_RETURN(o.leader_lease, config::Dur(h["lease"], "server.ha.lease"));
      }
      if (h["renewEvery"]) {
        ASSIGN_OR_RETURN(o.lease_renew_every, config::Dur(h["renewEvery"], "server.ha.renewEvery"));
      }
      if (h["pollEvery"]) {
        ASSIGN_OR_RETURN(o.standby_poll_every, config::Dur(h["pollEvery"], "server.ha.pollEvery"));
      }
    }
    config::NodeList nodes;
    RETURN_IF_ERROR(config::ReadNodeList(root, "server", nodes));
    o.nodes = std::move(nodes.nodes);
    return Status::Ok();
  }();
  if (!body.ok()) return body;
  // Named as the parsing names fields ("server.agents.lostAfter").
  if (Status v = o.Validate(); !v.ok()) return v.WithFieldPrefix("server");
  return o;
}

StatusOr<ServerOptions> LoadServerOptions(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open configuration file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = ParseServerOptions(ss.str(), path);
  // "server.yaml: server.scheduler.policy: unknown policy ..."
  if (!parsed.ok()) return Status(parsed.status().code(), path + ": " + parsed.status().ToString());
  parsed->config_path = path;
  return parsed;
}

}  // namespace muster::server
