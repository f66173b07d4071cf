#include "cli/sbatch_command.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <thread>

#include "cli/client.h"
#include "cli/job_commands.h"
#include "cli/sbatch_options.h"
#include "cli/slurm_jobs.h"

namespace muster::cli {
namespace {

int Error(const std::string& message) {
  std::cerr << "sbatch: error: " << message << "\n";
  return 1;
}

// sbatch's input environment variables: each stands for an option, which
// overrides the script's directives and yields to the command line.
constexpr std::pair<const char*, const char*> kInputVariables[] = {
    {"SBATCH_ACCOUNT", "account"},
    {"SBATCH_ARRAY_INX", "array"},
    {"SBATCH_CLUSTERS", "clusters"},
    {"SBATCH_CONSTRAINT", "constraint"},
    {"SBATCH_EXCLUSIVE", "exclusive"},
    {"SBATCH_EXPORT", "export"},
    {"SBATCH_GPU_BIND", "gpu-bind"},
    {"SBATCH_GPUS", "gpus"},
    {"SBATCH_GPUS_PER_NODE", "gpus-per-node"},
    {"SBATCH_GPUS_PER_TASK", "gpus-per-task"},
    {"SBATCH_GRES", "gres"},
    {"SBATCH_HINT", "hint"},
    {"SBATCH_JOB_NAME", "job-name"},
    {"SBATCH_MEM_PER_CPU", "mem-per-cpu"},
    {"SBATCH_MEM_PER_GPU", "mem-per-gpu"},
    {"SBATCH_MEM_PER_NODE", "mem"},
    {"SBATCH_NO_REQUEUE", "no-requeue"},
    {"SBATCH_OPEN_MODE", "open-mode"},
    {"SBATCH_OVERCOMMIT", "overcommit"},
    {"SBATCH_PARTITION", "partition"},
    {"SBATCH_QOS", "qos"},
    {"SBATCH_REQUEUE", "requeue"},
    {"SBATCH_RESERVATION", "reservation"},
    {"SBATCH_SIGNAL", "signal"},
    {"SBATCH_TIMELIMIT", "time"},
    {"SBATCH_WAIT_ALL_NODES", "wait-all-nodes"},
};

std::vector<SbatchOption> FromEnvironment() {
  std::vector<SbatchOption> out;
  for (const auto& [variable, option] : kInputVariables) {
    const char* value = std::getenv(variable);
    if (value == nullptr) continue;
    auto info = ResolveSbatchOption(option, false);
    if (!info.ok()) continue;
    SbatchOption o{option, std::nullopt, std::string("$") + variable};
    if ((*info)->argument == SbatchArgument::kRequired || ((*info)->argument == SbatchArgument::kOptional && *value)) {
      o.value = value;
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

int RunSbatch(const std::vector<std::string>& args) {
  size_t rest = 0;
  auto options = ReadSbatchOptions(args, &rest);
  if (!options.ok()) return Error(options.status().message());
  bool parsable = false, wait = false;
  std::optional<std::string> wrap;
  std::vector<SbatchOption> given = FromEnvironment();
  for (const SbatchOption& o : *options) {
    if (o.name == "parsable") parsable = true;
    for (const char* unsupported : {"test-only", "help", "usage", "version"}) {
      if (o.name == unsupported) return Error(o.given + " is not supported here yet");
    }
    if (o.name == "wait") {
      wait = true;
    } else if (o.name == "wrap") {
      wrap = o.value.value_or("");
    } else {
      given.push_back(o);
    }
  }
  // The script: a file, --wrap's command, or standard input. The last two
  // are written to a file named as Slurm names such jobs (wrap, sbatch).
  std::vector<std::string> script_and_args(args.begin() + static_cast<std::ptrdiff_t>(rest), args.end());
  std::string made_dir;
  if (wrap || script_and_args.empty()) {
    if (wrap && !script_and_args.empty()) return Error("script arguments not permitted with --wrap option");
    std::string text;
    if (wrap) {
      text = "#!/bin/sh\n" + *wrap + "\n";
    } else {
      text.assign(std::istreambuf_iterator<char>(std::cin), {});
      if (text.empty()) return Error("give the batch script's file, or the script on standard input");
    }
    char dir[] = "/tmp/muster-sbatch-XXXXXX";
    if (::mkdtemp(dir) == nullptr)
      return Error(std::string("cannot make a temporary directory: ") + std::strerror(errno));
    made_dir = dir;
    const std::string file = made_dir + (wrap ? "/wrap" : "/sbatch");
    std::ofstream(file) << text;
    script_and_args = {file};
  }
  Client client(DefaultServer(), "", RetrySeconds());
  // The script, then its arguments ($1, $2, ...).
  auto spec = SbatchSpec(script_and_args, std::move(given), client);
  if (!made_dir.empty()) std::filesystem::remove_all(made_dir);
  if (!spec.ok()) return Error(spec.status().message());
  auto r = client.Post("/v1/jobs", *spec, "application/json", {{"Idempotency-Key", NewUuid()}});
  if (!r.ok()) return Error("Batch job submission failed: " + r.status().message());
  if (r->status != 200 && r->status != 201)
    return Error("Batch job submission failed: " + Client::ErrorOf(*r).ToString());
  const std::string id = r->body.contains("id") && r->body["id"].is_number_integer() ? r->body["id"].dump() : "?";
  std::cout << (parsable ? "" : "Submitted batch job ") << id << std::endl;
  if (!wait) return 0;
  // --wait: until every task has ended; the exit code is the job's (the
  // highest of an array's), as sbatch's.
  const int64_t first = r->body.value("arrayFirstId", r->body.value("id", int64_t{0}));
  const int64_t last = r->body.value("arrayLastId", first);
  int worst = 0;
  for (int64_t job = first; job <= last; ++job) {
    for (;;) {
      auto j = client.Get("/v1/jobs/" + std::to_string(job));
      if (!j.ok()) return Error("waiting for job " + std::to_string(job) + ": " + j.status().message());
      if (j->status != 200)
        return Error("waiting for job " + std::to_string(job) + ": " + Client::ErrorOf(*j).message());
      const SlurmJob s = SlurmJobFromJson(j->body);
      if (s.Finished()) {
        const int code = s.state == "COMPLETED" ? 0 : s.exit_code.value_or(0) > 0 ? *s.exit_code : 1;
        worst = std::max(worst, code);
        break;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  return worst;
}

}  // namespace muster::cli
