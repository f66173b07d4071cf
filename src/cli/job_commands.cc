#include "cli/job_commands.h"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "cli/interactive_command.h"
#include "cli/job_commands_state.h"
#include "cli/job_ids.h"
#include "cli/job_spec_flags.h"
#include "cli/job_summary_reader.h"
#include "cli/json_template.h"
#include "cli/print_json.h"
#include "cli/table.h"
#include "common/quantity.h"
#include "core/job.h"

namespace muster::cli {

using nlohmann::json;

namespace {

// A count that may be 0 (CLI::NonNegativeNumber's message names DBL_MAX).
const CLI::Validator kZeroOrMore(
    [](std::string& v) -> std::string { return !v.empty() && v[0] != '-' ? "" : "must be 0 or more, got " + v; },
    "N >= 0");

int Fail(const Status& s) {
  std::cerr << "muster: " << s.message() << "\n";
  return 1;
}

std::string Field(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

std::string Age(const std::string& rfc3339) {
  std::tm tm{};
  if (std::sscanf(rfc3339.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec) != 6) {
    return "";
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t then = timegm(&tm);
  const int64_t s = static_cast<int64_t>(std::time(nullptr) - then);
  if (s < 120) return std::to_string(std::max<int64_t>(s, 0)) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

// A table row from a job's summary (GET /v1/jobs?view=summary).
std::vector<std::string> JobCells(const JobSummaryItem& j, bool wide) {
  std::vector<std::string> r = {
      j.id, j.name, j.user, j.queue, j.state, std::to_string(j.gpus * j.replicas), Age(j.submit_time), j.reason};
  if (wide) {
    std::string nodes;
    for (const std::string& n : j.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    r.insert(r.end(), {j.priority, std::to_string(j.replicas), nodes});
  }
  return r;
}

int CheckOutput(const std::string& o) {
  if (o == "table" || o == "wide" || o == "json" || o == "yaml") return 0;
  if (o.rfind("jsonpath=", 0) == 0 || o.rfind("custom-columns=", 0) == 0) return 0;
  std::cerr << "muster: -o must be wide, json, yaml, jsonpath=TEMPLATE or custom-columns=SPEC, got \"" << o << "\"\n";
  return 2;
}

// The continue token at the end of a page's text ({"items":[...],"continue":"N"}),
// read without parsing the page; nullopt when the text does not end so.
std::optional<std::string> ContinueToken(const std::string& page) {
  const std::string key = "\"continue\":\"";
  const size_t at = page.rfind(key);
  if (at == std::string::npos) return std::nullopt;
  const size_t start = at + key.size();
  const size_t end = page.find('"', start);
  if (end == std::string::npos || page.compare(end, std::string::npos, "\"}") != 0) return std::nullopt;
  const std::string token = page.substr(start, end - start);
  if (!std::all_of(token.begin(), token.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return std::nullopt;
  return token;
}

// Lists jobs page by page (all of them when limit is 0), handing each page's
// text to `page` with how many items it may still use (`room`); `page`
// returns how many it used. The next page is fetched (on another thread)
// while this one is read: a long list costs about the larger of the
// server's time and the reading, not their sum.
Status ForEachPage(Client& c, const std::string& query, int64_t limit,
                   const std::function<StatusOr<int64_t>(const std::string& text, int64_t room)>& page) {
  struct Page {
    StatusOr<Response> answer;
    bool last = false;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Page> pages;  // guarded by mu; at most 2 ahead
  bool stop = false;       // guarded by mu: the reader is done (an error, or the limit)
  std::thread fetcher([&] {
    int64_t asked = 0;
    std::string cont;
    while (true) {
      const int64_t want = limit > 0 ? std::min<int64_t>(1000, limit - asked) : 1000;
      std::string path = "/v1/jobs?limit=" + std::to_string(want) + query;
      if (!cont.empty()) path += "&continue=" + cont;
      Page p{c.GetText(path, {})};
      if (p.answer.ok() && p.answer->status == 200) {
        std::optional<std::string> next = ContinueToken(p.answer->text);
        if (!next)
          p.answer = Status(StatusCode::kInternal, "the server's job list does not end with a continue token");
        else
          cont = *next;
        asked += want;
      }
      p.last = !p.answer.ok() || p.answer->status != 200 || cont.empty() || (limit > 0 && asked >= limit);
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop || pages.size() < 2; });
      if (stop) return;
      const bool last = p.last;
      pages.push_back(std::move(p));
      cv.notify_all();
      if (last) return;
    }
  });
  auto finish = [&](Status s) {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    fetcher.join();
    return s;
  };
  int64_t seen = 0;
  while (true) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !pages.empty(); });
    Page p = std::move(pages.front());
    pages.pop_front();
    lock.unlock();
    cv.notify_all();
    if (!p.answer.ok()) return finish(p.answer.status());
    if (p.answer->status != 200) return finish(Client::ErrorOf(*p.answer));
    StatusOr<int64_t> used = page(p.answer->text, limit > 0 ? limit - seen : INT64_MAX);
    if (!used.ok()) return finish(used.status());
    seen += *used;
    if (p.last || (limit > 0 && seen >= limit)) return finish(Status::Ok());
  }
}

// Each listed job's whole JSON, to `each`.
Status ForEachJob(Client& c, const std::string& query, int64_t limit, const std::function<void(json&)>& each) {
  return ForEachPage(c, query, limit, [&](const std::string& text, int64_t room) -> StatusOr<int64_t> {
    json body = json::parse(text, nullptr, false);
    if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) {
      return Status(StatusCode::kInternal, "the server's job list is not JSON");
    }
    int64_t used = 0;
    for (json& j : body["items"]) {
      if (used == room) break;
      each(j);
      ++used;
    }
    return used;
  });
}

std::string Query(const JobCommands& c, const std::string& states) {
  std::string q;
  auto add = [&](const char* k, const std::string& v) {
    if (!v.empty()) q += std::string("&") + k + "=" + UrlEncode(v);
  };
  add("state", states);
  add("queue", c.filter_queue);
  add("user", c.filter_user);
  add("name", c.filter_name);
  add("labelSelector", c.selector);
  return q;
}

// -o jsonpath=TEMPLATE or -o custom-columns=SPEC over a listing's items.
int PrintTemplated(json items, const std::string& output) {
  if (output.rfind("jsonpath=", 0) == 0) {
    // As kubectl's: the template reads a list, {"items": [...]}.
    auto text = RenderJsonPath(json{{"items", std::move(items)}}, output.substr(9));
    if (!text.ok())
      return Fail(Status(StatusCode::kInvalidArgument, text.status().field() + ": " + text.status().message()));
    std::cout << *text;
    return 0;
  }
  auto rows = CustomColumns(items, output.substr(15));
  if (!rows.ok())
    return Fail(Status(StatusCode::kInvalidArgument, rows.status().field() + ": " + rows.status().message()));
  PrintTable(*rows);
  return 0;
}

// `get jobs`: a table is built row by row as pages arrive, so a long list
// never holds every job's whole JSON.
int ListJobs(JobCommands& c, Client& client, const std::string& states) {
  const std::string query = Query(c, states);
  const int64_t fetch = c.limit;
  const bool templated = c.output.rfind("jsonpath=", 0) == 0 || c.output.rfind("custom-columns=", 0) == 0;
  if (c.output == "json" || c.output == "yaml" || templated) {
    json all = json::array();
    Status s = ForEachJob(client, query, fetch, [&](json& j) { all.push_back(std::move(j)); });
    if (!s.ok()) return Fail(s);
    if (templated) return PrintTemplated(std::move(all), c.output);
    Print(all, c.output);
    return 0;
  }
  const bool wide = c.output == "wide";
  std::vector<std::vector<std::string>> rows = {{"ID", "NAME", "USER", "QUEUE", "STATE", "GPUS", "AGE", "REASON"}};
  if (wide) rows[0].insert(rows[0].end(), {"PRIORITY", "REPLICAS", "NODES"});
  // A table needs only the jobs' summaries: a sixth of the bytes, read as a stream.
  const Status s = ForEachPage(client, query + "&view=summary", fetch, [&](const std::string& text, int64_t room) {
    return ReadJobSummaryPage(text, room, [&](const JobSummaryItem& j) { rows.push_back(JobCells(j, wide)); });
  });
  if (!s.ok()) return Fail(s);
  PrintTable(rows);
  return 0;
}

// A job's summary from its whole JSON (a watch's object).
JobSummaryItem SummaryOf(const json& j) {
  JobSummaryItem s;
  s.id = Field(j, "id");
  s.name = Field(j, "name");
  s.user = Field(j, "user");
  s.queue = Field(j, "queue");
  s.priority = Field(j, "priority");
  s.state = Field(j, "state");
  s.reason = Field(j, "reason");
  s.submit_time = Field(j, "submitTime");
  const json resources = j.value("resources", json::object());
  if (resources.is_object() && resources.value("gpus", json()).is_number_integer()) s.gpus = resources["gpus"];
  if (j.value("replicas", json()).is_number_integer()) s.replicas = j["replicas"];
  if (j.value("allocations", json()).is_array()) {
    for (const json& a : j["allocations"]) {
      if (a.is_object() && a.value("node", json()).is_string()) s.nodes.push_back(a["node"]);
    }
  }
  return s;
}

// `muster get jobs --watch`, as kubectl's `get -w`: the list, then a row
// for each change of a job the filter lists (or a line of JSON a change,
// with -o json) as the server pushes it, until interrupted. A row is
// printed again only when one of its columns (but its age) changed. A
// broken watch resumes from the newest version seen; one the server no
// longer serves (a restart, or too far behind) lists again and prints the
// rows that changed meanwhile.
int WatchJobs(JobCommands& c, Client& client, const std::string& states) {
  if (c.output != "table" && c.output != "wide" && c.output != "json") {
    std::cerr << "muster: --watch prints a table, -o wide or -o json, not " << c.output << "\n";
    return 2;
  }
  const bool wide = c.output == "wide", as_json = c.output == "json";
  const std::string query = Query(c, states);
  std::vector<size_t> width;
  std::map<std::string, std::string> shown;  // job id -> its row as last printed, but its age
  // Prints a job's row (or an event's JSON) unless it is what was printed last.
  auto show = [&](std::vector<std::string> row) {
    std::string key;
    for (size_t i = 0; i < row.size(); ++i) key += (i == 6 ? std::string() : row[i]) + '\t';
    std::string& last = shown[row[0]];
    if (last == key) return;
    last = key;
    width.resize(std::max(width.size(), row.size()));
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
      line += row[i] + (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
    }
    std::cout << line << std::endl;
  };
  // Lists (every page), printing what changed; returns the list's version.
  auto list = [&](bool first) -> StatusOr<std::string> {
    std::vector<std::vector<std::string>> rows = {{"ID", "NAME", "USER", "QUEUE", "STATE", "GPUS", "AGE", "REASON"}};
    if (wide) rows[0].insert(rows[0].end(), {"PRIORITY", "REPLICAS", "NODES"});
    std::string version;
    const Status s =
        ForEachPage(client, query + "&view=summary", first ? c.limit : 0, [&](const std::string& text, int64_t room) {
          // The first page's version: {"resourceVersion":"V","items":...
          const std::string key = "{\"resourceVersion\":\"";
          if (version.empty() && text.rfind(key, 0) == 0) {
            version = text.substr(key.size(), text.find('"', key.size()) - key.size());
          }
          return ReadJobSummaryPage(text, room, [&](const JobSummaryItem& j) { rows.push_back(JobCells(j, wide)); });
        });
    if (!s.ok()) return s;
    if (version.empty()) return Status(StatusCode::kFailedPrecondition, "this server has no watch API (upgrade it)");
    if (first && !as_json) {
      for (const auto& r : rows) {
        width.resize(std::max(width.size(), r.size()));
        for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
      }
      for (auto& r : rows) show(std::move(r));
    } else if (!as_json) {
      for (size_t i = 1; i < rows.size(); ++i) show(std::move(rows[i]));
    }
    return version;
  };
  auto version = list(true);
  if (!version.ok()) return Fail(version.status());
  std::string from = *version;
  auto failing_since = std::chrono::steady_clock::now();
  while (true) {
    bool expired = false;
    auto r = client.Watch("/v1/jobs?watch=true&resourceVersion=" + UrlEncode(from) + query, [&](std::string_view text) {
      const json e = json::parse(text, nullptr, false);
      if (!e.is_object()) return true;
      const std::string type = e.value("type", "");
      if (type == "ERROR") {
        expired = true;
        return false;
      }
      if (e.value("resourceVersion", json()).is_string()) from = e["resourceVersion"];
      if (type == "BOOKMARK" || !e.value("object", json()).is_object()) return true;
      if (as_json) {
        std::cout << json{{"type", type}, {"object", e["object"]}}.dump() << std::endl;
      } else {
        show(JobCells(SummaryOf(e["object"]), wide));
      }
      failing_since = std::chrono::steady_clock::now();
      return true;
    });
    if (r.ok() && r->status == 410) expired = true;
    if (expired) {
      version = list(false);
      if (!version.ok()) return Fail(version.status());
      from = *version;
      continue;
    }
    if (r.ok() && r->status != 200) return Fail(Client::ErrorOf(*r));
    if (!r.ok()) {
      // The server is gone for now (a restart, a failover): again, for as
      // long as a command retries.
      if (std::chrono::steady_clock::now() - failing_since > std::chrono::duration<double>(RetrySeconds())) {
        return Fail(r.status());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    failing_since = std::chrono::steady_clock::now();  // ended by the server: open it again
  }
}

int Submit(JobCommands& c, Client& client) {
  auto spec = BuildSpec(c, &client);
  if (!spec.ok()) {
    Fail(spec.status());
    return spec.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  auto r = client.Post("/v1/jobs", spec->first, spec->second, {{"Idempotency-Key", NewUuid()}});
  if (!r.ok()) return Fail(r.status());
  if (r->status != 200 && r->status != 201) return Fail(Client::ErrorOf(*r));
  const std::string id = Field(r->body, "id");
  const std::string last = Field(r->body, "arrayLastId");
  const std::string ids = last.empty() ? id : id + "-" + last;
  if (c.parsable) {
    std::cout << ids << "\n";
  } else if (c.output == "json" || c.output == "yaml") {
    Print(r->body, c.output);
  } else {
    std::cout << (last.empty() ? "Submitted job " : "Submitted jobs ") << ids << "\n";
  }
  return 0;
}

// muster run --interactive: the spec from the flags, with the command
// handed to the job's shell relay (interactive_command.h).
int Run(JobCommands& c, Client& client) {
  if (!c.interactive) {
    std::cerr << "muster run: --interactive is required (a terminal in the job's allocation); batch jobs go "
                 "through muster submit\n";
    return 2;
  }
  const std::vector<std::string> command = c.command;
  c.command = {"muster-shell"};  // replaced by the relay's command line
  c.double_dash = true;          // never a batch script or a spec file
  auto spec = BuildSpec(c, nullptr);
  if (!spec.ok()) {
    Fail(spec.status());
    return 2;
  }
  return RunInteractive(client, json::parse(spec->first), command);
}

int Get(JobCommands& c, Client& client) {
  if (c.kind == "jobs" || c.kind == "job") {
    return c.watch ? WatchJobs(c, client, c.state) : ListJobs(c, client, c.state);
  }
  if (c.watch) {
    std::cerr << "muster get: --watch follows jobs only\n";
    return 2;
  }
  if (c.kind != "nodes" && c.kind != "node" && c.kind != "queues" && c.kind != "queue") {
    std::cerr << "muster get: expected jobs, nodes or queues, got \"" << c.kind << "\"\n";
    return 2;
  }
  const bool nodes = c.kind.rfind("node", 0) == 0;
  auto r = client.Get(nodes ? "/v1/nodes" : "/v1/queues");
  if (!r.ok()) return Fail(r.status());
  if (r->status != 200) return Fail(Client::ErrorOf(*r));
  const json& items = r->body["items"];
  if (c.output == "json" || c.output == "yaml") {
    Print(items, c.output);
    return 0;
  }
  if (c.output.rfind("jsonpath=", 0) == 0 || c.output.rfind("custom-columns=", 0) == 0) {
    return PrintTemplated(items, c.output);
  }
  std::vector<std::vector<std::string>> rows;
  if (nodes) {
    const bool wide = c.output == "wide";
    rows.push_back({"NAME", "GPU TYPE", "GPUS", "FREE", "JOBS", "LEAF", "STATE"});
    // Wide: the rest of the node's size and place, and what its agent found.
    if (wide) rows[0].insert(rows[0].end(), {"CPUS", "MEMORY", "SPINE", "POOL", "GPU SOURCE", "AGENT", "LAST SEEN"});
    for (const json& n : items) {
      // As kubectl: the node's condition, then whether it takes new work.
      const std::string condition = n.value("condition", "Ready");
      const bool cordoned = n.contains("cordon") || (!n.value("schedulable", true) && condition == "Ready");
      rows.push_back({Field(n, "name"), Field(n, "gpuType"), Field(n, "gpus"), Field(n, "freeGpus"),
                      Field(n, "runningJobs"), Field(n, "leaf"), condition + (cordoned ? ",SchedulingDisabled" : "")});
      if (!wide) continue;
      const json agent = n.value("agent", json::object());
      rows.back().insert(rows.back().end(),
                         {FormatCpus(n.value("cpuMilli", int64_t{0})), FormatMemory(n.value("memoryBytes", int64_t{0})),
                          Field(n, "spine"), n.contains("pool") ? Field(n, "pool") : "-",
                          agent.is_object() && agent.contains("gpuSource") ? Field(agent, "gpuSource") : "-",
                          agent.is_object() && agent.contains("agentVersion") ? Field(agent, "agentVersion") : "static",
                          n.contains("lastSeen") ? Age(Field(n, "lastSeen")) + " ago" : "-"});
    }
  } else {
    rows.push_back({"QUEUE", "PENDING", "RUNNING", "GPUS IN USE", "GUARANTEE", "LIMIT", "SOURCE"});
    // {"*": 8, "H100": 4} -> "8, H100 4"
    auto quota = [](const json& q, const char* key) {
      std::string out;
      // Held by name: items() of the temporary value() returns would dangle.
      const json by_type = q.value(key, json::object());
      for (const auto& [type, n] : by_type.items()) {
        out += (out.empty() ? "" : ", ") + (type == "*" ? "" : type + " ") + n.dump();
      }
      return out.empty() ? "-" : out;
    };
    // Wide: the GPUs in use by type ("H100 8, A100 2").
    if (c.output == "wide") rows[0].push_back("IN USE BY TYPE");
    for (const json& q : items) {
      rows.push_back({Field(q, "name"), Field(q, "pending"), Field(q, "running"), Field(q, "gpusInUse"),
                      quota(q, "guarantee"), quota(q, "limit"), q.contains("source") ? Field(q, "source") : "-"});
      if (c.output == "wide") rows.back().push_back(quota(q, "gpusInUseByType"));
    }
  }
  PrintTable(rows);
  return 0;
}

// Every item of a listing that comes in pages ({"items", "continue"}).
StatusOr<json> AllItems(Client& client, const std::string& path) {
  json items = json::array();
  std::string token;
  do {
    auto r = client.Get(path + (token.empty() ? "" : "?continue=" + token));
    if (!r.ok()) return r.status();
    if (r->status != 200) return Client::ErrorOf(*r);
    for (json& item : r->body["items"]) items.push_back(std::move(item));
    token = r->body.value("continue", "");
  } while (!token.empty());
  return items;
}

int Describe(JobCommands& c, Client& client, bool why_only) {
  auto r = client.Get("/v1/jobs/" + std::to_string(c.id));
  if (!r.ok()) return Fail(r.status());
  if (r->status != 200) return Fail(Client::ErrorOf(*r));
  json& j = r->body;
  if (c.output == "json" || c.output == "yaml") {
    // describe: the job with its events and checkpoints, as the table shows them.
    static const char* const kParts[] = {"events", "checkpoints"};
    for (const char* part : kParts) {
      if (why_only) break;
      auto more = AllItems(client, "/v1/jobs/" + std::to_string(c.id) + "/" + part);
      if (!more.ok()) return Fail(more.status());
      j[part] = std::move(*more);
    }
    Print(j, c.output);
    return 0;
  }
  const std::string state = Field(j, "state");
  if (why_only) {
    std::cout << "Job " << Field(j, "id") << " (" << Field(j, "name") << ") is " << state;
    const std::string detail = Field(j, "reasonDetail");
    if (!detail.empty()) std::cout << ": " << detail;
    std::cout << "\n";
  } else {
    auto events = AllItems(client, "/v1/jobs/" + std::to_string(c.id) + "/events");
    Print(j, "yaml");
    if (events.ok()) {
      std::cout << "Events:\n";
      for (const json& e : *events) {
        std::cout << "  " << Field(e, "time") << "  " << Field(e, "type");
        if (!Field(e, "reason").empty()) std::cout << " (" << Field(e, "reason") << ")";
        if (!Field(e, "message").empty()) std::cout << "  " << Field(e, "message");
        std::cout << "\n";
      }
    }
    auto checkpoints = client.Get("/v1/jobs/" + std::to_string(c.id) + "/checkpoints");
    if (checkpoints.ok() && checkpoints->status == 200 && !checkpoints->body["items"].empty()) {
      std::cout << "Checkpoints:\n";
      for (const json& k : checkpoints->body["items"]) {
        std::cout << "  " << Field(k, "seq") << "  step " << Field(k, "step") << "  attempt " << Field(k, "attempt")
                  << "  " << Field(k, "state") << "  " << Field(k, "location");
        if (!Field(k, "note").empty()) std::cout << "  (" << Field(k, "note") << ")";
        std::cout << "\n";
      }
    }
    return 0;
  }
  if (j.contains("priorityBreakdown")) {
    const json& p = j["priorityBreakdown"];
    std::cout << "Priority " << Field(p, "total") << " = class " << Field(p, "class") << " + age " << Field(p, "age")
              << " + fair-share " << Field(p, "fairShare") << " + size " << Field(p, "size") << "\n";
  }
  if (j.contains("plannedStart")) std::cout << "Planned start: " << Field(j, "plannedStart") << "\n";
  return 0;
}

// `muster logs ID`: the replica's output; with -f, follows it until the job
// has ended.
int Logs(JobCommands& c, Client& client) {
  const std::string base = "/v1/jobs/" + std::to_string(c.id) + "/logs?replica=" + std::to_string(c.replica) +
                           (c.attempt > 0 ? "&attempt=" + std::to_string(c.attempt) : "");
  std::string path = base + (c.tail >= 0 ? "&tail=" + std::to_string(c.tail) : "");
  std::string offset, attempt, final_state, final_reason;
  bool ended = false, said_waiting = false;
  while (true) {
    auto r = client.GetText(path, {"X-Muster-Log-Offset", "X-Muster-Log-Attempt"});
    if (!r.ok()) return Fail(r.status());
    if (r->status == 200) {
      const std::string now_attempt = r->headers["X-Muster-Log-Attempt"];
      if (!attempt.empty() && now_attempt != attempt && !offset.empty()) {
        // Following, a retry or requeue started another attempt: its log
        // from the start (the offset was into the last one's).
        std::cerr << "muster logs " << c.id << ": attempt " << now_attempt << "\n";
        attempt = now_attempt;
        offset.clear();
        path = base;
        continue;
      }
      attempt = now_attempt;
      std::cout << r->text << std::flush;
      offset = r->headers["X-Muster-Log-Offset"];
    } else if (!c.follow || r->status != 404) {
      std::cerr << "muster logs " << c.id << ": " << Client::ErrorOf(*r).message() << "\n";
      return 1;
    } else if (!said_waiting) {
      // Following a job that has not started: say why nothing comes yet.
      std::cerr << "muster logs " << c.id << ": " << Client::ErrorOf(*r).message() << "; waiting for it to start\n";
      said_waiting = true;
    }
    if (!c.follow) return 0;
    if (ended && (r->status != 200 || r->text.empty())) {
      // Followed to the end: the exit code says how the job ended.
      if (final_state == "COMPLETED") return 0;
      std::cerr << "muster logs " << c.id << ": the job ended " << final_state
                << (final_reason.empty() ? "" : ": " + final_reason) << "\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto job = client.Get("/v1/jobs/" + std::to_string(c.id));
    if (job.ok() && job->status == 200) {
      const std::string state = Field(job->body, "state");
      ended = core::IsTerminalName(state);
      final_state = state;
      final_reason = Field(job->body, "reason");
    }
    path = base + (offset.empty() ? "" : "&offset=" + offset);
  }
}

// What an action (cancel, cordon, ...) did to each job or node. With -o
// json|yaml the answers are kept and printed at the end as one list
// ({"items": [...]}, as `get`); otherwise each is a line as it comes.
struct ActedOn {
  explicit ActedOn(const std::string& output) : output(output), keep(output == "json" || output == "yaml") {}
  // Whether `answer` was kept for the list (so no line is printed for it).
  bool Keep(const json& answer) {
    if (keep) items.push_back(answer);
    return keep;
  }
  int Finish() {
    if (keep) Print(json{{"items", std::move(items)}}, output);
    return rc;
  }
  const std::string output;
  const bool keep;
  json items = json::array();
  int rc = 0;
};

// `muster cordon|uncordon|drain|reclaim|declare-lost|remove-node NODE...` (admins).
int ActOnNodes(JobCommands& c, Client& client, const std::string& verb) {
  ActedOn acted(c.output);
  std::string body;
  if (verb == "reclaim") {
    auto deadline = ParseDuration(c.deadline);
    if (!deadline.ok() || *deadline < Duration::Zero() || *deadline > Duration::Hours(1)) {
      return Fail(
          InvalidArgument("must be a duration from 0 to 1h, like 2m, got \"" + c.deadline + "\"", "--deadline"));
    }
    body = json{{"deadlineSeconds", deadline->millis() / 1000}}.dump();
  }
  for (const std::string& node : c.nodes) {
    auto r = verb == "remove-node" ? client.Delete("/v1/nodes/" + node)
                                   : client.Post("/v1/nodes/" + node + "/" + verb, body, "application/json");
    if (!r.ok()) return Fail(r.status());
    if (r->status != 200) {
      std::cerr << "muster " << verb << " " << node << ": " << Client::ErrorOf(*r).message() << "\n";
      acted.rc = 1;
      continue;
    }
    if (acted.Keep(r->body)) continue;
    // "node a1: drained by ann", "node a1: schedulable", "node a1: lost", "node a1: removed".
    const std::string cordon = Field(r->body, "cordon");
    std::cout << "node " << node << ": "
              << (verb == "remove-node"                 ? std::string("removed")
                  : verb == "declare-lost"              ? std::string("lost; its jobs are requeued")
                  : r->body.value("schedulable", false) ? std::string("schedulable")
                  : cordon.empty()                      ? std::string("cordoned")
                                                        : cordon)
              << "\n";
  }
  return acted.Finish();
}

int SignalJobs(JobCommands& c, Client& client) {
  auto ids = JobIds(c.ids);
  if (!ids.ok()) {
    Fail(ids.status());
    return 2;
  }
  json body = {{"signal", c.signal_name}};
  if (!c.signal_to.empty()) body["to"] = c.signal_to;
  ActedOn acted(c.output);
  for (int64_t id : *ids) {
    auto r = client.Post("/v1/jobs/" + std::to_string(id) + "/signal", body.dump(), "application/json");
    if (!r.ok()) return Fail(r.status());
    if (r->status != 202) {
      std::cerr << "muster signal " << id << ": " << Client::ErrorOf(*r).message() << "\n";
      acted.rc = 1;
      continue;
    }
    if (!acted.Keep(r->body)) {
      std::string nodes;
      for (const json& n : r->body.value("nodes", json::array()))
        nodes += (nodes.empty() ? "" : ",") + n.get<std::string>();
      std::cout << "job " << id << ": " << Field(r->body, "signal") << " to " << Field(r->body, "to") << " on "
                << (nodes.empty() ? "no node" : nodes) << "\n";
    }
  }
  return acted.Finish();
}

int Act(JobCommands& c, Client& client, const std::string& verb) {
  auto ids = JobIds(c.ids);
  if (!ids.ok()) {
    Fail(ids.status());
    return 2;
  }
  ActedOn acted(c.output);
  for (int64_t id : *ids) {
    auto r = client.Post("/v1/jobs/" + std::to_string(id) + "/" + verb, "", "application/json");
    if (!r.ok()) return Fail(r.status());
    if (r->status != 200) {
      std::cerr << "muster " << verb << " " << id << ": " << Client::ErrorOf(*r).message() << "\n";
      acted.rc = 1;
      continue;
    }
    if (!acted.Keep(r->body)) std::cout << "job " << id << ": " << Field(r->body, "state") << "\n";
  }
  return acted.Finish();
}

}  // namespace

std::shared_ptr<JobCommands> AddJobCommands(CLI::App& app) {
  auto c = std::make_shared<JobCommands>();
  c->server = DefaultServer();
  auto common = [c = c.get()](CLI::App* sub, bool formats = true) {
    AddServerOptions(sub, c->server);
    sub->add_option("--as", c->act_as, "Act for this user (admins only; recorded in the audit log)");
    if (formats) {
      sub->add_option(
          "-o,--output", c->output,
          "wide, json, yaml; for get jobs also jsonpath=TEMPLATE or custom-columns=HEADER:PATH,... (as kubectl)");
    }
  };
  c->submit =
      app.add_subcommand("submit", "Submit a job from a YAML/JSON file, a batch script, or flags and a command");
  common(c->submit);
  c->submit->add_option("-f,--file", c->file, "Job spec file (YAML or JSON)");
  AddSpecFlags(c->submit, *c);
  c->submit->add_flag("--parsable", c->parsable, "Print only the job id");
  c->submit->add_option("command", c->command,
                        "The command, after --; or one job file (.yaml, .yml, .json) instead of -f; or a batch script "
                        "(its text is the job, and its #SBATCH and #MUSTER lines set what flags do not)");

  c->run = app.add_subcommand("run", "Run a shell or command on a terminal in a new job's allocation (--interactive)");
  common(c->run, /*formats=*/false);
  AddSpecFlags(c->run, *c);
  c->run->add_flag("-i,--interactive", c->interactive,
                   "A terminal in the job (the job's class defaults to interactive; required)");
  c->run->add_option("command", c->command, "The command, after -- (default: your shell on the node)");

  c->get = app.add_subcommand("get", "List jobs, nodes or queues");
  common(c->get);
  c->get->add_option("kind", c->kind, "jobs, nodes or queues")->required();
  c->get->add_option("--state,-t", c->state, "Only jobs in these states (PENDING,RUNNING)");
  c->get->add_option("--queue", c->filter_queue, "Only this queue");
  c->get->add_option("--for-user", c->filter_user, "Only this user's jobs");
  c->get->add_option("--name", c->filter_name, "Only jobs with this name");
  c->get->add_option("--selector,-l", c->selector,
                     "Only jobs whose labels match, as kubectl's: team=vision,tier!=batch,gpu,!spot");
  c->get->add_option("--limit", c->limit, "At most this many jobs (0: all)")->check(kZeroOrMore);
  c->get->add_flag("--watch,-w", c->watch,
                   "After the list, print each job's changes as they happen (the server pushes them), until Ctrl-C");

  c->describe = app.add_subcommand("describe", "Show a job with its status and events");
  common(c->describe);
  c->describe->add_option("kind", c->describe_kind, "job")->required();
  c->describe->add_option("id", c->id, "Job id")->required();

  c->why = app.add_subcommand("why", "Why is a job pending, and when will it start");
  common(c->why);
  c->why->add_option("id", c->id, "Job id")->required();

  c->logs = app.add_subcommand("logs", "Show a job's output (stdout and stderr of one replica)");
  common(c->logs, /*formats=*/false);  // the output as the job wrote it
  c->logs->add_option("id", c->id, "Job id")->required();
  // Ranges as the server's (a bare NonNegativeNumber names DBL_MAX in its message).
  c->logs->add_option("--replica,-r", c->replica, "Replica index (default 0)")->check(CLI::Range(0, 4095));
  c->logs->add_option("--tail", c->tail, "Only the last N lines")->check(CLI::Range(0, 1'000'000));
  c->logs->add_option("--attempt", c->attempt, "That attempt's output (default: the current or last one)")
      ->check(CLI::Range(1, 1'000'000));
  c->logs->add_flag("-f,--follow", c->follow, "Keep printing new output until the job ends");

  for (const char* verb : {"cordon", "uncordon", "drain", "reclaim", "declare-lost", "remove-node"}) {
    const std::string v = verb;
    CLI::App* sub = app.add_subcommand(
        verb, v == "cordon"  ? "Give nodes no new work (admins)"
              : v == "drain" ? "Cordon nodes and requeue their jobs, each after its checkpoint signal (admins)"
              : v == "reclaim"
                  ? "The cloud takes nodes back by --deadline: drain them, stops cut to the deadline (admins)"
              : v == "declare-lost" ? "Declare silent nodes lost: their jobs are requeued now (admins)"
              : v == "remove-node"  ? "Forget lost nodes that run nothing (admins)"
                                    : "Let cordoned nodes take work again (admins)");
    common(sub);
    sub->add_option("nodes", c->nodes, "Node names")->required();
    if (v == "reclaim") sub->add_option("--deadline", c->deadline, "When the cloud takes them (default 2m)");
    c->node_actions.emplace_back(sub, verb);
  }
  for (const char* verb : {"cancel", "hold", "release", "requeue"}) {
    CLI::App* sub =
        app.add_subcommand(verb, std::string(1, static_cast<char>(std::toupper(verb[0]))) + (verb + 1) + " jobs");
    common(sub);
    sub->add_option("ids", c->ids, "Job ids, or ranges of them (5-104)")->required();
    c->actions.emplace_back(sub, verb);
  }
  c->signal = app.add_subcommand("signal", "Send running jobs a signal; they go on running (scancel --signal)");
  common(c->signal);
  c->signal->add_option("ids", c->ids, "Job ids, or ranges of them (5-104)")->required();
  c->signal->add_option("-s,--signal", c->signal_name, "The signal: a name (USR1, SIGTERM) or number")->required();
  c->signal->add_option("--to", c->signal_to,
                        "Which processes: all (every process of the job), batch (a batch script's shell), steps "
                        "(srun's tasks); default steps for a Slurm-style job, else all");
  return c;
}

void NoteRawArguments(JobCommands& c, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) c.double_dash = c.double_dash || std::string_view(argv[i]) == "--";
}

int RunJobCommands(JobCommands& commands) {
  JobCommands* c = &commands;
  CLI::App* parsed = nullptr;
  for (CLI::App* sub : {c->submit, c->run, c->get, c->describe, c->why, c->logs, c->signal}) {
    if (sub->parsed()) parsed = sub;
  }
  std::string verb, node_verb;
  for (const auto& [sub, v] : c->actions) {
    if (sub->parsed()) {
      parsed = sub;
      verb = v;
    }
  }
  for (const auto& [sub, v] : c->node_actions) {
    if (sub->parsed()) {
      parsed = sub;
      node_verb = v;
    }
  }
  if (!parsed) return -1;
  if (int rc = CheckOutput(c->output); rc != 0) return rc;
  // Connection failures are retried for MUSTER_RETRY_SECONDS (default 10).
  Client client(c->server, c->act_as, RetrySeconds());
  if (!node_verb.empty()) return ActOnNodes(*c, client, node_verb);
  if (parsed == c->submit) return Submit(*c, client);
  if (parsed == c->run) return Run(*c, client);
  if (parsed == c->get) return Get(*c, client);
  if (parsed == c->describe) {
    if (c->describe_kind != "job") {
      std::cerr << "muster describe: expected \"job\", got \"" << c->describe_kind << "\"\n";
      return 2;
    }
    return Describe(*c, client, false);
  }
  if (parsed == c->why) return Describe(*c, client, true);
  if (parsed == c->logs) return Logs(*c, client);
  if (parsed == c->signal) return SignalJobs(*c, client);
  return Act(*c, client, verb);
}

}  // namespace muster::cli
