#include "cli/queue_commands.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/client.h"

namespace muster::cli {

using nlohmann::json;

struct QueueCommands {
  std::string server, act_as;
  CLI::App *create = nullptr, *set = nullptr, *remove = nullptr;
  std::string name;
  std::optional<std::string> limit, guarantee, parent;
  std::optional<int64_t> share;
};

StatusOr<std::map<std::string, int64_t>> ParseGpuCounts(const std::string& text, const std::string& flag) {
  std::map<std::string, int64_t> out;
  const auto count = [&](const std::string& n) -> StatusOr<int64_t> {
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument("must be a GPU count (0 to 999999999), got \"" + n + "\"", flag);
    }
    return std::stoll(n);
  };
  if (text.find('=') == std::string::npos) {
    ASSIGN_OR_RETURN(out["*"], count(text));
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("must be TYPE=COUNT items, comma-separated (H100=16,*=48), got \"" + item + "\"", flag);
    }
    const std::string type = item.substr(0, eq);
    if (out.count(type)) return InvalidArgument("names " + type + " twice", flag);
    ASSIGN_OR_RETURN(out[type], count(item.substr(eq + 1)));
    start = comma + 1;
  }
  return out;
}

namespace {

int QueueFail(const char* command, const Status& s) {
  // The server's errors carry their field in the message; this side's name it apart.
  const bool named = s.field().empty() || s.message().rfind(s.field(), 0) == 0;
  std::cerr << "muster queue " << command << ": " << (named ? "" : s.field() + ": ") << s.message() << "\n";
  return 1;
}

// The flags given, over `body` (a queue's definition).
Status ApplyQueueFlags(const QueueCommands& c, json& body) {
  const auto counts = [&](const std::optional<std::string>& v, const char* key, const char* flag) -> Status {
    if (!v) return Status::Ok();
    if (*v == "none") {
      body.erase(key);
      return Status::Ok();
    }
    ASSIGN_OR_RETURN(auto parsed, ParseGpuCounts(*v, flag));
    body[key] = parsed;
    return Status::Ok();
  };
  RETURN_IF_ERROR(counts(c.limit, "limit", "--limit"));
  RETURN_IF_ERROR(counts(c.guarantee, "guarantee", "--guarantee"));
  if (c.parent) {
    if (*c.parent == "none") {
      body.erase("parent");
    } else {
      body["parent"] = *c.parent;
    }
  }
  if (c.share) body["share"] = *c.share;
  return Status::Ok();
}

void PrintQueue(const json& q) {
  std::cout << "queue " << StringField(q, "name");
  for (const char* key : {"parent", "guarantee", "limit", "share"}) {
    if (q.contains(key)) std::cout << " " << key << "=" << q[key].dump();
  }
  std::cout << "\n";
}

int CreateQueue(QueueCommands& c, Client& client) {
  json body = {{"name", c.name}};
  if (Status s = ApplyQueueFlags(c, body); !s.ok()) return QueueFail("create", s);
  auto r = client.Post("/v1/queues", body.dump(), "application/json");
  if (!r.ok()) return QueueFail("create", r.status());
  if (r->status != 201) return QueueFail("create", Client::ErrorOf(*r));
  PrintQueue(r->body);
  return 0;
}

int SetQueue(QueueCommands& c, Client& client) {
  auto list = client.Get("/v1/queues");
  if (!list.ok()) return QueueFail("set", list.status());
  if (list->status != 200) return QueueFail("set", Client::ErrorOf(*list));
  json body;
  for (const json& q : list->body["items"]) {
    // A queue of the file: the server refuses the PUT, naming its file.
    if (StringField(q, "name") != c.name || q.value("source", "").empty()) continue;
    body = json::object();
    for (const char* key : {"parent", "guarantee", "limit", "share"}) {
      if (q.contains(key)) body[key] = q[key];
    }
  }
  if (body.is_null()) {
    return QueueFail("set", NotFound("no queue " + c.name + " made through the API (muster queue create makes one)"));
  }
  if (Status s = ApplyQueueFlags(c, body); !s.ok()) return QueueFail("set", s);
  auto r = client.Put("/v1/queues/" + UrlEncode(c.name), body.dump());
  if (!r.ok()) return QueueFail("set", r.status());
  if (r->status != 200) return QueueFail("set", Client::ErrorOf(*r));
  PrintQueue(r->body);
  return 0;
}

int DeleteQueue(QueueCommands& c, Client& client) {
  auto r = client.Delete("/v1/queues/" + UrlEncode(c.name));
  if (!r.ok()) return QueueFail("delete", r.status());
  if (r->status != 200) return QueueFail("delete", Client::ErrorOf(*r));
  std::cout << "queue " << c.name << " deleted\n";
  return 0;
}

}  // namespace

std::shared_ptr<QueueCommands> AddQueueCommands(CLI::App& app) {
  auto c = std::make_shared<QueueCommands>();
  c->server = DefaultServer();
  auto common = [c = c.get()](CLI::App* sub, bool flags) {
    AddServerOptions(sub, c->server);
    sub->add_option("--as", c->act_as, "Act for this user (admins only; recorded in the audit log)");
    sub->add_option("name", c->name, "The queue's name")->required();
    if (!flags) return;
    sub->add_option("--limit", c->limit, "The most GPUs its jobs may hold: 32, or H100=16,*=48 (none: no limit)");
    sub->add_option("--guarantee", c->guarantee,
                    "GPUs it may reclaim from borrowers: 16, or H100=8 (none: no guarantee)");
    sub->add_option("--share", c->share, "Its fair-share share (default 1)")->check(CLI::Range(1, 1'000'000));
    sub->add_option("--parent", c->parent, "The queue it is nested under (none: at the top)");
  };
  CLI::App* top = app.add_subcommand("queue", "Queues made through the API (admins); muster get queues lists them all");
  top->require_subcommand(1);
  c->create = top->add_subcommand("create", "Make a queue with a quota and share, in force at the next cycle");
  common(c->create, true);
  c->set = top->add_subcommand("set", "Change a queue made through the API; only the flags given change");
  common(c->set, true);
  c->remove = top->add_subcommand("delete", "Delete a queue made through the API; its jobs stay, with no quota");
  common(c->remove, false);
  return c;
}

int RunQueueCommands(QueueCommands& c) {
  if (!c.create->parsed() && !c.set->parsed() && !c.remove->parsed()) return -1;
  Client client(c.server, c.act_as, RetrySeconds());
  if (c.create->parsed()) return CreateQueue(c, client);
  if (c.set->parsed()) return SetQueue(c, client);
  return DeleteQueue(c, client);
}

}  // namespace muster::cli
