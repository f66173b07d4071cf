#include "cli/image_commands.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/client.h"
#include "cli/table.h"
#include "common/quantity.h"

namespace muster::cli {

using nlohmann::json;

struct ImageCommands {
  std::string server, act_as, output;
  CLI::App *login = nullptr, *list = nullptr, *logout = nullptr, *pull = nullptr, *images = nullptr;
  std::string registry, username, queue, user;
  std::string image, wait;
  std::vector<std::string> nodes;
};

namespace {

// The answer's body, or nullopt after saying what went wrong, as `command`
// ("registry login").
std::optional<json> Call(const char* command, StatusOr<Response> r) {
  if (r.ok() && r->status == 200) return r->body;
  std::cerr << "muster " << command << ": " << (r.ok() ? Client::ErrorOf(*r).message() : r.status().message()) << "\n";
  return std::nullopt;
}

int Login(ImageCommands& c, Client& client) {
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
  auto j = Call("registry login", client.Post("/v1/registry-credentials", body.dump(), "application/json"));
  if (!j) return 1;
  const std::string owner =
      StringField(*j, "scope") == "queue" ? "queue " + StringField(*j, "queue") : "user " + StringField(*j, "user");
  std::cout << "saved the login for " << StringField(*j, "registry") << " as " << StringField(*j, "username")
            << ", for the jobs of " << owner << "\n";
  return 0;
}

int List(ImageCommands& c, Client& client) {
  auto j = Call("registry list", client.Get("/v1/registry-credentials"));
  if (!j) return 1;
  if (c.output == "json") {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"REGISTRY", "USERNAME", "FOR", "CREATED", "BY"}};
  for (const json& e : (*j)["items"]) {
    const std::string owner =
        StringField(e, "scope") == "queue" ? "queue/" + StringField(e, "queue") : "user/" + StringField(e, "user");
    rows.push_back({StringField(e, "registry"), StringField(e, "username"), owner, StringField(e, "created"),
                    StringField(e, "createdBy")});
  }
  PrintTable(rows);
  return 0;
}

int Logout(ImageCommands& c, Client& client) {
  std::string path = "/v1/registry-credentials?registry=" + UrlEncode(c.registry);
  if (!c.queue.empty()) path += "&queue=" + UrlEncode(c.queue);
  if (!c.user.empty()) path += "&user=" + UrlEncode(c.user);
  if (!Call("registry logout", client.Delete(path))) return 1;
  std::cout << "removed the login for " << c.registry << "\n";
  return 0;
}

// The pulls of `image` on `nodes` (every node's, when empty).
std::vector<json> PullsOf(const json& list, const std::string& image, const std::vector<std::string>& nodes) {
  std::vector<json> out;
  for (const json& p : list["items"]) {
    if (StringField(p, "image") != image) continue;
    if (!nodes.empty() && std::find(nodes.begin(), nodes.end(), StringField(p, "node")) == nodes.end()) continue;
    out.push_back(p);
  }
  return out;
}

void PrintPulls(const std::vector<json>& pulls) {
  std::vector<std::vector<std::string>> rows = {{"NODE", "IMAGE", "STATE", "SECONDS", "ASKED BY", "MESSAGE"}};
  for (const json& p : pulls) {
    char secs[32] = "";
    if (p.contains("seconds") && p["seconds"].is_number())
      std::snprintf(secs, sizeof secs, "%.1f", p["seconds"].get<double>());
    rows.push_back({StringField(p, "node"), StringField(p, "image"), StringField(p, "state"), secs,
                    StringField(p, "requestedBy"), StringField(p, "message")});
  }
  PrintTable(rows);
}

int Pull(ImageCommands& c, Client& client) {
  json body = {{"image", c.image}};
  if (!c.nodes.empty()) body["nodes"] = c.nodes;
  auto asked = Call("image pull", client.Post("/v1/images/pull", body.dump(), "application/json"));
  if (!asked) return 1;
  const std::vector<std::string> nodes = (*asked)["nodes"].get<std::vector<std::string>>();
  std::cerr << "asked " << nodes.size() << " node(s) to pull " << c.image << "\n";
  if (c.wait.empty()) return 0;
  auto limit = ParseDuration(c.wait);
  if (!limit.ok()) {
    std::cerr << "muster image pull: --wait: " << limit.status().message() << "\n";
    return 2;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit->millis());
  std::vector<json> pulls;
  while (true) {
    auto list = Call("image pull", client.Get("/v1/images"));
    if (!list) return 1;
    pulls = PullsOf(*list, c.image, nodes);
    const bool done = std::all_of(pulls.begin(), pulls.end(), [](const json& p) {
      return StringField(p, "state") == "pulled" || StringField(p, "state") == "failed";
    });
    if (done || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  PrintPulls(pulls);
  const bool all_pulled =
      std::all_of(pulls.begin(), pulls.end(), [](const json& p) { return StringField(p, "state") == "pulled"; });
  return all_pulled ? 0 : 1;
}

int Images(ImageCommands& c, Client& client) {
  auto list = Call("image list", client.Get("/v1/images"));
  if (!list) return 1;
  if (c.output == "json") {
    std::cout << list->dump(2) << "\n";
    return 0;
  }
  PrintPulls(PullsOf(*list, "", {}));
  return 0;
}

}  // namespace

std::shared_ptr<ImageCommands> AddImageCommands(CLI::App& app) {
  auto c = std::make_shared<ImageCommands>();
  c->server = DefaultServer();
  auto common = [c = c.get()](CLI::App* sub) {
    AddServerOptions(sub, c->server);
    sub->add_option("--as", c->act_as, "Act for this user (admins only; recorded in the audit log)");
  };
  CLI::App* registry = app.add_subcommand("registry", "Logins to image registries, for container jobs' pulls");
  registry->require_subcommand(1);
  c->login = registry->add_subcommand("login",
                                      "Save a registry login (the password from stdin) for your jobs, "
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
  CLI::App* image = app.add_subcommand("image", "Container images on the nodes: pre-pulls");
  image->require_subcommand(1);
  c->pull = image->add_subcommand("pull", "Have nodes pull an image now, ahead of its jobs (admins)");
  common(c->pull);
  c->pull->add_option("image", c->image, "The image, e.g. nvcr.io/nvidia/pytorch:24.05-py3")->required();
  c->pull->add_option("--nodes", c->nodes, "These nodes (default: every node with an agent)")->delimiter(',');
  c->pull->add_option("--wait", c->wait, "Wait up to this long (10m, 90s) and print each node's outcome");
  c->images = image->add_subcommand("list", "Every pull asked of the nodes, with its outcome");
  common(c->images);
  c->images->add_option("-o,--output", c->output, "json");
  return c;
}

int RunImageCommands(ImageCommands& c) {
  if (!c.login->parsed() && !c.list->parsed() && !c.logout->parsed() && !c.pull->parsed() && !c.images->parsed()) {
    return -1;
  }
  Client client(c.server, c.act_as, RetrySeconds());
  if (c.login->parsed()) return Login(c, client);
  if (c.list->parsed()) return List(c, client);
  if (c.pull->parsed()) return Pull(c, client);
  if (c.images->parsed()) return Images(c, client);
  return Logout(c, client);
}

}  // namespace muster::cli
