#include "cli/registry_commands.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/client.h"
#include "cli/table.h"

namespace muster::cli {

using nlohmann::json;

struct RegistryCommands {
  std::string server, act_as, output;
  CLI::App *login = nullptr, *list = nullptr, *logout = nullptr;
  std::string registry, username, queue, user;
};

namespace {

std::string Str(const json& j, const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; }

// The answer's body, or nullopt after saying what went wrong.
std::optional<json> Call(const char* what, StatusOr<Response> r) {
  if (!r.ok()) {
    std::cerr << "muster registry " << what << ": " << r.status().message() << "\n";
    return std::nullopt;
  }
  if (r->status != 200) {
    std::cerr << "muster registry " << what << ": " << Client::ErrorOf(*r).message() << "\n";
    return std::nullopt;
  }
  return r->body;
}

int Login(RegistryCommands& c, Client& client) {
  std::string password;
  std::getline(std::cin, password);
  while (!password.empty() && (password.back() == '\r' || password.back() == '\n')) password.pop_back();
  if (password.empty()) {
    std::cerr << "muster registry login: no password on stdin (give it as the first line: "
                 "`muster registry login REGISTRY --username U < file`)\n";
    return 2;
  }
  json body = {{"registry", c.registry}, {"username", c.username}, {"password", password}};
  if (!c.queue.empty()) body["queue"] = c.queue;
  if (!c.user.empty()) body["user"] = c.user;
  auto j = Call("login", client.Post("/v1/registry-credentials", body.dump(), "application/json"));
  if (!j) return 1;
  const std::string owner = Str(*j, "scope") == "queue" ? "queue " + Str(*j, "queue") : "user " + Str(*j, "user");
  std::cout << "saved the login for " << Str(*j, "registry") << " as " << Str(*j, "username") << ", for the jobs of "
            << owner << "\n";
  return 0;
}

int List(RegistryCommands& c, Client& client) {
  auto j = Call("list", client.Get("/v1/registry-credentials"));
  if (!j) return 1;
  if (c.output == "json") {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"REGISTRY", "USERNAME", "FOR", "CREATED", "BY"}};
  for (const json& e : (*j)["items"]) {
    const std::string owner = Str(e, "scope") == "queue" ? "queue/" + Str(e, "queue") : "user/" + Str(e, "user");
    rows.push_back({Str(e, "registry"), Str(e, "username"), owner, Str(e, "created"), Str(e, "createdBy")});
  }
  PrintTable(rows);
  return 0;
}

int Logout(RegistryCommands& c, Client& client) {
  std::string path = "/v1/registry-credentials?registry=" + UrlEncode(c.registry);
  if (!c.queue.empty()) path += "&queue=" + UrlEncode(c.queue);
  if (!c.user.empty()) path += "&user=" + UrlEncode(c.user);
  if (!Call("logout", client.Delete(path))) return 1;
  std::cout << "removed the login for " << c.registry << "\n";
  return 0;
}

}  // namespace

std::shared_ptr<RegistryCommands> AddRegistryCommands(CLI::App& app) {
  auto c = std::make_shared<RegistryCommands>();
  c->server = DefaultServer();
  auto common = [c = c.get()](CLI::App* sub) {
    AddServerOptions(sub, c->server);
    sub->add_option("--as", c->act_as, "Act for this user (admins only; recorded in the audit log)");
  };
  CLI::App* registry = app.add_subcommand("registry", "Logins to image registries, for container jobs' pulls");
  registry->require_subcommand(1);
  c->login = registry->add_subcommand("login", "Save a registry login (the password from stdin) for your jobs, "
                                               "or (admins) a queue's or a user's");
  common(c->login);
  c->login->add_option("registry", c->registry, "The registry host, e.g. nvcr.io")->required();
  c->login->add_option("--username,-u", c->username, "The registry's user name (NGC: $oauthtoken)")->required();
  c->login->add_option("--queue", c->queue, "For every job in this queue (admins)");
  c->login->add_option("--user", c->user, "For this user's jobs (admins; default: yours)");
  c->list = registry->add_subcommand("list", "List your registry logins (admins: every one); passwords never show");
  common(c->list);
  c->list->add_option("-o,--output", c->output, "json");
  c->logout = registry->add_subcommand("logout", "Remove a registry login");
  common(c->logout);
  c->logout->add_option("registry", c->registry, "The registry host")->required();
  c->logout->add_option("--queue", c->queue, "The queue's (admins)");
  c->logout->add_option("--user", c->user, "This user's (admins; default: yours)");
  return c;
}

int RunRegistryCommands(RegistryCommands& c) {
  if (!c.login->parsed() && !c.list->parsed() && !c.logout->parsed()) return -1;
  double retry_for = 10.0;
  if (const char* env = std::getenv("MUSTER_RETRY_SECONDS"); env && *env) retry_for = std::atof(env);
  Client client(c.server, c.act_as, retry_for);
  if (c.login->parsed()) return Login(c, client);
  if (c.list->parsed()) return List(c, client);
  return Logout(c, client);
}

}  // namespace muster::cli
