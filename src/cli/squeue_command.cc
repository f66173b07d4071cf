#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

#include "cli/client.h"
#include "cli/command_options.h"
#include "cli/hostlist.h"
#include "cli/slurm_commands.h"
#include "cli/slurm_jobs.h"
#include "common/clock.h"
#include "common/rfc3339.h"
#include "common/signal_name.h"

namespace muster::cli {
namespace {

using nlohmann::json;

int Error(const std::string& command, const std::string& message) {
  std::cerr << command << ": error: " << message << "\n";
  return 1;
}

// A state as squeue and scancel take it (PD, pending, ...) as Slurm's long name.
std::optional<std::string> SlurmStateName(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::map<std::string, std::string> kShort = {
      {"PD", "PENDING"},     {"R", "RUNNING"},   {"CG", "COMPLETING"}, {"CD", "COMPLETED"},      {"F", "FAILED"},
      {"CA", "CANCELLED"},   {"TO", "TIMEOUT"},  {"NF", "NODE_FAIL"},  {"OOM", "OUT_OF_MEMORY"}, {"PR", "PREEMPTED"},
      {"CF", "CONFIGURING"}, {"S", "SUSPENDED"}, {"ST", "STOPPED"}};
  if (auto it = kShort.find(s); it != kShort.end()) return it->second;
  for (const auto& [code, name] : kShort) {
    if (name == s) return name;
  }
  return std::nullopt;
}

// The caller's user name, as the server knows it.
StatusOr<std::string> Me(Client& client) {
  ASSIGN_OR_RETURN(Response r, client.Get("/v1/whoami"));
  if (r.status != 200) return Client::ErrorOf(r);
  return r.body.value("user", std::string());
}

// Which jobs the filters shared by squeue and scancel let through.
struct JobFilter {
  std::set<std::string> states, users, names, partitions, qos, accounts;
  std::vector<std::string> nodes;
  std::vector<std::string> jobs;  // "12", "3_2"
  bool Passes(const SlurmJob& j) const {
    auto in = [](const std::set<std::string>& set, const std::string& v) { return set.empty() || set.count(v) > 0; };
    if (!in(states, j.slurm_state) || !in(users, j.user) || !in(names, j.name) || !in(partitions, j.partition) ||
        !in(qos, j.qos) || !in(accounts, j.account)) {
      return false;
    }
    if (!nodes.empty() && std::none_of(j.nodes.begin(), j.nodes.end(), [&](const std::string& n) {
          return std::find(nodes.begin(), nodes.end(), n) != nodes.end();
        })) {
      return false;
    }
    if (jobs.empty()) return true;
    for (const std::string& id : jobs) {
      if (id == j.IdText() || id == std::to_string(j.id) || (j.array_job > 0 && id == std::to_string(j.array_job))) {
        return true;
      }
    }
    return false;
  }
};

Status ReadFilter(const CommandLine& cl, Client& client, JobFilter& f) {
  for (const std::string& s : cl.List("states")) {
    std::string up = s;
    for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (up == "ALL") continue;
    auto name = SlurmStateName(s);
    if (!name) return InvalidArgument("Invalid job state specified: " + s);
    f.states.insert(*name);
  }
  for (const std::string& u : cl.List("user")) f.users.insert(u);
  if (cl.Has("me")) {
    ASSIGN_OR_RETURN(std::string me, Me(client));
    f.users.insert(me);
  }
  for (const std::string& n : cl.List("name")) f.names.insert(n);
  for (const std::string& p : cl.List("partition")) f.partitions.insert(p);
  for (const std::string& q : cl.List("qos")) f.qos.insert(q);
  for (const std::string& a : cl.List("account")) f.accounts.insert(a);
  if (cl.Has("nodelist")) {
    ASSIGN_OR_RETURN(f.nodes, ExpandHostlist(cl.Last("nodelist")));
  }
  return Status::Ok();
}

std::string Header(char field) {
  static const std::map<char, std::string> kTitles = {
      {'a', "ACCOUNT"},     {'A', "JOBID"},       {'b', "TRES_PER_NODE"},
      {'C', "CPUS"},        {'D', "NODES"},       {'e', "END_TIME"},
      {'E', "DEPENDENCY"},  {'f', "FEATURES"},    {'F', "ARRAY_JOB_ID"},
      {'i', "JOBID"},       {'j', "NAME"},        {'K', "ARRAY_TASK_ID"},
      {'l', "TIME_LIMIT"},  {'L', "TIME_LEFT"},   {'M', "TIME"},
      {'N', "NODELIST"},    {'P', "PARTITION"},   {'q', "QOS"},
      {'v', "RESERVATION"}, {'r', "REASON"},      {'R', "NODELIST(REASON)"},
      {'S', "START_TIME"},  {'t', "ST"},          {'T', "STATE"},
      {'u', "USER"},        {'V', "SUBMIT_TIME"}, {'Z', "WORK_DIR"}};
  auto it = kTitles.find(field);
  return it != kTitles.end() ? it->second : std::string(1, field);
}

// One squeue line's values. `array_tasks`: the pending tasks it stands for
// (one line for an array's pending tasks).
std::string Field(char field, const SlurmJob& j, const std::string& array_tasks, Time now) {
  const int64_t used = j.start && !j.Finished() ? (now - *j.start).millis() / 1000
                       : j.start && j.end       ? (*j.end - *j.start).millis() / 1000
                                                : 0;
  const bool unlimited = j.time_limit.is_infinite();
  const std::string nodes = j.nodes.empty() ? "" : CompressHostlist(j.nodes);
  switch (field) {
    case 'i':
      return array_tasks.empty() ? j.IdText() : std::to_string(j.array_job) + "_" + array_tasks;
    case 'A':
      return std::to_string(j.id);
    case 'F':
      return std::to_string(j.array_job > 0 ? j.array_job : j.id);
    case 'K':
      return j.array_job > 0 ? (array_tasks.empty() ? std::to_string(j.array_task) : array_tasks) : "N/A";
    case 'j':
      return j.name;
    case 'u':
      return j.user;
    case 'P':
      return j.partition;
    case 'q':
      return j.qos;
    case 'v':
      return j.reservation.empty() ? "(null)" : j.reservation;
    case 'a':
      return j.account;
    case 't':
      return j.code;
    case 'T':
      return j.slurm_state;
    case 'M':
      return SlurmDuration(used, false);
    case 'l':
      return unlimited ? "UNLIMITED" : SlurmDuration(j.time_limit.millis() / 1000, false);
    case 'L':
      return unlimited ? "UNLIMITED" : SlurmDuration(j.time_limit.millis() / 1000 - used, false);
    case 'D':
      return std::to_string(j.node_count);
    case 'C':
      return std::to_string(j.cpus);
    case 'N':
      return nodes;
    case 'r':
      return j.reason;
    case 'R':
      return j.state == "PENDING" || j.state == "HELD" ? "(" + j.reason + ")" : nodes;
    case 'S':
      return j.start ? SlurmTime(j.start) : j.planned_start ? SlurmTime(j.planned_start) : "N/A";
    case 'e':
      return j.end ? SlurmTime(j.end) : j.start && !unlimited ? SlurmTime(*j.start + j.time_limit) : "N/A";
    case 'V':
      return SlurmTime(j.submit);
    case 'b':
      return j.gpus_per_node > 0 ? "gres:gpu:" + std::to_string(j.gpus_per_node) : "N/A";
    case 'Z':
      return j.work_dir;
    case 'E':
      return j.dependency_text.empty() ? "(null)" : j.dependency_text;
    case 'f':
      return "(null)";
    default:
      return "N/A";
  }
}

constexpr CommandOption kSqueueOptions[] = {
    {'h', "noheader"},   {'o', "format", true},    {'u', "user", true}, {'t', "states", true},  {'j', "jobs", true},
    {'n', "name", true}, {'p', "partition", true}, {'q', "qos", true},  {'A', "account", true}, {'w', "nodelist", true},
    {0, "me"},           {'r', "array"},           {0, "start"},        {'l', "long"},          {'a', "all"},
    {'v', "verbose"},    {0, "noconvert"},         {'S', "sort", true},
};

}  // namespace

int RunSqueue(const std::vector<std::string>& args) {
  auto cl = ReadCommandLine(args, kSqueueOptions);
  if (!cl.ok()) return Error("squeue", cl.status().message());
  Client client(DefaultServer(), "", RetrySeconds());
  JobFilter filter;
  if (Status s = ReadFilter(*cl, client, filter); !s.ok()) return Error("squeue", s.message());
  filter.jobs = cl->List("jobs");
  for (const std::string& w : cl->words) filter.jobs.push_back(w);  // squeue JOBID, as -j
  // Active jobs; "all" (or a finished state) adds those that ended lately.
  bool recent = false;
  for (const std::string& s : cl->List("states")) {
    std::string up = s;
    for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (up == "ALL") recent = true;
  }
  for (const std::string& s : filter.states) {
    if (s != "PENDING" && s != "RUNNING" && s != "COMPLETING" && s != "CONFIGURING") recent = true;
  }
  auto jobs = ListSlurmJobs(client, recent ? "" : "PENDING,HELD,STARTING,RUNNING,COMPLETING");
  if (!jobs.ok()) return Error("squeue", jobs.status().message());
  const Time now = SystemClock().Now();
  std::string format = cl->Last("format", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R");
  if (cl->Has("long") && !cl->Has("format")) format = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
  if (cl->Has("start") && !cl->Has("format")) format = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %R";
  const std::vector<FormatPiece> pieces = ParsePercentFormat(format);
  std::string out;
  if (!cl->Has("noheader")) {
    for (const FormatPiece& p : pieces) out += p.field ? FitField(p, Header(p.field)) : p.literal;
    out += "\n";
  }
  // Slurm's default order: partition, state (pending first), then (for
  // equal priority) submission.
  std::stable_sort(jobs->begin(), jobs->end(), [](const SlurmJob& a, const SlurmJob& b) {
    return std::tuple(a.partition, SlurmStateRank(a.slurm_state), a.id) <
           std::tuple(b.partition, SlurmStateRank(b.slurm_state), b.id);
  });
  // A waiting job's expected start (%S), as the last cycle planned it.
  const bool starts = std::any_of(pieces.begin(), pieces.end(), [](const FormatPiece& p) { return p.field == 'S'; });
  for (SlurmJob& j : *jobs) {
    if (!starts || (j.state != "PENDING" && j.state != "HELD") || !filter.Passes(j)) continue;
    auto r = client.Get("/v1/jobs/" + std::to_string(j.id));
    if (r.ok() && r->status == 200 && r->body.contains("plannedStart") && r->body["plannedStart"].is_string()) {
      j.planned_start = ParseRfc3339Utc(r->body["plannedStart"].get<std::string>());
    }
  }
  // Dependencies that do not hold yet (%E), with their states.
  if (std::any_of(pieces.begin(), pieces.end(), [](const FormatPiece& p) { return p.field == 'E'; })) {
    auto job_of = JobsByIdFrom(client);
    for (SlurmJob& j : *jobs) {
      if (filter.Passes(j) && (!j.dependencies.empty() || j.singleton))
        j.dependency_text = SlurmDependencyText(j, job_of);
    }
  }
  // An array's pending tasks share a line, unless -r.
  std::map<int64_t, std::vector<const SlurmJob*>> pending_tasks;
  std::vector<std::pair<const SlurmJob*, std::string>> lines;
  for (const SlurmJob& j : *jobs) {
    if (!filter.Passes(j)) continue;
    if (j.Finished() && !(j.end && now - *j.end <= Duration::Minutes(5))) continue;
    if (!cl->Has("start") || j.state == "PENDING" || j.state == "HELD") {
      const bool pending = j.state == "PENDING" || j.state == "HELD";
      if (pending && j.array_job > 0 && !cl->Has("array")) {
        auto& group = pending_tasks[j.array_job];
        group.push_back(&j);
        if (group.size() == 1) lines.push_back({&j, "\x01"});  // filled in below
        continue;
      }
      lines.push_back({&j, ""});
    }
  }
  for (auto& [j, tasks] : lines) {
    if (tasks == "\x01") {
      const auto& group = pending_tasks[j->array_job];
      tasks = group.size() == 1 ? "" : ArrayTaskRuns(group);
    }
    for (const FormatPiece& p : pieces) out += p.field ? FitField(p, Field(p.field, *j, tasks, now)) : p.literal;
    out += "\n";
  }
  std::cout << out;
  return 0;
}

int RunScancel(const std::vector<std::string>& args) {
  static constexpr CommandOption kOptions[] = {
      {'u', "user", true},   {'n', "name", true},    {'t', "state", true},    {'p', "partition", true},
      {'q', "qos", true},    {'A', "account", true}, {'w', "nodelist", true}, {0, "me"},
      {'s', "signal", true}, {'v', "verbose"},       {'f', "full"},           {'b', "batch"},
      {'Q', "quiet"},        {'i', "interactive"},
  };
  auto cl = ReadCommandLine(args, kOptions);
  if (!cl.ok()) return Error("scancel", cl.status().message());
  if (cl->Has("interactive")) return Error("scancel", "--interactive is not supported here");
  // With --signal the jobs are signalled, not cancelled: their steps' tasks
  // (srun's; the server's default, every process of a job that is not
  // Slurm-style), with -b the batch shell, with -f every process. KILL to
  // the steps cancels, as in Slurm.
  std::optional<int> signal;
  if (cl->Has("signal")) {
    signal = SignalNumber(cl->Last("signal"));
    if (!signal) return Error("scancel", "Invalid job signal: " + cl->Last("signal"));
  }
  const std::string to = cl->Has("full") ? "all" : cl->Has("batch") ? "batch" : "";
  if (signal == SIGKILL && to.empty()) signal.reset();
  const bool signalling = signal.has_value();
  const std::string sig = signal ? std::to_string(*signal) : "";
  CommandLine as_filter = *cl;
  if (cl->Has("state")) as_filter.options["states"] = cl->options.at("state");
  Client client(DefaultServer(), "", RetrySeconds());
  JobFilter filter;
  if (Status s = ReadFilter(as_filter, client, filter); !s.ok()) return Error("scancel", s.message());
  filter.jobs = cl->words;
  const bool any_filter = !filter.states.empty() || !filter.users.empty() || !filter.names.empty() ||
                          !filter.partitions.empty() || !filter.qos.empty() || !filter.accounts.empty() ||
                          !filter.nodes.empty();
  if (filter.jobs.empty() && !any_filter) return Error("scancel", "No job identification provided");
  auto jobs = ListSlurmJobs(client, "PENDING,HELD,STARTING,RUNNING,COMPLETING");
  if (!jobs.ok()) return Error("scancel", jobs.status().message());
  // Waiting jobs first: an array task cancelled while its siblings wait
  // would make room for the next to start in between.
  std::stable_sort(jobs->begin(), jobs->end(), [](const SlurmJob& a, const SlurmJob& b) {
    return SlurmStateRank(a.slurm_state) < SlurmStateRank(b.slurm_state);
  });
  int rc = 0;
  std::set<std::string> matched;
  for (const SlurmJob& j : *jobs) {
    if (!filter.Passes(j)) continue;
    for (const std::string& id : filter.jobs) {
      if (id == j.IdText() || id == std::to_string(j.id) || (j.array_job > 0 && id == std::to_string(j.array_job))) {
        matched.insert(id);
      }
    }
    if (signalling && j.code == "PD") {
      std::cerr << "scancel: error: Kill job error on job id " << j.IdText() << ": Job is pending execution\n";
      rc = 1;
      continue;
    }
    auto r = signalling
                 ? client.Post("/v1/jobs/" + std::to_string(j.id) + "/signal",
                               (to.empty() ? json({{"signal", sig}}) : json({{"signal", sig}, {"to", to}})).dump(),
                               "application/json")
                 : client.Post("/v1/jobs/" + std::to_string(j.id) + "/cancel", "", "application/json");
    if (!r.ok() || r->status / 100 != 2) {
      std::cerr << "scancel: error: Kill job error on job id " << j.IdText() << ": "
                << (r.ok() ? Client::ErrorOf(*r).message() : r.status().message()) << "\n";
      rc = 1;
    }
  }
  for (const std::string& id : filter.jobs) {
    if (!matched.count(id) && !any_filter) {
      std::cerr << "scancel: error: Kill job error on job id " << id << ": Invalid job id specified\n";
      rc = 1;
    }
  }
  return rc;
}

}  // namespace muster::cli
