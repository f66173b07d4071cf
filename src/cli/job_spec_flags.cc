#include "cli/job_spec_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/client.h"
#include "cli/job_commands.h"
#include "cli/script_directives.h"
#include "common/quantity.h"

namespace muster::cli {

using nlohmann::json;

namespace {

// --replicas: "4" (a number), "1:4" ({min, max}: elastic); anything else
// goes as given, for the server to name what is wrong with it.
json ReplicasJson(const std::string& text) {
  auto number = [](std::string_view t) -> std::optional<int64_t> {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || t.empty()) return std::nullopt;
    return v;
  };
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    if (auto n = number(text)) return *n;
    return text;
  }
  auto min = number(std::string_view(text).substr(0, colon));
  auto max = number(std::string_view(text).substr(colon + 1));
  if (!min || !max) return text;
  return json{{"min", *min}, {"max", *max}};
}

// A file's whole text; NotFound when it cannot be read.
StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The batch script named by the one argument not after "--" (as sbatch
// takes it), with its directives merged into the flags (a flag on the
// command line wins); nullopt when the arguments are a command.
// The CPUs of the largest node the server knows, for #SBATCH tasks given
// without a node count (slurm_request.h).
StatusOr<int64_t> LargestNodeCpus(Client* client) {
  if (client == nullptr) return FailedPrecondition("no server to ask for its nodes");
  auto r = client->Get("/v1/nodes");
  if (!r.ok()) return r.status();
  if (r->status != 200) return Client::ErrorOf(*r);
  int64_t largest = 0;
  if (r->body.contains("items") && r->body["items"].is_array()) {
    for (const json& n : r->body["items"]) largest = std::max<int64_t>(largest, n.value("cpuMilli", int64_t{0}) / 1000);
  }
  if (largest == 0) return FailedPrecondition("the server knows no node with CPUs yet");
  return largest;
}

StatusOr<std::optional<std::string>> TakeBatchScript(JobCommands& c, Client* client) {
  if (!c.file.empty() || c.command.empty() || c.double_dash) return std::optional<std::string>();
  const std::string file = c.command[0];
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    return InvalidArgument(file + (std::filesystem::exists(file, ec) ? " is not a file" : ": no such file") +
                           "; a batch script or job file is submitted by its name, and a command goes after \"--\" "
                           "(muster submit -- " +
                           file + (c.command.size() > 1 ? " ..." : "") + ")");
  }
  // The words after the script are its arguments ($1, $2, ...), as sbatch's.
  c.script_args.assign(c.command.begin() + 1, c.command.end());
  ASSIGN_OR_RETURN(std::string script, ReadText(file));
  if (script.empty()) return InvalidArgument(file + " is empty");
  ASSIGN_OR_RETURN(ScriptSettings from,
                   ReadScriptDirectives(
                       script, file, [client] { return LargestNodeCpus(client); }, c.sbatch_command_line));
  for (const std::string& w : from.warnings)
    std::cerr << (c.as_sbatch ? "sbatch: warning: " : "muster submit: ") << w << "\n";
  auto fill = [](std::string& flag, const std::optional<std::string>& v) {
    if (flag.empty() && v) flag = *v;
  };
  fill(c.name, from.name);
  fill(c.queue, from.queue);
  fill(c.priority, from.priority);
  fill(c.gpu_type, from.gpu_type);
  fill(c.cpus, from.cpus);
  fill(c.memory, from.memory);
  fill(c.time, from.time);
  fill(c.after, from.after);
  fill(c.chdir, from.chdir);
  fill(c.stdout_path, from.stdout_path);
  fill(c.stderr_path, from.stderr_path);
  fill(c.image, from.image);
  fill(c.reservation, from.reservation);
  if (c.mounts.empty()) c.mounts = from.mounts;
  if (!c.gpus) c.gpus = from.gpus;
  if (!c.replicas && from.replicas) c.replicas = std::to_string(*from.replicas);
  if (c.array.empty() && from.array) c.array = std::to_string(*from.array);
  if (c.array.empty() && from.array_indices) c.array = *from.array_indices;
  c.one_per_node = c.one_per_node || from.one_per_node;
  c.exclusive = c.exclusive || from.exclusive;
  if (c.features.empty()) c.features = from.features;
  c.export_all = from.export_all;
  c.limit_signal = from.limit_signal;
  c.slurm_shape = from.slurm;
  c.slurm_partition = from.slurm_partition;
  c.slurm_qos = from.slurm_qos;
  c.slurm_account = from.slurm_account;
  if (!c.retry) c.retry = from.retry;
  c.env.insert(c.env.begin(), from.env.begin(), from.env.end());  // the command line's come last and win
  c.hold = c.hold || from.hold;
  c.spot = c.spot || from.spot;
  if (c.name.empty()) c.name = std::filesystem::path(file).filename().string();
  c.command.clear();
  return std::optional<std::string>(std::move(script));
}

}  // namespace

// The spec from --file, or from flags and the command after "--". A wrong
// combination is InvalidArgument (a usage error); a file that cannot be read
// is NotFound.
StatusOr<std::pair<std::string, std::string>> BuildSpec(JobCommands& c, Client* client) {
  auto is_spec_file = [](const std::string& a) {
    for (const char* ext : {".yaml", ".yml", ".json"}) {
      const std::string e(ext);
      if (a.size() > e.size() && a.compare(a.size() - e.size(), e.size(), e) == 0) return true;
    }
    return false;
  };
  if (c.file.empty() && c.command.size() == 1 && is_spec_file(c.command[0])) {
    c.file = c.command[0];
    c.command.clear();
  }
  ASSIGN_OR_RETURN(std::optional<std::string> script, TakeBatchScript(c, client));
  if (!c.file.empty() && !c.command.empty()) {
    return InvalidArgument("give a job file or a command, not both");
  }
  if (!c.file.empty()) {
    // The file is the whole job; a flag beside it would be silently lost.
    std::vector<std::string> given;
    for (CLI::Option* o : c.submit->get_options()) {
      if (o->count() > 0 && o->get_group() == kSpecFlags) given.push_back(o->get_name());
    }
    if (!given.empty()) {
      std::string list;
      for (const std::string& g : given) list += (list.empty() ? "" : ", ") + g;
      return InvalidArgument("give the job's settings in " + c.file + " or as flags, not both (flags given: " + list +
                             ")");
    }
    ASSIGN_OR_RETURN(std::string text, ReadText(c.file));
    const bool is_json = c.file.size() > 5 && c.file.substr(c.file.size() - 5) == ".json";
    return std::make_pair(std::move(text), std::string(is_json ? "application/json" : "application/yaml"));
  }
  if (c.command.empty() && !script) {
    return InvalidArgument(
        "give a job file, a batch script, or the command after \"--\" (muster submit --gpus 1 -- "
        "python train.py)");
  }
  json spec = script ? json{{"script", *script}} : json{{"command", c.command}};
  if (script && !c.script_args.empty()) spec["args"] = c.script_args;
  if (!c.name.empty()) spec["name"] = c.name;
  if (!c.queue.empty()) spec["queue"] = c.queue;
  if (!c.priority.empty()) spec["priority"] = c.priority;
  if (c.replicas) spec["replicas"] = ReplicasJson(*c.replicas);
  if (!c.array.empty()) {
    // A plain count is a number; Slurm's indices are a string.
    const bool count = c.array.find_first_not_of("0123456789") == std::string::npos && c.array.size() < 10;
    spec["array"] = count ? json(std::stoll(c.array)) : json(c.array);
  }
  for (const auto& [key, value] : {std::pair{"partition", &c.slurm_partition}, std::pair{"qos", &c.slurm_qos},
                                   std::pair{"account", &c.slurm_account}}) {
    if (*value) spec["slurm"][key] = **value;
  }
  if (c.slurm_shape) {  // the tasks, for the job's SLURM_NTASKS and the like
    spec["slurm"]["tasks"] = c.slurm_shape->tasks;
    spec["slurm"]["tasksPerNode"] = c.slurm_shape->tasks_per_node;
    spec["slurm"]["cpusPerTask"] = c.slurm_shape->cpus_per_task;
    if (c.slurm_shape->gpus_per_task > 0) spec["slurm"]["gpusPerTask"] = c.slurm_shape->gpus_per_task;
  }
  if (c.one_per_node) spec["onePerNode"] = true;
  if (c.exclusive) spec["exclusive"] = true;
  if (!c.features.empty()) spec["features"] = c.features;
  json res = json::object();
  if (c.gpus) res["gpus"] = *c.gpus;
  if (!c.gpu_type.empty()) res["gpuType"] = c.gpu_type;
  if (!c.cpus.empty()) res["cpus"] = c.cpus;
  if (!c.memory.empty()) res["memory"] = c.memory;
  if (!res.empty()) spec["resources"] = res;
  if (!c.time.empty()) spec["timeLimit"] = SlurmTimeLimit(c.time);  // as sbatch -t: "30" is 30 minutes
  if (!c.after.empty()) {
    // Slurm's singleton is a flag of its own here; the rest are dependencies.
    std::string rest;
    std::stringstream in(c.after);
    for (std::string item; std::getline(in, item, ',');) {
      if (item == "singleton") {
        spec["singleton"] = true;
      } else {
        rest += (rest.empty() ? "" : ",") + item;
      }
    }
    if (!rest.empty()) spec["dependencies"] = rest;
  }
  if (c.hold) spec["hold"] = true;
  if (c.spot) spec["spot"] = true;
  if (!c.reservation.empty()) spec["reservation"] = c.reservation;
  if (!c.limit_signal_flag.empty()) {
    ASSIGN_OR_RETURN(c.limit_signal, ReadSignalOption(c.limit_signal_flag, "--signal"));
    // Without B:, srun's tasks of a Slurm-style job, else every process.
    if (c.limit_signal->to == "steps" && !c.slurm_shape) c.limit_signal->to = "all";
  }
  if (c.limit_signal) {
    spec["limitSignal"] = {{"signal", c.limit_signal->signal},
                           {"before", std::to_string(c.limit_signal->before_seconds) + "s"},
                           {"to", c.limit_signal->to}};
  }
  if (c.retry) spec["retry"] = {{"limit", *c.retry}};
  if (!c.stdout_path.empty()) spec["stdout"] = c.stdout_path;
  if (!c.stderr_path.empty()) spec["stderr"] = c.stderr_path;
  if (!c.image.empty()) spec["image"] = c.image;
  for (const std::string& m : c.mounts) {
    // HOST:CONTAINER[:ro|:rw]; a bare path is mounted at the same place.
    std::vector<std::string> parts;
    std::stringstream in(m);
    for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
    const bool flag = parts.size() >= 2 && (parts.back() == "ro" || parts.back() == "rw");
    const std::string mode = flag ? parts.back() : "rw";
    if (flag) parts.pop_back();
    if (parts.empty() || parts.size() > 2)
      return InvalidArgument("--mount: must be HOST:CONTAINER[:ro], got \"" + m + "\"");
    spec["mounts"].push_back({{"hostPath", parts[0]},
                              {"containerPath", parts.size() == 2 ? parts[1] : parts[0]},
                              {"readOnly", mode == "ro"}});
  }
  if (c.export_all) {
    // sbatch's --export=ALL: the variables here, but Muster's own (a token
    // among them) and Slurm's, which the job gets afresh.
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string var = *e;
      const size_t eq = var.find('=');
      const std::string name = var.substr(0, eq);
      if (eq == std::string::npos || name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) ||
          name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
              std::string::npos) {
        continue;  // not a name a spec takes (bash's exported functions)
      }
      if (name.rfind("MUSTER_", 0) == 0 || name.rfind("SLURM_", 0) == 0 || name.rfind("SBATCH_", 0) == 0) continue;
      // A value with a line break is refused by the server (docs/security.md:
      // it cannot reach a container's env file); left out of ALL, not an error.
      if (var.find_first_of("\r\n", eq) != std::string::npos) continue;
      spec["env"][name] = var.substr(eq + 1);
    }
  }
  if (c.slurm_shape) {
    // As sbatch: the host it was submitted from.
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) spec["env"]["SLURM_SUBMIT_HOST"] = std::string(host);
  }
  for (const std::string& e : c.env) {
    const size_t eq = e.find('=');
    if (eq != std::string::npos) {
      spec["env"][e.substr(0, eq)] = e.substr(eq + 1);
      continue;
    }
    const char* here = std::getenv(e.c_str());
    if (here == nullptr) return InvalidArgument("--env " + e + ": not set here (give NAME=VALUE)");
    spec["env"][e] = here;
  }
  // As sbatch: the job runs where it was submitted from, unless told.
  std::error_code ec;
  // A relative directory is the submit directory's (sbatch -D .).
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  const std::string here = c.chdir.empty() ? cwd.string() : (cwd / c.chdir).lexically_normal().string();
  if (!here.empty()) spec["workingDir"] = here;
  return std::make_pair(spec.dump(), std::string("application/json"));
}

// The flags that make a spec, on submit and run.
void AddSpecFlags(CLI::App* sub, JobCommands& c) {
  sub->add_option("--name", c.name, "Job name")->group(kSpecFlags);
  sub->add_option("--queue,-q", c.queue, "Queue (team)")->group(kSpecFlags);
  sub->add_option("--priority", c.priority, "Priority class")->group(kSpecFlags);
  sub->add_option("--gpus", c.gpus, "GPUs per replica")->group(kSpecFlags);
  sub->add_option("--gpu-type", c.gpu_type, "GPU type")->group(kSpecFlags);
  sub->add_option("--replicas", c.replicas, "Replicas (gang size), or MIN:MAX for an elastic job")->group(kSpecFlags);
  sub->add_option("--array", c.array,
                  "Submit this many tasks of the job (one job each), or Slurm's indices: 0-15:4,20%2 (%K: K at once)")
      ->group(kSpecFlags);
  sub->add_flag("--one-per-node", c.one_per_node, "Each replica on a node of its own")->group(kSpecFlags);
  sub->add_flag("--exclusive", c.exclusive, "Each replica holds a whole node, shared with no other job")
      ->group(kSpecFlags);
  sub->add_option("--feature", c.features, "A node feature every node of the job must have; repeat for more")
      ->group(kSpecFlags);
  sub->add_option("--cpus", c.cpus, "CPUs per replica (4, 2.5, 500m)")->group(kSpecFlags);
  sub->add_option("--memory", c.memory, "Memory per replica (64Gi)")->group(kSpecFlags);
  sub->add_option("--time,-t", c.time, "Time limit (2h, 90m, 1-00:00:00; a bare number is minutes, 0 none)")
      ->group(kSpecFlags);
  sub->add_option("--after", c.after, "Dependencies, e.g. afterok:12,afterany:13-20")->group(kSpecFlags);
  sub->add_flag("--hold", c.hold, "Submit held")->group(kSpecFlags);
  sub->add_option("--reservation", c.reservation, "An admin reservation: run on its nodes, in its window")
      ->group(kSpecFlags);
  sub->add_option("--signal", c.limit_signal_flag,
                  "[B:]SIG[@SECONDS]: send SIG this long (default 60) before the time limit; B: to the batch "
                  "script's shell only")
      ->group(kSpecFlags);
  sub->add_flag("--spot", c.spot, "May run on spot nodes (checkpointed and moved when the cloud reclaims one)")
      ->group(kSpecFlags);
  sub->add_option("--retry", c.retry, "Retries after a failure (default 3; 0: none)")->group(kSpecFlags);
  sub->add_option("--env", c.env,
                  "NAME=VALUE for the job's environment, or NAME to pass this shell's value; repeatable")
      ->group(kSpecFlags)
      ->allow_extra_args(false);  // one value each time: a file after it stays the file
  sub->add_option("--stdout", c.stdout_path,
                  "Also write the output to this file, as the user (%j job, %t replica, %x name, ...)")
      ->group(kSpecFlags);
  sub->add_option("--stderr", c.stderr_path, "Write errors to this file instead (else with --stdout)")
      ->group(kSpecFlags);
  sub->add_option("--chdir,-D", c.chdir, "Working directory on the node (default: this directory, as sbatch)")
      ->group(kSpecFlags);
  sub->add_option("--image", c.image,
                  "Run each replica in a container of this image (nvcr.io/nvidia/pytorch:24.05-py3)")
      ->group(kSpecFlags);
  sub->add_option("--mount", c.mounts, "HOST:CONTAINER[:ro] into the container; repeatable")
      ->group(kSpecFlags)
      ->allow_extra_args(false);
}

StatusOr<std::string> SbatchSpec(const std::vector<std::string>& script_and_args,
                                 std::vector<SbatchOption> command_line, Client& client) {
  JobCommands c;
  c.command = script_and_args;
  c.sbatch_command_line = std::move(command_line);
  c.as_sbatch = true;
  ASSIGN_OR_RETURN(auto spec, BuildSpec(c, &client));
  return spec.first;
}

}  // namespace muster::cli
