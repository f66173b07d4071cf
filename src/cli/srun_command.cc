#include "cli/srun_command.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "api/slurm_mapping.h"
#include "cli/hostlist.h"
#include "cli/sbatch_options.h"
#include "step/step_env.h"
#include "step/step_host.h"

extern char** environ;

namespace muster::cli {
namespace {

namespace fs = std::filesystem;

// Options that change nothing inside a Muster allocation: the step runs on
// the job's nodes with the job's resources, binding and accounting.
const std::set<std::string>& Accepted() {
  static const std::set<std::string> kNames = {"accel-bind",
                                               "account",
                                               "acctg-freq",
                                               "comment",
                                               "compress",
                                               "constraint",
                                               "contiguous",
                                               "cores-per-socket",
                                               "cpu-bind",
                                               "cpu-freq",
                                               "cpus-per-gpu",
                                               "disable-status",
                                               "distribution",
                                               "exact",
                                               "exclusive",
                                               "extra-node-info",
                                               "gpu-bind",
                                               "gpu-freq",
                                               "gpus",
                                               "gpus-per-node",
                                               "gpus-per-socket",
                                               "gres",
                                               "gres-flags",
                                               "hint",
                                               "immediate",
                                               "job-name",
                                               "licenses",
                                               "mem",
                                               "mem-bind",
                                               "mem-per-cpu",
                                               "mem-per-gpu",
                                               "mincpus",
                                               "mpi",
                                               "msg-timeout",
                                               "network",
                                               "nice",
                                               "no-kill",
                                               "ntasks-per-core",
                                               "ntasks-per-gpu",
                                               "ntasks-per-socket",
                                               "open-mode",
                                               "overcommit",
                                               "overlap",
                                               "oversubscribe",
                                               "partition",
                                               "power",
                                               "preserve-env",
                                               "priority",
                                               "profile",
                                               "propagate",
                                               "qos",
                                               "quiet",
                                               "reservation",
                                               "resv-ports",
                                               "send-libs",
                                               "signal",
                                               "sockets-per-node",
                                               "spread-job",
                                               "switches",
                                               "thread-spec",
                                               "threads",
                                               "threads-per-core",
                                               "time",
                                               "time-min",
                                               "tmp",
                                               "unbuffered",
                                               "verbose",
                                               "wckey",
                                               "whole",
                                               "prefer",
                                               "use-min-nodes",
                                               "core-spec",
                                               "mcs-label",
                                               "delay-boot"};
  return kNames;
}

StatusOr<int64_t> Count(const SbatchOption& o, int64_t min) {
  const std::string v = o.value.value_or("");
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < min || n > 1'000'000) {
    return InvalidArgument(o.given + "=" + v + ": expected a whole number of at least " + std::to_string(min));
  }
  return n;
}

std::string Substitute(const std::string& pattern, const SrunJob& job) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 >= pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 'j' || c == 'J') {
      out += std::to_string(job.job);
    } else if (c == 's') {
      out += std::to_string(job.step);
    } else {
      out += c == '%' ? "%" : std::string("%") + c;
    }
  }
  return out;
}

// The next step number of this attempt. The task shim gives a Slurm-style
// job's script a memory file for it (MUSTER_STEP_COUNTER_FD), which srun
// opens afresh so that its lock excludes other sruns sharing the
// descriptor. Elsewhere (a task of another node running srun), a file in
// its /tmp named by the attempt's key.
int32_t NextStep(const std::string& token) {
  int fd = -1;
  if (const char* inherited = std::getenv("MUSTER_STEP_COUNTER_FD"); inherited != nullptr && *inherited) {
    // Only the shim's memory file, never whatever else holds that number.
    const std::string link = "/proc/self/fd/" + std::string(inherited);
    std::error_code ec;
    if (fs::read_symlink(link, ec).string().rfind("/memfd:muster-steps", 0) == 0) {
      fd = ::open(link.c_str(), O_RDWR | O_CLOEXEC);
    }
  }
  if (fd < 0) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string path =
        std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/.muster-steps-" + step::StepKey(token).substr(0, 24);
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  }
  if (fd < 0) return 0;
  ::flock(fd, LOCK_EX);
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  const int32_t step = n > 0 ? std::atoi(buf) : 0;
  const std::string next = std::to_string(step + 1);
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, next.data(), next.size(), 0);
  ::close(fd);  // releases the lock
  return step;
}

}  // namespace

StatusOr<SrunJob> SrunJobFromEnvironment() {
  SrunJob j;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) j.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto get = [&](const char* k) {
    auto it = j.env.find(k);
    return it == j.env.end() ? std::string() : it->second;
  };
  const std::string hosts = get(step::kStepHostsVariable);
  if (hosts.empty()) {
    return FailedPrecondition(
        "srun runs steps inside a job that sbatch started ($MUSTER_STEP_HOSTS is not set); for a shell on a node, "
        "use muster run --interactive");
  }
  ASSIGN_OR_RETURN(j.hosts, step::ParseStepHosts(hosts));
  j.job = std::atoll(get("MUSTER_JOB_ID").c_str());
  j.token = get("MUSTER_TOKEN");
  j.self = std::atoi(get("MUSTER_REPLICA_INDEX").c_str());
  if (j.job <= 0 || j.token.empty() || j.self < 0 || j.self >= static_cast<int32_t>(j.hosts.size())) {
    return FailedPrecondition(
        "the job's environment is incomplete (MUSTER_JOB_ID, MUSTER_TOKEN, MUSTER_REPLICA_INDEX)");
  }
  std::error_code ec;
  j.cwd = fs::current_path(ec).string();
  j.step = NextStep(j.token);
  return j;
}

StatusOr<SrunPlan> PlanSrun(const std::vector<std::string>& args, const SrunJob& job) {
  size_t rest = 0;
  ASSIGN_OR_RETURN(std::vector<SbatchOption> options, ReadSrunOptions(args, &rest));
  if (rest >= args.size()) return InvalidArgument("no command given to execute");
  SrunPlan plan;
  std::optional<int64_t> nodes, ntasks, per_node, cpus_per_task;
  std::optional<std::vector<std::string>> nodelist;
  std::vector<std::string> exclude;
  std::string export_spec = "ALL", chdir;
  // sbatch's --gpus-per-task reaches srun as SLURM_GPUS_PER_TASK; its own option wins.
  int32_t gpus_per_task = 0;
  if (auto g = job.env.find("SLURM_GPUS_PER_TASK"); g != job.env.end()) gpus_per_task = std::atoi(g->second.c_str());
  for (const SbatchOption& o : options) {
    const std::string& n = o.name;
    const std::string v = o.value.value_or("");
    if (n == "nodes") {
      SbatchOption least = o;
      least.value = v.substr(0, v.find('-'));
      ASSIGN_OR_RETURN(nodes, Count(least, 1));
    } else if (n == "ntasks") {
      ASSIGN_OR_RETURN(ntasks, Count(o, 1));
    } else if (n == "ntasks-per-node" || n == "tasks-per-node") {
      ASSIGN_OR_RETURN(per_node, Count(o, 1));
    } else if (n == "cpus-per-task") {
      ASSIGN_OR_RETURN(cpus_per_task, Count(o, 1));
    } else if (n == "gpus-per-task") {
      // "type:count" or "count"
      SbatchOption count = o;
      count.value = v.substr(v.rfind(':') == std::string::npos ? 0 : v.rfind(':') + 1);
      ASSIGN_OR_RETURN(const int64_t g, Count(count, 1));
      gpus_per_task = static_cast<int32_t>(g);
    } else if (n == "nodelist" || n == "exclude") {
      if (v.find('/') != std::string::npos) {
        return InvalidArgument(o.given + "=" + v + ": a file of node names is not supported here; give the names");
      }
      ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandHostlist(v, 100'000));
      if (n == "nodelist") {
        nodelist = std::move(names);
      } else {
        exclude = std::move(names);
      }
    } else if (n == "label") {
      plan.run.label = true;
    } else if (n == "kill-on-bad-exit") {
      plan.run.kill_on_bad_exit = v != "0";
    } else if (n == "wait") {
      ASSIGN_OR_RETURN(const int64_t seconds, Count(o, 0));
      plan.run.wait_after_first = Duration::Seconds(seconds);
    } else if (n == "export") {
      export_spec = v;
    } else if (n == "chdir") {
      chdir = v;
    } else if (n == "jobid") {
      if (v != std::to_string(job.job)) {
        return InvalidArgument(o.given + "=" + v + ": this is job " + std::to_string(job.job) +
                               "; srun starts steps of its own job only");
      }
    } else if (n == "output" || n == "error") {
      for (size_t i = v.find('%'); i != std::string::npos; i = v.find('%', i + 2)) {
        if (i + 1 >= v.size() || std::string("jJs%").find(v[i + 1]) == std::string::npos) {
          return InvalidArgument(o.given + "=" + v + ": only %j and %s are supported in a step's file name here");
        }
      }
      (n == "output" ? plan.output : plan.error) = Substitute(v, job);
    } else if (!Accepted().count(n)) {
      return InvalidArgument(o.given + " is not supported inside a Muster job");
    }
  }
  auto env_count = [&](const char* k) -> int64_t {
    auto it = job.env.find(k);
    return it == job.env.end() ? 0 : std::atoll(it->second.c_str());
  };

  // The nodes: named ones first (in the allocation's order), then the rest.
  std::vector<int32_t> chosen;  // indices into job.hosts
  auto index_of = [&](const std::string& name) -> int32_t {
    for (size_t i = 0; i < job.hosts.size(); ++i) {
      if (job.hosts[i].node == name) return static_cast<int32_t>(i);
    }
    return -1;
  };
  std::string all;
  for (const step::StepHost& h : job.hosts) all += (all.empty() ? "" : ",") + h.node;
  for (const std::string& name : exclude) {
    if (index_of(name) < 0) return InvalidArgument("--exclude: " + name + " is not a node of this job (" + all + ")");
  }
  auto excluded = [&](int32_t i) {
    return std::find(exclude.begin(), exclude.end(), job.hosts[static_cast<size_t>(i)].node) != exclude.end();
  };
  if (nodelist) {
    for (const std::string& name : *nodelist) {
      const int32_t i = index_of(name);
      if (i < 0) return InvalidArgument("--nodelist: " + name + " is not a node of this job (" + all + ")");
      if (excluded(i)) return InvalidArgument("--nodelist: " + name + " is also excluded");
      if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
    }
    std::sort(chosen.begin(), chosen.end());
  }
  std::vector<int32_t> free_nodes;
  for (int32_t i = 0; i < static_cast<int32_t>(job.hosts.size()); ++i) {
    if (!excluded(i) && std::find(chosen.begin(), chosen.end(), i) == chosen.end()) free_nodes.push_back(i);
  }
  const int64_t available = static_cast<int64_t>(chosen.size() + free_nodes.size());
  if (nodes && *nodes > available) {
    return InvalidArgument("--nodes=" + std::to_string(*nodes) + ": this job has " + std::to_string(available) +
                           " node(s) to run it on (" + all + ")");
  }
  if (nodes && nodelist && *nodes < static_cast<int64_t>(chosen.size())) {
    return InvalidArgument("--nodes=" + std::to_string(*nodes) + " is fewer than --nodelist names (" +
                           std::to_string(chosen.size()) + ")");
  }
  // How many nodes and tasks.
  const bool nodes_chosen = nodes.has_value() || nodelist.has_value() || !exclude.empty();
  if (!per_node && nodes_chosen && !ntasks && env_count("SLURM_NTASKS_PER_NODE") > 0) {
    per_node = env_count("SLURM_NTASKS_PER_NODE");
  }
  int64_t node_count = nodes ? *nodes : nodelist ? static_cast<int64_t>(chosen.size()) : available;
  int64_t tasks = 0;
  if (ntasks) {
    tasks = *ntasks;
    if (!nodes_chosen) {
      // As few of the allocation's nodes as hold the tasks in blocks of the
      // job's tasks per node.
      int64_t block = per_node ? *per_node : env_count("SLURM_NTASKS_PER_NODE");
      if (block <= 0)
        block = std::max<int64_t>(1, (env_count("SLURM_NTASKS") + available - 1) / std::max<int64_t>(1, available));
      node_count = std::min(available, (tasks + block - 1) / block);
    }
  } else if (per_node) {
    tasks = node_count * *per_node;
  } else if (!nodes_chosen && env_count("SLURM_NTASKS") > 0) {
    tasks = env_count("SLURM_NTASKS");
  } else {
    tasks = node_count;
  }
  if (tasks < node_count) node_count = tasks;  // Slurm: no node without a task
  while (static_cast<int64_t>(chosen.size()) < node_count) {
    chosen.push_back(free_nodes.front());
    free_nodes.erase(free_nodes.begin());
  }
  chosen.resize(static_cast<size_t>(node_count));
  std::sort(chosen.begin(), chosen.end());
  // Tasks in blocks: --ntasks-per-node each, or as evenly as whole blocks go.
  const int64_t block = per_node && *per_node * node_count >= tasks ? *per_node : (tasks + node_count - 1) / node_count;
  std::vector<int32_t> counts;
  for (int64_t left = tasks, i = 0; i < node_count; ++i) {
    // Later nodes keep at least one task each.
    const int64_t here = std::max<int64_t>(1, std::min(block, left - (node_count - 1 - i)));
    counts.push_back(static_cast<int32_t>(here));
    left -= here;
  }

  // The step's environment: srun's own, as --export says, and the step's.
  std::map<std::string, std::string> env;
  {
    std::vector<std::string> items;
    for (size_t at = 0;;) {
      const size_t comma = export_spec.find(',', at);
      items.push_back(export_spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    const bool everything = items[0] == "ALL";
    for (const auto& [k, v] : job.env) {
      const bool own = k.rfind("SLURM_", 0) == 0 || k.rfind("MUSTER_", 0) == 0;
      if (everything || own || std::find(items.begin(), items.end(), k) != items.end()) env[k] = v;
    }
    for (const std::string& item : items) {
      const size_t eq = item.find('=');
      if (eq != std::string::npos) env[item.substr(0, eq)] = item.substr(eq + 1);
    }
  }
  std::vector<std::string> names;
  for (int32_t i : chosen) names.push_back(job.hosts[static_cast<size_t>(i)].node);
  const std::string step = std::to_string(job.step), list = CompressHostlist(names),
                    runs = api::SlurmRunLengths(counts);
  const std::string launch_host = job.hosts[static_cast<size_t>(job.self)].endpoint.substr(
      0, job.hosts[static_cast<size_t>(job.self)].endpoint.rfind(':'));
  for (const auto& [k, v] : std::map<std::string, std::string>{{"SLURM_STEP_ID", step},
                                                               {"SLURM_STEPID", step},
                                                               {"SLURM_STEP_NUM_NODES", std::to_string(node_count)},
                                                               {"SLURM_STEP_NUM_TASKS", std::to_string(tasks)},
                                                               {"SLURM_STEP_NODELIST", list},
                                                               {"SLURM_STEP_TASKS_PER_NODE", runs},
                                                               {"SLURM_NNODES", std::to_string(node_count)},
                                                               {"SLURM_NTASKS", std::to_string(tasks)},
                                                               {"SLURM_NPROCS", std::to_string(tasks)},
                                                               {"SLURM_NODELIST", list},
                                                               {"SLURM_TASKS_PER_NODE", runs},
                                                               {"SLURM_DISTRIBUTION", "block"},
                                                               {"SLURM_LAUNCH_NODE_IPADDR", launch_host},
                                                               {"SLURM_SRUN_COMM_HOST", launch_host}}) {
    env[k] = v;
  }
  if (cpus_per_task) env["SLURM_CPUS_PER_TASK"] = std::to_string(*cpus_per_task);
  if (plan.run.label) env["SLURM_LABELIO"] = "1";
  {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mask));
    env["SLURM_UMASK"] = text;
  }

  const fs::path dir = chdir.empty() ? fs::path(job.cwd) : fs::path(job.cwd) / chdir;
  plan.run.job = job.job;
  plan.run.key_hex = step::StepKey(job.token);
  int32_t next_task = 0;
  for (size_t k = 0; k < chosen.size(); ++k) {
    const step::StepHost& host = job.hosts[static_cast<size_t>(chosen[k])];
    step::StepNode node;
    node.name = host.node;
    if (chosen[k] != job.self) node.endpoint = host.endpoint;
    node.launch.step = job.step;
    node.launch.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(rest), args.end());
    node.launch.cwd = dir.lexically_normal().string();
    node.launch.env = env;
    node.launch.node_index = static_cast<int32_t>(k);
    node.launch.gpus_per_task = gpus_per_task;
    for (int32_t local = 0; local < counts[k]; ++local) node.launch.tasks.push_back({next_task++, local});
    plan.run.nodes.push_back(std::move(node));
  }
  return plan;
}

int RunSrun(const std::vector<std::string>& args) {
  auto fail = [](const std::string& why) {
    std::cerr << "srun: error: " << why << "\n";
    return 1;
  };
  StatusOr<SrunJob> job = SrunJobFromEnvironment();
  if (!job.ok()) return fail(job.status().message());
  StatusOr<SrunPlan> plan = PlanSrun(args, *job);
  if (!plan.ok()) return fail(plan.status().message());
  for (const std::string& w : plan->warnings) std::cerr << "srun: warning: " << w << "\n";
  // -o alone takes stderr too, as srun's.
  const std::string error = plan->error.empty() ? plan->output : plan->error;
  for (const auto& [file, fd] : {std::pair{plan->output, 1}, std::pair{error, 2}}) {
    if (file.empty()) continue;
    if (fd == 2 && file == plan->output) {
      ::dup2(1, 2);
      continue;
    }
    const int out = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return fail("cannot open " + file + ": " + std::strerror(errno));
    ::dup2(out, fd);
    ::close(out);
  }
  return step::RunStep(plan->run);
}

int RunStepHostCommand() {
  auto get = [](const char* k) {
    const char* v = std::getenv(k);
    return std::string(v != nullptr ? v : "");
  };
  auto hosts = step::ParseStepHosts(get(step::kStepHostsVariable));
  const int64_t job = std::atoll(get("MUSTER_JOB_ID").c_str());
  const int32_t self = std::atoi(get("MUSTER_REPLICA_INDEX").c_str());
  if (!hosts.ok() || job <= 0 || get("MUSTER_TOKEN").empty() || self < 0 ||
      self >= static_cast<int32_t>(hosts->size())) {
    std::cerr << "muster step-host: runs as a node of a job that sbatch started (MUSTER_STEP_HOSTS, MUSTER_JOB_ID, "
                 "MUSTER_TOKEN and MUSTER_REPLICA_INDEX are not all set)\n";
    return 2;
  }
  step::StepHostOptions o;
  o.job = job;
  o.port = step::EndpointPort((*hosts)[static_cast<size_t>(self)].endpoint);
  o.key_hex = step::StepKey(get("MUSTER_TOKEN"));
  o.node = (*hosts)[static_cast<size_t>(self)].node;
  o.node_env = step::NodeEnvironment();
  return step::RunStepHost(o);
}

}  // namespace muster::cli
