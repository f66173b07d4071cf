#include "cli/sbatch_command.h"

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
  if (rest + 1 < args.size()) {
    return Error("arguments after the batch script are not supported yet (" + args[rest] + " " + args[rest + 1] + " ...)");
  }
  Client client(DefaultServer(), "", RetrySeconds());
  auto spec = SbatchSpec(args[rest], std::move(*options), client);
  if (!spec.ok()) return Error(spec.status().message());
  auto r = client.Post("/v1/jobs", *spec, "application/json", {{"Idempotency-Key", NewUuid()}});
  if (!r.ok()) return Error("Batch job submission failed: " + r.status().message());
  if (r->status != 200 && r->status != 201) return Error("Batch job submission failed: " + Client::ErrorOf(*r).ToString());
  const std::string id = r->body.contains("id") && r->body["id"].is_number_integer() ? r->body["id"].dump() : "?";
  std::cout << (parsable ? "" : "Submitted batch job ") << id << "\n";
  return 0;
}

}  // namespace muster::cli
