#include "cli/reservation_commands.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/table.h"

namespace muster::cli {

using nlohmann::json;

struct ReservationCommands {
  std::string server, act_as, output;
  CLI::App *create = nullptr, *list = nullptr, *remove = nullptr;
  std::string name, start, end, duration;
  std::vector<std::string> nodes, users, queues, flags;
};

namespace {

std::string Joined(const json& list) {
  std::string out;
  for (const json& x : list) out += (out.empty() ? "" : ",") + x.get<std::string>();
  return out;
}

// The answer's body, or nullopt after saying what went wrong.
std::optional<json> Call(const char* command, StatusOr<Response> r, int want) {
  if (r.ok() && r->status == want) return r->body;
  std::cerr << "muster reservation " << command << ": "
            << (r.ok() ? Client::ErrorOf(*r).message() : r.status().message()) << "\n";
  return std::nullopt;
}

int Create(ReservationCommands& c, Client& client) {
  json body = {{"name", c.name}};
  body["nodes"] = c.nodes.size() == 1 && c.nodes[0] == "ALL" ? json("ALL") : json(c.nodes);
  if (!c.flags.empty()) body["flags"] = c.flags;
  if (!c.start.empty()) body["start"] = c.start;
  if (!c.end.empty()) body["end"] = c.end;
  if (!c.duration.empty()) body["duration"] = c.duration;
  if (!c.users.empty()) body["users"] = c.users;
  if (!c.queues.empty()) body["queues"] = c.queues;
  auto r = Call("create", client.Post("/v1/reservations", body.dump(), "application/json"), 201);
  if (!r) return 1;
  std::cout << "reservation " << StringField(*r, "name") << ": " << Joined((*r)["nodes"]) << " from "
            << StringField(*r, "start") << " to " << StringField(*r, "end") << "\n";
  return 0;
}

int List(ReservationCommands& c, Client& client) {
  auto r = Call("list", client.Get("/v1/reservations"), 200);
  if (!r) return 1;
  if (c.output == "json") {
    std::cout << r->dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "NODES", "START", "END", "USERS", "QUEUES", "FLAGS"}};
  for (const json& e : (*r)["items"]) {
    const std::string flags = Joined(e.value("flags", json::array()));
    rows.push_back({StringField(e, "name"), Joined(e["nodes"]), StringField(e, "start"), StringField(e, "end"),
                    Joined(e["users"]), Joined(e["queues"]), flags.empty() ? "-" : flags});
  }
  PrintTable(rows);
  return 0;
}

int Delete(ReservationCommands& c, Client& client) {
  if (!Call("delete", client.Delete("/v1/reservations/" + UrlEncode(c.name)), 200)) return 1;
  std::cout << "reservation " << c.name << " deleted\n";
  return 0;
}

}  // namespace

std::shared_ptr<ReservationCommands> AddReservationCommands(CLI::App& app) {
  auto c = std::make_shared<ReservationCommands>();
  c->server = DefaultServer();
  auto common = [c = c.get()](CLI::App* sub) {
    AddServerOptions(sub, c->server);
    sub->add_option("--as", c->act_as, "Act for this user (admins only; recorded in the audit log)");
  };
  CLI::App* top = app.add_subcommand("reservation", "Nodes reserved for a time window and named users or queues");
  top->require_subcommand(1);
  c->create = top->add_subcommand("create", "Reserve nodes for a window (admins); jobs name it to run there");
  common(c->create);
  c->create->add_option("name", c->name, "The reservation's name")->required();
  c->create->add_option("--nodes", c->nodes, "The nodes, comma-separated, or ALL")->delimiter(',')->required();
  c->create->add_option("--start", c->start, "When it opens: RFC 3339, or now (the default)");
  c->create->add_option("--end", c->end, "When it closes: RFC 3339");
  c->create->add_option("--duration", c->duration, "Or how long it lasts (12h, 1-00:00:00)");
  c->create->add_option("--users", c->users, "Users whose jobs may use it, comma-separated")->delimiter(',');
  c->create->add_option("--queues", c->queues, "Queues whose jobs may use it, comma-separated")->delimiter(',');
  c->create
      ->add_option("--flags", c->flags,
                   "IGNORE_JOBS (running jobs may run into the window), OVERLAP or MAINT (its nodes may be in "
                   "other reservations too), comma-separated")
      ->delimiter(',');
  c->list = top->add_subcommand("list", "Every reservation, by start");
  common(c->list);
  c->list->add_option("-o,--output", c->output, "json");
  c->remove = top->add_subcommand("delete", "Delete a reservation (admins); its waiting jobs then wait, saying so");
  common(c->remove);
  c->remove->add_option("name", c->name, "The reservation's name")->required();
  return c;
}

int RunReservationCommands(ReservationCommands& c) {
  if (!c.create->parsed() && !c.list->parsed() && !c.remove->parsed()) return -1;
  Client client(c.server, c.act_as, RetrySeconds());
  if (c.create->parsed()) return Create(c, client);
  if (c.list->parsed()) return List(c, client);
  return Delete(c, client);
}

}  // namespace muster::cli
