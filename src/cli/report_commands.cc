#include "cli/report_commands.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "checkpoint/manifest.h"
#include "cli/client.h"
#include "common/clock.h"

namespace muster::cli {

using nlohmann::json;

struct ReportCommands {
  std::string server = DefaultServer();
  std::string act_as;
  int64_t job = 0;
  int64_t attempt = 0;
  CLI::App* progress = nullptr;
  CLI::App* commit = nullptr;
  CLI::App* list = nullptr;
  int64_t step = -1;
  std::vector<std::string> metrics;
  std::string message;
  std::string dir;
};

namespace {

int64_t EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : 0;
}

int Fail(const std::string& what) {
  std::cerr << "muster: " << what << "\n";
  return 1;
}

// The job and attempt this process reports for: 0 when known, else the
// usage error's exit code.
int CheckIdentity(const ReportCommands& c) {
  const char* missing = c.job <= 0       ? "no job: pass --job, or run inside a Muster job (MUSTER_JOB_ID)"
                        : c.attempt <= 0 ? "no attempt: pass --attempt, or run inside a Muster job (MUSTER_ATTEMPT)"
                                         : nullptr;
  if (!missing) return 0;
  std::cerr << "muster: " << missing << "\n";
  return 2;
}

int Progress(ReportCommands& c, Client& client) {
  if (int rc = CheckIdentity(c); rc) return rc;
  json body = {{"attempt", c.attempt}};
  if (c.step >= 0) body["step"] = c.step;
  // Which replica reports: the server compares the replicas' step rates (stragglers).
  if (const char* r = std::getenv("MUSTER_REPLICA_INDEX"); r && *r && std::isdigit(static_cast<unsigned char>(*r))) {
    body["replica"] = std::atoi(r);
  }
  if (!c.message.empty()) body["message"] = c.message;
  json metrics = json::object();
  for (const std::string& m : c.metrics) {
    const size_t eq = m.find('=');
    char* end = nullptr;
    const double v = eq == std::string::npos ? 0 : std::strtod(m.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == m.c_str() + eq + 1 || *end != '\0') {
      std::cerr << "muster progress: --metric: expected name=number, got \"" << m << "\"\n";
      return 2;
    }
    metrics[m.substr(0, eq)] = v;
  }
  if (!metrics.empty()) body["metrics"] = metrics;
  auto r = client.Post("/v1/jobs/" + std::to_string(c.job) + "/progress", body.dump(), "application/json");
  if (!r.ok()) return Fail(r.status().message());
  if (r->status != 200) return Fail(Client::ErrorOf(*r).message());
  if (r->body.value("checkpointRequested", false)) {
    std::cout << "checkpoint requested\n";
    return 3;
  }
  return 0;
}

int Commit(ReportCommands& c, Client& client) {
  if (int rc = CheckIdentity(c); rc) return rc;
  if (c.step < 0) {
    std::cerr << "muster checkpoint commit: --step is required\n";
    return 2;
  }
  std::error_code ec;
  const std::string dir = std::filesystem::absolute(c.dir, ec).lexically_normal().string();
  auto written =
      checkpoint::WriteManifest(dir, c.job, static_cast<int32_t>(c.attempt), c.step, SystemClock().Now().millis());
  if (!written.ok()) return Fail(written.status().message());
  const json body = {{"attempt", c.attempt},    {"step", c.step},
                     {"location", dir},         {"manifestSha256", written->manifest_sha256},
                     {"files", written->files}, {"bytes", written->bytes}};
  auto r = client.Post("/v1/jobs/" + std::to_string(c.job) + "/checkpoints", body.dump(), "application/json");
  if (!r.ok()) return Fail(r.status().message());
  if (r->status != 201) return Fail(Client::ErrorOf(*r).message());
  std::cout << "checkpoint " << r->body.value("seq", int64_t{0}) << " (step " << c.step << ", " << written->files
            << " files, " << written->bytes << " bytes) committed at " << dir << "\n";
  return 0;
}

int List(ReportCommands& c, Client& client) {
  if (c.job <= 0) return Fail("pass the job id");
  auto r = client.Get("/v1/jobs/" + std::to_string(c.job) + "/checkpoints");
  if (!r.ok()) return Fail(r.status().message());
  if (r->status != 200) return Fail(Client::ErrorOf(*r).message());
  std::printf("%-5s %-8s %-10s %-10s %-14s %s\n", "SEQ", "ATTEMPT", "STEP", "STATE", "SIZE", "LOCATION");
  for (const json& e : r->body.value("items", json::array())) {
    std::printf("%-5lld %-8d %-10lld %-10s %-14lld %s\n", static_cast<long long>(e.value("seq", int64_t{0})),
                e.value("attempt", 0), static_cast<long long>(e.value("step", int64_t{0})),
                e.value("state", "").c_str(), static_cast<long long>(e.value("bytes", int64_t{0})),
                e.value("location", "").c_str());
    if (!e.value("note", "").empty()) std::printf("      %s\n", e.value("note", "").c_str());
  }
  return 0;
}

}  // namespace

std::shared_ptr<ReportCommands> AddReportCommands(CLI::App& app) {
  auto c = std::make_shared<ReportCommands>();
  c->job = EnvInt("MUSTER_JOB_ID");
  c->attempt = EnvInt("MUSTER_ATTEMPT");
  auto common = [c = c.get()](CLI::App* sub, bool identity) {
    AddServerOptions(sub, c->server);
    sub->add_option("--as", c->act_as, "Act for this user (admins only; recorded in the audit log)");
    if (!identity) return;
    sub->add_option("--job", c->job, "Job id (default $MUSTER_JOB_ID)");
    sub->add_option("--attempt", c->attempt, "Attempt (default $MUSTER_ATTEMPT)");
  };
  c->progress =
      app.add_subcommand("progress", "Report a running job's progress (exits 3 when it should checkpoint and exit)");
  common(c->progress, true);
  c->progress->add_option("--step", c->step, "The training step")->check(CLI::NonNegativeNumber);
  c->progress->add_option("--metric", c->metrics, "name=value, repeatable");
  c->progress->add_option("--message", c->message, "A short status line");

  CLI::App* checkpoint = app.add_subcommand("checkpoint", "Commit or list a job's checkpoints");
  checkpoint->require_subcommand(1);
  c->commit =
      checkpoint->add_subcommand("commit", "Write DIR's manifest and register it as the job's newest checkpoint");
  common(c->commit, true);
  c->commit->add_option("dir", c->dir, "The checkpoint directory, below the job's checkpoint.dir")->required();
  c->commit->add_option("--step", c->step, "The training step it holds")->required()->check(CLI::NonNegativeNumber);
  c->list = checkpoint->add_subcommand("list", "List a job's checkpoints (every state)");
  common(c->list, false);
  c->list->add_option("job", c->job, "Job id")->required();
  return c;
}

int RunReportCommands(ReportCommands& c) {
  if (!c.progress->parsed() && !c.commit->parsed() && !c.list->parsed()) return -1;
  Client client(c.server, c.act_as, RetrySeconds());
  if (c.progress->parsed()) return Progress(c, client);
  if (c.commit->parsed()) return Commit(c, client);
  return List(c, client);
}

}  // namespace muster::cli
