#include "cli/interactive_command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "auth/token.h"
#include "cli/client.h"
#include "core/job.h"
#include "shell/shell_relay.h"
#include "shell/shell_session.h"

namespace muster::cli {
namespace {

using nlohmann::json;

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

void Cancel(Client& client, const std::string& id) {
  auto r = client.Post("/v1/jobs/" + id + "/cancel", "{}", "application/json");
  if (r.ok() && r->status / 100 == 2) std::cerr << "muster: job " << id << " cancelled\n";
}

std::string EnvOr(const char* name, const std::string& otherwise) {
  const char* v = std::getenv(name);
  return v && *v ? v : otherwise;
}

// The job's name: its command's file name ("python" for
// /usr/bin/python), or "shell" where that is not a valid job name.
std::string NameOf(const std::vector<std::string>& command) {
  if (command.empty()) return "shell";
  const std::string& first = command[0];
  const std::string base = first.substr(first.find_last_of('/') == std::string::npos ? 0 : first.find_last_of('/') + 1);
  const bool valid = !base.empty() && base.size() <= 128 && std::isalnum(static_cast<unsigned char>(base[0])) &&
                     std::all_of(base.begin(), base.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
                     });
  return valid ? base : "shell";
}

}  // namespace

int RunInteractive(Client& client, json spec, const std::vector<std::string>& command) {
  if (spec.contains("image")) {
    std::cerr << "muster run: --interactive runs the shell on the node; --image is not supported with it yet\n";
    return 2;
  }
  if (spec.contains("replicas") && spec["replicas"] != 1) {
    std::cerr << "muster run: --interactive starts one replica (its terminal); --replicas must be 1\n";
    return 2;
  }
  const std::string key = auth::RandomHex(32);
  if (!spec.contains("priority")) spec["priority"] = "interactive";
  if (!spec.contains("name")) spec["name"] = NameOf(command);
  if (!spec.contains("retry")) spec["retry"] = {{"limit", 0}};  // a terminal is not started again
  spec["secretEnv"]["MUSTER_SHELL_KEY"] = key;
  // The node's muster (MUSTER_BIN, set by its agent) relays the terminal;
  // the user's command follows as arguments, untouched by any shell.
  json argv = {"/bin/sh", "-c", "exec \"${MUSTER_BIN:-muster}\" shell-serve -- \"$@\"", "muster-shell"};
  for (const std::string& a : command) argv.push_back(a);
  spec["command"] = argv;

  auto r = client.Post("/v1/jobs", spec.dump(), "application/json", {{"Idempotency-Key", NewUuid()}});
  if (!r.ok()) {
    std::cerr << "muster: " << r.status().message() << "\n";
    return 1;
  }
  if (r->status != 200 && r->status != 201) {
    std::cerr << "muster: " << Client::ErrorOf(*r).message() << "\n";
    return 1;
  }
  const std::string id = std::to_string(r->body.value("id", int64_t{0}));

  // Wait for its relay; ^C cancels.
  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_handler = OnInterrupt;
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  const auto began = std::chrono::steady_clock::now();
  bool said = false;
  std::string endpoint;
  while (endpoint.empty()) {
    if (g_interrupted) {
      Cancel(client, id);
      return 130;
    }
    auto j = client.Get("/v1/jobs/" + id);
    if (!j.ok() || j->status != 200) {
      std::cerr << "muster: job " << id << ": " << (j.ok() ? Client::ErrorOf(*j).message() : j.status().message())
                << "\n";
      Cancel(client, id);
      return 1;
    }
    const std::string state = j->body.value("state", "");
    if (core::IsTerminalName(state)) {
      std::cerr << "muster: job " << id << " ended " << state
                << " before its terminal opened: " << j->body.value("reason", "") << " (muster logs " << id << ")\n";
      return 1;
    }
    const json progress = j->body.value("progress", json::object());
    if (progress.is_object() && progress.contains("endpoints") && progress["endpoints"].is_object()) {
      endpoint = progress["endpoints"].value("shell", "");
    }
    if (endpoint.empty() && !said && std::chrono::steady_clock::now() - began > std::chrono::seconds(1)) {
      said = true;
      std::cerr << "muster: job " << id << " is " << state
                << (j->body.value("reason", "").empty() ? "" : ": " + j->body.value("reason", "")) << "\n";
    }
    // Asked often at first, when an idle or best-effort cluster starts it
    // within milliseconds; less once it waits.
    if (endpoint.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(said ? 100 : 10));
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);

  shell::SessionOptions so;
  so.endpoint = endpoint;
  so.key_hex = key;
  so.job = std::stoll(id);
  auto code = shell::RunSession(so);
  if (!code.ok()) {
    std::cerr << "\r\nmuster: job " << id << ": " << code.status().message() << "\n";
    Cancel(client, id);
    return 1;
  }
  return *code;
}

int RunShellServe(const std::vector<std::string>& command) {
  shell::RelayOptions o;
  o.job = std::atoll(EnvOr("MUSTER_JOB_ID", "0").c_str());
  const int64_t attempt = std::atoll(EnvOr("MUSTER_ATTEMPT", "0").c_str());
  o.key_hex = EnvOr("MUSTER_SHELL_KEY", "");
  o.advertise_host = EnvOr("MASTER_ADDR", "127.0.0.1");
  o.argv = command;
  if (o.job <= 0 || attempt <= 0 || o.key_hex.empty()) {
    std::cerr << "muster shell-serve: runs inside a job started by muster run --interactive (MUSTER_JOB_ID, "
                 "MUSTER_ATTEMPT and MUSTER_SHELL_KEY are not all set)\n";
    return 2;
  }
  // The key is the relay's alone: the command on the terminal does not see it.
  ::unsetenv("MUSTER_SHELL_KEY");
  Client client(DefaultServer(), "", RetrySeconds());
  o.announce = [&](const std::string& endpoint) -> Status {
    const json body = {{"attempt", attempt},
                       {"replica", 0},
                       {"endpoints", {{"shell", endpoint}}},
                       {"message", "terminal waiting for its user"}};
    auto r = client.Post("/v1/jobs/" + std::to_string(o.job) + "/progress", body.dump(), "application/json");
    if (!r.ok()) return r.status();
    if (r->status != 200) return Client::ErrorOf(*r);
    return Status::Ok();
  };
  return shell::RunRelay(o);
}

}  // namespace muster::cli
