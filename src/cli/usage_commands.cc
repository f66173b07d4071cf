#include "cli/usage_commands.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "cli/client.h"
#include "cli/table.h"
#include "cli/window_time.h"
#include "common/clock.h"
#include "common/rfc3339.h"

namespace muster::cli {

using nlohmann::json;

struct UsageCommands {
  std::string server, act_as, output = "table";
  CLI::App *usage = nullptr, *history = nullptr;
  std::string since, until, by = "queue", queue, user, state;
  int64_t limit = 0;
};

namespace {

constexpr const char* kEndedStates = "COMPLETED,FAILED,CANCELLED,TIMEOUT,OUT_OF_MEMORY,NODE_FAIL,PREEMPTED";

double Num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0; }

// A figure of `j` as a cell: full precision for CSV, two decimals for a table.
std::string Amount(const json& j, const char* key, bool csv) {
  return csv ? fmt::format("{}", Num(j, key)) : fmt::format("{:.2f}", Num(j, key));
}

// Efficiency as a cell: a fraction for CSV ("" when unmeasured), a percentage for a table ("-").
std::string Efficiency(const json& j, bool csv) {
  if (!j.contains("efficiency") || !j["efficiency"].is_number()) return csv ? "" : "-";
  const double e = j["efficiency"].get<double>();
  return csv ? fmt::format("{}", e) : fmt::format("{:.0f}%", e * 100);
}

std::string ExitCode(const json& j) {
  if (!j.contains("exitCode") || !j["exitCode"].is_number_integer()) return "-";
  return fmt::format("{}:{}", j["exitCode"].get<int64_t>(), j.contains("signal") ? j["signal"].get<int64_t>() : 0);
}

// "1d 02:03:04", "02:03:04" (sacct's elapsed), or "-".
std::string Elapsed(const json& j) {
  const auto start = ParseRfc3339Utc(StringField(j, "startTime"));
  const auto end = ParseRfc3339Utc(StringField(j, "endTime"));
  if (!start || !end || *end < *start) return "-";
  int64_t s = (*end - *start).millis() / 1000;
  const int64_t days = s / 86400;
  s %= 86400;
  return (days ? fmt::format("{}d ", days) : "") + fmt::format("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break.
std::string Csv(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char ch : v) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

void PrintCsv(const std::vector<std::vector<std::string>>& rows) {
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) std::cout << (i ? "," : "") << Csv(row[i]);
    std::cout << "\r\n";
  }
}

// A refused --since or --until is a usage error (2); the server's errors
// (their message names their field) are 1.
int Fail(const std::string& what, const Status& s) {
  const bool flag = s.field() == "since" || s.field() == "until";
  std::cerr << "muster " << what << ": " << (flag ? "--" + s.field() + ": " : "") << s.message() << "\n";
  return flag ? 2 : 1;
}

// GET /v1/usage with the window and filters; the answer's body.
StatusOr<json> Fetch(UsageCommands& c, Client& client, const std::string& by, const std::string& default_since,
                     const std::string& states, int64_t limit = 0) {
  const Time now = SystemClock().Now();
  ASSIGN_OR_RETURN(Time until, ParseWindowTime(c.until.empty() ? "now" : c.until, now, "until"));
  ASSIGN_OR_RETURN(Time since, ParseWindowTime(c.since.empty() ? default_since : c.since, now, "since"));
  if (!(since < until)) return InvalidArgument("must be before --until", "since");
  std::string path = "/v1/usage?by=" + UrlEncode(by) + "&from=" + UrlEncode(FormatRfc3339Utc(since)) +
                     "&to=" + UrlEncode(FormatRfc3339Utc(until));
  if (!c.queue.empty()) path += "&queue=" + UrlEncode(c.queue);
  if (!c.user.empty()) path += "&user=" + UrlEncode(c.user);
  if (!states.empty()) path += "&state=" + UrlEncode(states);
  if (limit > 0) path += "&limit=" + std::to_string(limit);
  ASSIGN_OR_RETURN(Response r, client.Get(path));
  if (r.status != 200) return Client::ErrorOf(r);
  return std::move(r.body);
}

int Usage(UsageCommands& c, Client& client) {
  auto body = Fetch(c, client, c.by, "30d", "");
  if (!body.ok()) return Fail("usage", body.status());
  if (c.output == "json") {
    std::cout << body->dump(2) << "\n";
    return 0;
  }
  const bool by_pool = c.by == "pool";
  const bool by_queue = c.by != "user" && !by_pool, by_user = c.by != "queue" && !by_pool;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head;
  if (by_pool) head.push_back("POOL");
  if (by_queue) head.push_back("QUEUE");
  if (by_user) head.push_back("USER");
  head.insert(head.end(), {"JOBS", "GPU-HOURS", "COST", "EFFICIENCY"});
  rows.push_back(head);
  const bool csv = c.output == "csv";
  auto line = [&](const json& j, const std::vector<std::string>& keys) {
    std::vector<std::string> row = keys;
    row.push_back(std::to_string(static_cast<int64_t>(Num(j, "jobs"))));
    row.insert(row.end(), {Amount(j, "gpuHours", csv), Amount(j, "cost", csv), Efficiency(j, csv)});
    rows.push_back(std::move(row));
  };
  for (const json& item : (*body)["items"]) {
    std::vector<std::string> keys;
    if (by_pool) keys.push_back(item.value("pool", "").empty() ? "-" : StringField(item, "pool"));
    if (by_queue) keys.push_back(StringField(item, "queue"));
    if (by_user) keys.push_back(StringField(item, "user"));
    line(item, keys);
  }
  if (csv) {
    PrintCsv(rows);
    return 0;
  }
  std::vector<std::string> total(by_queue && by_user ? 2 : 1, "");
  total[0] = "TOTAL";
  line((*body)["total"], total);
  std::cout << "Usage from " << StringField(*body, "from") << " to " << StringField(*body, "to") << "\n";
  PrintTable(rows);
  return 0;
}

int History(UsageCommands& c, Client& client) {
  std::string states = kEndedStates;
  if (!c.state.empty()) {
    states = c.state;
    for (char& ch : states) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  auto body = Fetch(c, client, "job", "1970-01-01", states, c.limit);  // the server keeps the most recent N
  if (!body.ok()) return Fail("history", body.status());
  const json& items = (*body)["items"];
  if (c.output == "json") {
    std::cout << items.dump(2) << "\n";
    return 0;
  }
  const bool csv = c.output == "csv", wide = c.output == "wide" || csv;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ID", "NAME", "USER", "QUEUE", "STATE", "EXIT", "ELAPSED", "GPU-HOURS", "EFFICIENCY"});
  if (wide) rows[0].insert(rows[0].end(), {"START", "END", "ATTEMPTS", "COST", "REASON"});
  for (const json& j : items) {
    std::vector<std::string> row = {std::to_string(j.value("id", int64_t{0})),
                                    StringField(j, "name"),
                                    StringField(j, "user"),
                                    StringField(j, "queue"),
                                    StringField(j, "state"),
                                    ExitCode(j),
                                    Elapsed(j),
                                    Amount(j, "gpuHours", csv),
                                    Efficiency(j, csv)};
    if (wide) {
      row.insert(row.end(), {StringField(j, "startTime"), StringField(j, "endTime"),
                             std::to_string(j.value("attempts", 0)), Amount(j, "cost", csv), StringField(j, "reason")});
    }
    rows.push_back(std::move(row));
  }
  if (csv) {
    PrintCsv(rows);
  } else {
    PrintTable(rows);
  }
  return 0;
}

}  // namespace

std::shared_ptr<UsageCommands> AddUsageCommands(CLI::App& app) {
  auto c = std::make_shared<UsageCommands>();
  c->server = DefaultServer();
  auto common = [c = c.get()](CLI::App* sub) {
    AddServerOptions(sub, c->server);
    sub->add_option("--as", c->act_as, "Act for this user (admins only; recorded in the audit log)");
    sub->add_option("--since,-S", c->since, "Window start: a time, a date, or an age such as 7d");
    sub->add_option("--until,-E", c->until, "Window end (default now)");
    sub->add_option("--queue", c->queue, "Only this queue");
    sub->add_option("--for-user", c->user, "Only this user's jobs");
  };
  c->usage =
      app.add_subcommand("usage", "GPU-hours, cost, jobs and efficiency by queue, user or node pool (as sreport)");
  common(c->usage);
  c->usage
      ->add_option("--by", c->by, "queue, user, queue,user or pool (a job's GPU-hours split by the pools it ran in)")
      ->check(CLI::IsMember({"queue", "user", "queue,user", "user,queue", "pool"}));
  c->usage->add_option("-o,--output", c->output, "table, csv or json")->check(CLI::IsMember({"table", "csv", "json"}));
  c->history = app.add_subcommand("history", "Jobs that ended, with exit codes, GPU-hours and efficiency (as sacct)");
  common(c->history);
  c->history->add_option("--state,-s", c->state, "Only these states (FAILED,TIMEOUT)");
  c->history->add_option("--limit", c->limit, "Only the most recent N jobs (0: all)")
      ->check(CLI::Range(int64_t{0}, INT64_MAX));
  c->history->add_option("-o,--output", c->output, "table, wide, csv or json")
      ->check(CLI::IsMember({"table", "wide", "csv", "json"}));
  return c;
}

int RunUsageCommands(UsageCommands& c) {
  if (!c.usage->parsed() && !c.history->parsed()) return -1;
  Client client(c.server, c.act_as, RetrySeconds());
  return c.usage->parsed() ? Usage(c, client) : History(c, client);
}

}  // namespace muster::cli
