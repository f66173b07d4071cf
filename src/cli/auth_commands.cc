#include "cli/auth_commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "auth/client_credential.h"
#include "auth/token.h"
#include "cli/client.h"
#include "cli/table.h"
#include "common/clock.h"
#include "common/quantity.h"
#include "store/open_store.h"

namespace muster::cli {

using nlohmann::json;

struct AuthCommands {
  std::string server, act_as, output;
  CLI::App *whoami = nullptr, *create = nullptr, *list = nullptr, *revoke = nullptr, *audit = nullptr, *login = nullptr;
  OfflineToken token;
  std::string store;
  std::vector<std::string> ids;
  std::string actor, object, login_token;
  int limit = 100;
};

namespace {

// Runs a request; on an error answer prints it and returns nullopt.
std::optional<json> Call(const char* what, StatusOr<Response> r, int ok_status = 200) {
  if (!r.ok()) {
    std::cerr << "muster " << what << ": " << r.status().message() << "\n";
    return std::nullopt;
  }
  if (r->status != ok_status) {
    std::cerr << "muster " << what << ": " << Client::ErrorOf(*r).message() << "\n";
    return std::nullopt;
  }
  return r->body;
}

int WhoAmI(AuthCommands& c, Client& client) {
  auto j = Call("whoami", client.Get("/v1/whoami"));
  if (!j) return 1;
  if (c.output == "json") {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  std::string roles;
  for (const json& r : j->value("roles", json::array())) roles += (roles.empty() ? "" : ", ") + r.get<std::string>();
  std::cout << StringField(*j, "user") << " (via " << StringField(*j, "via") << (roles.empty() ? "" : "; " + roles)
            << ")\n";
  return 0;
}

int Create(AuthCommands& c, Client& client) {
  if (!c.store.empty()) {
    auto t = CreateTokenInStore(c.store, c.token);
    if (!t.ok()) {
      std::cerr << "muster token create: " << t.status().message() << "\n";
      return 1;
    }
    std::cout << *t << "\n";
    return 0;
  }
  json body = json::object();
  if (!c.token.user.empty()) body["user"] = c.token.user;
  if (!c.token.node.empty()) body["node"] = c.token.node;
  if (!c.token.expires.empty()) body["expiresIn"] = c.token.expires;
  if (!c.token.description.empty()) body["description"] = c.token.description;
  auto j = Call("token create", client.Post("/v1/tokens", body.dump(), "application/json"), 201);
  if (!j) return 1;
  if (c.output == "json") {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  // The token alone on stdout (for `> file`); what it is on stderr.
  std::cerr << "token " << StringField(*j, "id") << " for "
            << (j->contains("node") ? "node " + StringField(*j, "node") : StringField(*j, "user"))
            << (j->contains("expires") ? ", expires " + StringField(*j, "expires") : ", never expires")
            << " (shown once; the server keeps only its digest)\n";
  std::cout << StringField(*j, "token") << "\n";
  return 0;
}

int List(AuthCommands& c, Client& client) {
  auto j = Call("token list", client.Get("/v1/tokens"));
  if (!j) return 1;
  if (c.output == "json") {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"ID", "FOR", "CREATED", "EXPIRES", "REVOKED", "DESCRIPTION"}};
  for (const json& t : (*j)["items"]) {
    rows.push_back({StringField(t, "id"),
                    t.contains("node") ? "node/" + StringField(t, "node") : StringField(t, "user"),
                    StringField(t, "created"), t.contains("expires") ? StringField(t, "expires") : "never",
                    StringField(t, "revoked"), StringField(t, "description")});
  }
  PrintTable(rows);
  return 0;
}

int Revoke(AuthCommands& c, Client& client) {
  int rc = 0;
  for (const std::string& id : c.ids) {
    auto j = Call("token revoke", client.Delete("/v1/tokens/" + id));
    if (!j) {
      rc = 1;
      continue;
    }
    std::cout << "token " << id << " revoked\n";
  }
  return rc;
}

int Audit(AuthCommands& c, Client& client) {
  std::string path = "/v1/audit?limit=" + std::to_string(c.limit);
  if (!c.actor.empty()) path += "&actor=" + c.actor;
  if (!c.object.empty()) path += "&object=" + c.object;
  auto j = Call("audit", client.Get(path));
  if (!j) return 1;
  if (c.output == "json") {
    std::cout << j->dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"TIME", "ACTOR", "VIA", "FROM", "ACTION", "OBJECT", "OUTCOME"}};
  for (const json& a : (*j)["items"]) {
    std::string actor = StringField(a, "actor");
    if (a.contains("asUser")) actor += " as " + StringField(a, "asUser");
    rows.push_back({StringField(a, "time"), actor, StringField(a, "via"), StringField(a, "remote"),
                    StringField(a, "action"), StringField(a, "object"),
                    StringField(a, "outcome") + (a.contains("detail") ? ": " + StringField(a, "detail") : "")});
  }
  PrintTable(rows);
  return 0;
}

int Login(AuthCommands& c) {
  std::string token = c.login_token;
  if (token.empty() && !std::getline(std::cin, token)) {
    std::cerr << "muster login: give --token or the token on stdin\n";
    return 2;
  }
  if (!auth::ParseToken(token).ok()) {
    std::cerr << "muster login: that is not a Muster token (mst_...)\n";
    return 2;
  }
  const std::string path = auth::DefaultCredentialSources().token_file;
  if (path.empty()) {
    std::cerr << "muster login: no HOME or XDG_CONFIG_HOME to keep the token under\n";
    return 1;
  }
  if (Status s = SaveToken(path, c.server, token); !s.ok()) {
    std::cerr << "muster login: " << s.message() << "\n";
    return 1;
  }
  std::cout << "saved in " << path << " for " << c.server << "\n";
  return 0;
}

}  // namespace

StatusOr<std::string> CreateTokenInStore(const std::string& store_url, const OfflineToken& t) {
  if (t.user.empty() == t.node.empty()) return InvalidArgument("give --user or --node (one of them)", "token");
  int64_t lifetime_ms = 0;
  const std::string expires = !t.expires.empty() ? t.expires : t.node.empty() ? "30d" : "365d";
  if (expires != "never") {
    auto d = ParseDuration(expires);
    if (!d.ok() || *d < Duration::Minutes(1))
      return InvalidArgument("must be a duration (30d, 12h) or never", "--expires");
    lifetime_ms = d->millis();
  }
  ASSIGN_OR_RETURN(store::OpenedStore opened, store::OpenStore(store_url));
  const auth::Token token = auth::NewToken();
  SystemClock clock;
  const int64_t now = clock.Now().millis();
  store::WriteBatch b;
  b.tokens.push_back({token.id, auth::Sha256Hex(token.secret), t.user, t.node, t.description,
                      "muster token create --store", now, lifetime_ms ? now + lifetime_ms : 0, 0});
  b.audit.push_back({0, now, "store:" + opened.description, "", "store", "local", "token.create", "token/" + token.id,
                     "ok", t.node.empty() ? "for user " + t.user : "for node " + t.node});
  RETURN_IF_ERROR(opened.store->Commit({&b}));
  return auth::FormatToken(token);
}

Status SaveToken(const std::string& path, const std::string& server, const std::string& token) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string kept;
  if (std::ifstream in(path); in) {
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string first;
      words >> first;
      if (first == server || (server.empty() && first.rfind("mst_", 0) == 0)) continue;
      kept += line + "\n";
    }
  }
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return InvalidArgument("cannot write " + tmp);
  const std::string text = kept + (server.empty() ? "" : server + " ") + token + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fchmod(fd, 0600) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) return InvalidArgument("cannot write " + path);
  return Status::Ok();
}

std::shared_ptr<AuthCommands> AddAuthCommands(CLI::App& app) {
  auto c = std::make_shared<AuthCommands>();
  c->server = DefaultServer();
  auto common = [c = c.get()](CLI::App* sub) {
    AddServerOptions(sub, c->server);
    sub->add_option("--as", c->act_as, "Act for this user (admins only; recorded in the audit log)");
    sub->add_option("-o,--output", c->output, "json");
  };
  c->whoami = app.add_subcommand("whoami", "Who the server takes you for, and by which credential");
  common(c->whoami);
  CLI::App* token = app.add_subcommand("token", "Create, list and revoke bearer tokens");
  token->require_subcommand(1);
  c->create = token->add_subcommand("create", "Create a token (shown once): yours, or (admins) a user's or a node's");
  common(c->create);
  c->create->add_option("--user", c->token.user, "For this user (admins; default: yourself)");
  c->create->add_option("--node", c->token.node, "For this node's agent (admins)");
  c->create->add_option("--expires", c->token.expires,
                        "Lifetime: 30d, 12h, ... or never (admins); default 30d, a node's 365d");
  c->create->add_option("--description", c->token.description, "What it is for");
  c->create->add_option("--store", c->store, "Write it into this store directly (no server running on it)");
  c->list = token->add_subcommand("list", "List your tokens (admins: every token)");
  common(c->list);
  c->revoke = token->add_subcommand("revoke", "Revoke tokens by id");
  common(c->revoke);
  c->revoke->add_option("id", c->ids, "Token ids")->required();
  c->audit = app.add_subcommand("audit", "The audit log: who changed what, and what was refused");
  common(c->audit);
  c->audit->add_option("--actor", c->actor, "Only this actor's entries");
  c->audit->add_option("--object", c->object, "Only entries about this object (job/12, node/n1, token/ID)");
  c->audit->add_option("--limit", c->limit, "At most this many")->check(CLI::Range(1, 1000));
  c->login = app.add_subcommand("login", "Save a token in your token file, for this server");
  AddServerOptions(c->login, c->server);
  c->login->add_option("--token", c->login_token, "The token (default: read from stdin)");
  return c;
}

int RunAuthCommands(AuthCommands& c) {
  const bool any = c.whoami->parsed() || c.create->parsed() || c.list->parsed() || c.revoke->parsed() ||
                   c.audit->parsed() || c.login->parsed();
  if (!any) return -1;
  if (c.login->parsed()) return Login(c);
  if (c.create->parsed() && !c.store.empty()) {
    Client unused(c.server, "", 0);
    return Create(c, unused);
  }
  Client client(c.server, c.act_as, RetrySeconds());
  if (c.whoami->parsed()) return WhoAmI(c, client);
  if (c.create->parsed()) return Create(c, client);
  if (c.list->parsed()) return List(c, client);
  if (c.revoke->parsed()) return Revoke(c, client);
  return Audit(c, client);
}

}  // namespace muster::cli
