#include <algorithm>
#include <ctime>
#include <iostream>
#include <map>
#include <set>

#include "cli/client.h"
#include "cli/command_options.h"
#include "cli/hostlist.h"
#include "cli/slurm_commands.h"
#include "cli/slurm_jobs.h"
#include "common/clock.h"

namespace muster::cli {
namespace {

int Error(const std::string& message) {
  std::cerr << "sacct: error: " << message << "\n";
  return 1;
}

// sacct's time forms: YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS] (today), now,
// now-N[seconds|minutes|hours|days], as local time.
std::optional<Time> SacctTime(const std::string& text, Time now) {
  if (text == "now") return now;
  if (text.rfind("now-", 0) == 0) {
    char* end = nullptr;
    const long long n = std::strtoll(text.c_str() + 4, &end, 10);
    const std::string unit = end;
    const int64_t secs = unit.empty() || unit[0] == 's' ? 1
                         : unit[0] == 'm'               ? 60
                         : unit[0] == 'h'               ? 3600
                         : unit[0] == 'd'               ? 86400
                                                        : 0;
    if (secs == 0 || n < 0) return std::nullopt;
    return now - Duration::Seconds(n * secs);
  }
  std::tm tm{};
  const std::time_t t = static_cast<std::time_t>(now.millis() / 1000);
  ::localtime_r(&t, &tm);
  tm.tm_sec = 0;
  const char* rest = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr || *rest != '\0') {
    std::tm day = tm;
    day.tm_hour = day.tm_min = day.tm_sec = 0;
    rest = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M", &day);
    if (rest == nullptr || *rest != '\0') rest = ::strptime(text.c_str(), "%Y-%m-%d", &day);
    if (rest == nullptr || *rest != '\0') {
      day = tm;
      day.tm_sec = 0;
      rest = ::strptime(text.c_str(), "%H:%M:%S", &day);
      if (rest == nullptr || *rest != '\0') rest = ::strptime(text.c_str(), "%H:%M", &day);
    }
    if (rest == nullptr || *rest != '\0') return std::nullopt;
    tm = day;
  }
  tm.tm_isdst = -1;
  return Time::FromMillis(static_cast<int64_t>(::mktime(&tm)) * 1000);
}

struct Column {
  std::string name;  // as sacct spells it
  int width = 0;
  bool left = false;  // job ids; the rest are right-justified
};

// A field's value, or nullopt for a field sacct has that this does not.
std::optional<std::string> Value(const std::string& field, const SlurmJob& j, Time now,
                                 const std::string& id_text = "") {
  std::string f = field;
  for (char& c : f) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const int64_t elapsed = !j.start ? 0 : j.end ? (*j.end - *j.start).millis() / 1000 : (now - *j.start).millis() / 1000;
  if (f == "jobid") return id_text.empty() ? j.IdText() : id_text;
  if (f == "jobidraw") return std::to_string(j.id);
  if (f == "jobname") return j.name;
  if (f == "partition") return j.partition;
  if (f == "account") return j.account;
  if (f == "qos") return j.qos;
  if (f == "user") return j.user;
  if (f == "alloccpus" || f == "ncpus") return std::to_string(j.cpus);
  if (f == "reqcpus") return std::to_string(j.cpus);
  if (f == "state") return j.slurm_state;
  if (f == "exitcode") {
    const int32_t code = j.exit_code.value_or(0), signal = j.exit_signal;
    return std::to_string(signal > 0 ? 0 : code) + ":" + std::to_string(signal);
  }
  if (f == "start") return j.start ? SlurmTime(j.start) : "Unknown";
  if (f == "end") return j.end ? SlurmTime(j.end) : "Unknown";
  if (f == "submit" || f == "eligible") return SlurmTime(j.submit);
  if (f == "elapsed") return SlurmDuration(elapsed, true);
  if (f == "elapsedraw") return std::to_string(elapsed);
  if (f == "timelimit")
    return j.time_limit.is_infinite() ? "UNLIMITED" : SlurmDuration(j.time_limit.millis() / 1000, true);
  if (f == "nnodes" || f == "allocnodes") return std::to_string(f == "allocnodes" && !j.start ? 0 : j.node_count);
  if (f == "nodelist") return j.nodes.empty() ? "None assigned" : CompressHostlist(j.nodes);
  if (f == "workdir") return j.work_dir;
  if (f == "cputimeraw") return std::to_string(elapsed * j.cpus);
  if (f == "cputime") return SlurmDuration(elapsed * j.cpus, true);
  if (f == "reason") return j.reason;
  if (f == "alloctres" || f == "reqtres") {
    std::string t = "billing=" + std::to_string(j.cpus) + ",cpu=" + std::to_string(j.cpus);
    if (j.gpus_per_node > 0) t += ",gres/gpu=" + std::to_string(j.gpus_per_node * j.node_count);
    return t + ",node=" + std::to_string(j.node_count);
  }
  return std::nullopt;
}

}  // namespace

int RunSacct(const std::vector<std::string>& args) {
  static constexpr CommandOption kOptions[] = {
      {'j', "jobs", true},      {'u', "user", true},     {'a', "allusers"},
      {'S', "starttime", true}, {'E', "endtime", true},  {'s', "state", true},
      {0, "name", true},        {'o', "format", true},   {'P', "parsable2"},
      {'p', "parsable"},        {'n', "noheader"},       {'X', "allocations"},
      {'r', "partition", true}, {'A', "accounts", true}, {'q', "qos", true},
      {'b', "brief"},           {'l', "long"},           {'D', "duplicates"},
      {0, "noconvert"},         {'v', "verbose"},        {'L', "allclusters"},
  };
  auto cl = ReadCommandLine(args, kOptions);
  if (!cl.ok()) return Error(cl.status().message());
  const Time now = SystemClock().Now();
  std::optional<Time> from, to = now;
  const std::vector<std::string> ids = cl->List("jobs");
  if (cl->Has("starttime")) {
    from = SacctTime(cl->Last("starttime"), now);
    if (!from) return Error("Invalid time specification (pos 0): " + cl->Last("starttime"));
  } else if (ids.empty()) {
    from = SacctTime("00:00", now);  // today's midnight
  }
  if (cl->Has("endtime")) {
    to = SacctTime(cl->Last("endtime"), now);
    if (!to) return Error("Invalid time specification (pos 0): " + cl->Last("endtime"));
  }
  std::string format = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode";
  if (cl->Has("brief")) format = "JobID,State,ExitCode";
  if (cl->Has("format")) format = cl->Last("format");
  std::vector<Column> columns;
  for (const std::string& item : CommandLine{{{"f", {format}}}, {}}.List("f")) {
    Column c;
    const size_t pct = item.find('%');
    c.name = item.substr(0, pct);
    std::string lower = c.name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    c.width = pct != std::string::npos ? std::atoi(item.c_str() + pct + 1)
              : lower == "jobid"       ? 12
              : lower == "exitcode"    ? 8
              : lower == "start" || lower == "end" || lower == "submit" || lower == "eligible" ? 19
                                                                                               : 10;
    c.left = lower == "jobid" || lower == "jobidraw";
    columns.push_back(c);
  }
  for (const Column& c : columns) {
    if (!Value(c.name, SlurmJob{}, now)) return Error("Invalid field requested: \"" + c.name + "\"");
  }
  Client client(DefaultServer(), "", RetrySeconds());
  auto jobs = ListSlurmJobs(client, "");
  if (!jobs.ok()) return Error(jobs.status().message());
  std::set<std::string> users;
  for (const std::string& u : cl->List("user")) users.insert(u);
  if (users.empty() && !cl->Has("allusers")) {
    auto me = client.Get("/v1/whoami");
    if (me.ok() && me->status == 200) users.insert(me->body.value("user", std::string()));
  }
  std::set<std::string> states, names, partitions;
  for (std::string s : cl->List("state")) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    static const std::map<std::string, std::string> kShort = {
        {"PD", "PENDING"}, {"R", "RUNNING"},    {"CD", "COMPLETED"},      {"F", "FAILED"},     {"CA", "CANCELLED"},
        {"TO", "TIMEOUT"}, {"NF", "NODE_FAIL"}, {"OOM", "OUT_OF_MEMORY"}, {"PR", "PREEMPTED"}, {"CG", "COMPLETING"}};
    states.insert(kShort.count(s) ? kShort.at(s) : s);
  }
  for (const std::string& n : cl->List("name")) names.insert(n);
  for (const std::string& p : cl->List("partition")) partitions.insert(p);
  const bool parsable = cl->Has("parsable2") || cl->Has("parsable");
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (parsable) {
        out += cells[i];
        if (i + 1 < cells.size() || cl->Has("parsable")) out += "|";
      } else {
        // Each column at its width, a cut value ending in "+", then a space.
        const FormatPiece p{"", 'x', columns[i].width, !columns[i].left};
        const size_t w = static_cast<size_t>(std::max(p.width, 0));
        out += FitField(p, w > 0 && cells[i].size() > w ? cells[i].substr(0, w - 1) + "+" : cells[i]) + " ";
      }
    }
    out += "\n";
  };
  if (!cl->Has("noheader")) {
    std::vector<std::string> titles, dashes;
    for (const Column& c : columns) {
      titles.push_back(c.name);
      dashes.push_back(std::string(static_cast<size_t>(std::max(c.width, 0)), '-'));
    }
    line(titles);
    if (!parsable) line(dashes);
  }
  std::vector<const SlurmJob*> shown;
  for (const SlurmJob& j : *jobs) {
    if (!users.empty() && !users.count(j.user)) continue;
    if (!states.empty() && !states.count(j.slurm_state)) continue;
    if (!names.empty() && !names.count(j.name)) continue;
    if (!partitions.empty() && !partitions.count(j.partition)) continue;
    if (!ids.empty() && std::none_of(ids.begin(), ids.end(), [&](const std::string& id) {
          return id == j.IdText() || id == std::to_string(j.id) ||
                 (j.array_job > 0 && id == std::to_string(j.array_job));
        })) {
      continue;
    }
    // Eligible within the window: submitted before its end, not ended before its start.
    if (j.submit && to && *j.submit > *to) continue;
    if (from && j.end && *j.end < *from) continue;
    shown.push_back(&j);
  }
  for (size_t i = 0; i < shown.size();) {
    // An array's tasks that never started are one record, as in Slurm.
    std::vector<const SlurmJob*> group = {shown[i]};
    const SlurmJob& j = *shown[i];
    if (j.array_job > 0 && !j.start) {
      while (i + group.size() < shown.size()) {
        const SlurmJob& next = *shown[i + group.size()];
        if (next.array_job != j.array_job || next.start || next.slurm_state != j.slurm_state) break;
        group.push_back(&next);
      }
    }
    const std::string id = group.size() > 1 ? std::to_string(j.array_job) + "_" + ArrayTaskRuns(group) : "";
    std::vector<std::string> cells;
    for (const Column& c : columns) cells.push_back(*Value(c.name, j, now, id));
    line(cells);
    i += group.size();
  }
  std::cout << out;
  return 0;
}

}  // namespace muster::cli
