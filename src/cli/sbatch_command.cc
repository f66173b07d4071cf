#include "cli/sbatch_command.h"

#include <cstdlib>
#include <iostream>

#include "cli/client.h"
#include "cli/job_commands.h"
#include "cli/sbatch_options.h"

namespace muster::cli {
namespace {

int Error(const std::string& message) {
  std::cerr << "sbatch: error: " << message << "\n";
  return 1;
}

// sbatch's input environment variables: each stands for an option, which
// overrides the script's directives and yields to the command line.
constexpr std::pair<const char*, const char*> kInputVariables[] = {
    {"SBATCH_ACCOUNT", "account"},         {"SBATCH_ARRAY_INX", "array"},
    {"SBATCH_CLUSTERS", "clusters"},       {"SBATCH_CONSTRAINT", "constraint"},
    {"SBATCH_EXCLUSIVE", "exclusive"},     {"SBATCH_EXPORT", "export"},
    {"SBATCH_GPU_BIND", "gpu-bind"},       {"SBATCH_GPUS", "gpus"},
    {"SBATCH_GPUS_PER_NODE", "gpus-per-node"}, {"SBATCH_GPUS_PER_TASK", "gpus-per-task"},
    {"SBATCH_GRES", "gres"},               {"SBATCH_HINT", "hint"},
    {"SBATCH_JOB_NAME", "job-name"},       {"SBATCH_MEM_PER_CPU", "mem-per-cpu"},
    {"SBATCH_MEM_PER_GPU", "mem-per-gpu"}, {"SBATCH_MEM_PER_NODE", "mem"},
    {"SBATCH_NO_REQUEUE", "no-requeue"},   {"SBATCH_OPEN_MODE", "open-mode"},
    {"SBATCH_OVERCOMMIT", "overcommit"},   {"SBATCH_PARTITION", "partition"},
    {"SBATCH_QOS", "qos"},                 {"SBATCH_REQUEUE", "requeue"},
    {"SBATCH_RESERVATION", "reservation"}, {"SBATCH_SIGNAL", "signal"},
    {"SBATCH_TIMELIMIT", "time"},          {"SBATCH_WAIT_ALL_NODES", "wait-all-nodes"},
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
  bool parsable = false;
  for (const SbatchOption& o : *options) {
    if (o.name == "parsable") parsable = true;
    for (const char* unsupported : {"wrap", "test-only", "wait", "help", "usage", "version"}) {
      if (o.name == unsupported) return Error(o.given + " is not supported here yet");
    }
  }
  if (rest >= args.size()) return Error("give the batch script's file (reading one from standard input is not supported)");
  std::vector<SbatchOption> given = FromEnvironment();
  given.insert(given.end(), options->begin(), options->end());
  Client client(DefaultServer(), "", RetrySeconds());
  // The script, then its arguments ($1, $2, ...).
  auto spec = SbatchSpec(std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(rest), args.end()),
                         std::move(given), client);
  if (!spec.ok()) return Error(spec.status().message());
  auto r = client.Post("/v1/jobs", *spec, "application/json", {{"Idempotency-Key", NewUuid()}});
  if (!r.ok()) return Error("Batch job submission failed: " + r.status().message());
  if (r->status != 200 && r->status != 201) return Error("Batch job submission failed: " + Client::ErrorOf(*r).ToString());
  const std::string id = r->body.contains("id") && r->body["id"].is_number_integer() ? r->body["id"].dump() : "?";
  std::cout << (parsable ? "" : "Submitted batch job ") << id << "\n";
  return 0;
}

}  // namespace muster::cli
