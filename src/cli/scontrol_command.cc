#include "cli/scontrol_command.h"

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "api/output_pattern.h"
#include "cli/client.h"
#include "cli/hostlist.h"
#include "cli/slurm_jobs.h"
#include "common/clock.h"
#include "common/rfc3339.h"

namespace muster::cli {
namespace {

using nlohmann::json;

int Error(const std::string& message) {
  std::cerr << "scontrol: error: " << message << "\n";
  return 1;
}

int ShowHosts(const std::string& what, const std::vector<std::string>& args) {
  std::string list;
  if (args.size() > 2) {
    for (size_t i = 2; i < args.size(); ++i) list += (list.empty() ? "" : ",") + args[i];
  } else if (const char* env = std::getenv("SLURM_JOB_NODELIST"); env != nullptr && what != "hostlist") {
    list = env;
  } else {
    return Error("give a host list (outside a job, $SLURM_JOB_NODELIST is not set)");
  }
  auto hosts = ExpandHostlist(list);
  if (!hosts.ok()) return Error(hosts.status().message());
  if (what != "hostlist") {
    for (const std::string& h : *hosts) std::cout << h << "\n";
    return 0;
  }
  std::cout << CompressHostlist(*hosts) << "\n";
  return 0;
}

// Mebibytes as Slurm prints them: in the largest unit that divides them.
std::string SlurmMegabytes(int64_t mib) {
  if (mib > 0 && mib % (1024 * 1024) == 0) return std::to_string(mib / (1024 * 1024)) + "T";
  if (mib > 0 && mib % 1024 == 0) return std::to_string(mib / 1024) + "G";
  return std::to_string(mib) + "M";
}

// A job's output file as Slurm shows it: the pattern expanded, absolute.
std::string OutputPath(const json& j, const char* key, const SlurmJob& s) {
  const std::string pattern = j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
  if (pattern.empty()) return "(null)";
  api::OutputNames n;
  n.job = s.id;
  n.array_first = s.array_job;
  n.array_index = s.array_task;
  n.name = s.name;
  n.user = s.user;
  n.node = s.nodes.empty() ? "" : s.nodes.front();
  const std::filesystem::path p = api::ExpandOutputPattern(pattern, n);
  return p.is_absolute() || s.work_dir.empty() ? p.string() : (std::filesystem::path(s.work_dir) / p).string();
}

int ShowJob(const std::vector<std::string>& args) {
  std::string id = args.size() > 2 ? args[2] : "";
  if (id.empty()) {
    const char* env = std::getenv("SLURM_JOB_ID");
    if (env == nullptr) return Error("give a job id (outside a job, $SLURM_JOB_ID is not set)");
    id = env;
  }
  if (id.find_first_not_of("0123456789") != std::string::npos) return Error("Invalid job id specified: " + id);
  Client client(DefaultServer(), "", RetrySeconds());
  auto r = client.Get("/v1/jobs/" + id);
  if (!r.ok()) return Error(r.status().message());
  if (r->status == 404) return Error("Invalid job id specified");
  if (r->status != 200) return Error(Client::ErrorOf(*r).message());
  const json& j = r->body;
  const SlurmJob s = SlurmJobFromJson(j);
  const Time now = SystemClock().Now();
  const int64_t run = !s.start ? 0 : ((s.end ? *s.end : now) - *s.start).millis() / 1000;
  const json slurm = j.contains("slurm") && j["slurm"].is_object() ? j["slurm"] : json::object();
  const int64_t tasks = slurm.value("tasks", s.node_count);
  const int64_t cpus_per_task = slurm.value("cpusPerTask", int64_t{1});
  const int64_t memory_mib = j.contains("resources") ? j["resources"].value("memory", int64_t{0}) >> 20 : 0;
  std::string tres = "cpu=" + std::to_string(s.cpus) + ",mem=" + SlurmMegabytes(memory_mib * s.node_count) +
                     ",node=" + std::to_string(s.node_count) + ",billing=" + std::to_string(s.cpus);
  if (s.gpus_per_node > 0) tres += ",gres/gpu=" + std::to_string(s.gpus_per_node * s.node_count);
  const std::string nodes = s.nodes.empty() ? "(null)" : CompressHostlist(s.nodes);
  const std::optional<Time> begin = j.contains("beginTime") && j["beginTime"].is_string()
                                        ? ParseRfc3339Utc(j["beginTime"].get<std::string>())
                                        : std::nullopt;
  const std::string dependency = SlurmDependencyText(s, JobsByIdFrom(client));
  const std::string limit =
      s.time_limit.is_infinite() ? "UNLIMITED" : SlurmDuration(s.time_limit.millis() / 1000, true);
  std::ostringstream out;
  out << "JobId=" << s.id;
  if (s.array_job > 0) out << " ArrayJobId=" << s.array_job << " ArrayTaskId=" << s.array_task;
  out << " JobName=" << s.name << "\n"
      << "   UserId=" << s.user << "\n"
      << "   Account=" << s.account << " QOS=" << s.qos << "\n"
      << "   JobState=" << s.slurm_state << " Reason=" << s.reason << " Dependency=" << dependency << "\n"
      // Requeue=1: a node failure always requeues the job here.
      << "   Requeue=1 Restarts=" << std::max<int64_t>(0, j.value("attempts", int64_t{1}) - 1)
      << " BatchFlag=" << (j.contains("script") && j["script"].is_string() ? 1 : 0) << " ExitCode="
      << (s.exit_signal > 0 ? 0 : s.exit_code.value_or(0)) << ":" << s.exit_signal << "\n"
      << "   RunTime=" << SlurmDuration(run, true) << " TimeLimit=" << limit << "\n"
      << "   SubmitTime=" << SlurmTime(s.submit) << " EligibleTime=" << SlurmTime(begin ? begin : s.submit) << "\n"
      << "   StartTime=" << SlurmTime(s.start) << " EndTime="
      << (s.end ? SlurmTime(s.end) : s.start && !s.time_limit.is_infinite() ? SlurmTime(*s.start + s.time_limit) : "Unknown")
      << "\n"
      << "   Partition=" << s.partition << "\n"
      << "   NodeList=" << nodes << "\n"
      << "   BatchHost=" << (s.nodes.empty() ? "(null)" : s.nodes.front()) << "\n"
      << "   NumNodes=" << s.node_count << " NumCPUs=" << s.cpus << " NumTasks=" << tasks
      << " CPUs/Task=" << cpus_per_task << "\n"
      << "   NtasksPerN:B:S:C=" << slurm.value("tasksPerNode", int64_t{0}) << ":0:*:*\n"
      << "   TRES=" << tres << "\n"
      << "   MinCPUsNode=" << (s.node_count > 0 ? s.cpus / s.node_count : 0) << " MinMemoryNode=" << SlurmMegabytes(memory_mib) << "\n"
      << "   Features=" << (j.contains("features") && j["features"].is_array() && !j["features"].empty()
                               ? [&] {
                                   std::string f;
                                   for (const json& x : j["features"]) {
                                     // A choice among others is in parentheses: (a|b)&c.
                                     const std::string one = x.get<std::string>();
                                     const bool group = one.find('|') != std::string::npos && j["features"].size() > 1;
                                     f += (f.empty() ? "" : "&") + (group ? "(" + one + ")" : one);
                                   }
                                   return f;
                                 }()
                               : std::string("(null)"))
      << "\n"
      << "   WorkDir=" << (s.work_dir.empty() ? "(null)" : s.work_dir) << "\n"
      << "   StdErr=" << OutputPath(j, j.contains("stderr") && j["stderr"].is_string() ? "stderr" : "stdout", s) << "\n"
      << "   StdIn=/dev/null\n"
      << "   StdOut=" << OutputPath(j, "stdout", s) << "\n";
  std::cout << out.str() << "\n";
  return 0;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A reservation as `scontrol show reservation` prints it; queues are its
// Accounts (Slurm's reservations name accounts, Muster's queues).
// `cpus_of`: each node's CPUs (for CoreCnt and TRES).
void PrintReservation(const json& r, const std::map<std::string, int64_t>& cpus_of) {
  auto list = [&](const char* key) {
    std::string out;
    for (const json& x : r.value(key, json::array())) out += (out.empty() ? "" : ",") + x.get<std::string>();
    return out.empty() ? std::string("(null)") : out;
  };
  const std::optional<Time> start = ParseRfc3339Utc(r.value("start", "")), end = ParseRfc3339Utc(r.value("end", ""));
  std::vector<std::string> nodes = r.value("nodes", std::vector<std::string>());
  const Time now = SystemClock().Now();
  const bool active = start && end && *start <= now && now < *end;
  int64_t cpus = 0;
  for (const std::string& n : nodes) cpus += cpus_of.count(n) ? cpus_of.at(n) : 0;
  // Slurm adds SPEC_NODES (nodes named, not counted) and ALL_NODES.
  const std::string given = list("flags");
  std::string flags = given == "(null)" ? "" : given + ",";
  flags += "SPEC_NODES";
  if (r.value("allNodes", false)) flags += ",ALL_NODES";
  std::cout << "ReservationName=" << r.value("name", "") << " StartTime=" << SlurmTime(start)
            << " EndTime=" << SlurmTime(end)
            << " Duration=" << (start && end ? SlurmDuration((*end - *start).millis() / 1000, true) : "(null)") << "\n"
            << "   Nodes=" << CompressHostlist(nodes) << " NodeCnt=" << nodes.size() << " CoreCnt=" << cpus
            << " Features=(null) PartitionName=(null) Flags=" << flags << "\n"
            << "   TRES=cpu=" << cpus << "\n"
            << "   Users=" << list("users") << " Groups=(null) Accounts=" << list("queues")
            << " Licenses=(null) State=" << (active ? "ACTIVE" : "INACTIVE") << " BurstBuffer=(null) Watts=n/a\n"
            << "   MaxStartDelay=(null)\n\n";
}

int ShowReservations(const std::vector<std::string>& args) {
  Client client(DefaultServer(), "", RetrySeconds());
  auto r = client.Get("/v1/reservations");
  if (!r.ok()) return Error(r.status().message());
  if (r->status != 200) return Error(Client::ErrorOf(*r).message());
  std::map<std::string, int64_t> cpus_of;
  if (auto nodes = client.Get("/v1/nodes"); nodes.ok() && nodes->status == 200) {
    for (const json& n : nodes->body.value("items", json::array())) {
      cpus_of[n.value("name", "")] = n.value("cpuMilli", int64_t{0}) / 1000;
    }
  }
  int shown = 0;
  for (const json& e : r->body.value("items", json::array())) {
    if (args.size() > 2 && e.value("name", "") != args[2]) continue;
    PrintReservation(e, cpus_of);
    ++shown;
  }
  if (shown == 0) {
    if (args.size() > 2) return Error("Reservation " + args[2] + " not found");
    std::cout << "No reservations in the system\n";
  }
  return 0;
}

// scontrol's times: now[+N[units]] (seconds unless minutes, hours, days or
// weeks), or YYYY-MM-DD[THH:MM[:SS]] in local time.
std::optional<Time> SlurmTimeArg(const std::string& v, Time now) {
  const std::string low = Lower(v);
  if (low.rfind("now", 0) == 0) {
    if (low.size() == 3) return now;
    if (low[3] != '+') return std::nullopt;
    size_t used = 0;
    int64_t n = 0;
    try {
      n = std::stoll(low.substr(4), &used);
    } catch (...) {
      return std::nullopt;
    }
    const std::string unit = low.substr(4 + used);
    const int64_t scale = unit.empty() || unit.rfind("sec", 0) == 0 ? 1
                          : unit.rfind("min", 0) == 0               ? 60
                          : unit.rfind("hour", 0) == 0              ? 3600
                          : unit.rfind("day", 0) == 0               ? 86400
                          : unit.rfind("week", 0) == 0              ? 604800
                                                                    : -1;
    if (scale < 0 || n < 0 || n > 10'000'000) return std::nullopt;
    return now + Duration::Seconds(n * scale);
  }
  std::tm tm{};
  tm.tm_isdst = -1;
  const char* rest = ::strptime(v.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr || *rest != '\0') {
    tm = {};
    tm.tm_isdst = -1;
    rest = ::strptime(v.c_str(), "%Y-%m-%dT%H:%M", &tm);
  }
  if (rest == nullptr || *rest != '\0') {
    tm = {};
    tm.tm_isdst = -1;
    rest = ::strptime(v.c_str(), "%Y-%m-%d", &tm);
  }
  if (rest == nullptr || *rest != '\0') return std::nullopt;
  const std::time_t t = std::mktime(&tm);
  if (t == -1) return std::nullopt;
  return Time::FromMillis(static_cast<int64_t>(t) * 1000);
}

// scontrol create reservation KEY=VALUE...: ReservationName, StartTime,
// EndTime or Duration (minutes, or [days-]hours:minutes:seconds), Nodes (a
// host list, or ALL), Users, Accounts (Muster's queues), Flags (IGNORE_JOBS,
// MAINT, OVERLAP).
int CreateReservation(const std::vector<std::string>& args) {
  json body = json::object();
  const Time now = SystemClock().Now();
  for (size_t i = 2; i < args.size(); ++i) {
    const size_t eq = args[i].find('=');
    if (eq == std::string::npos) return Error("expected KEY=VALUE, got \"" + args[i] + "\"");
    const std::string key = Lower(args[i].substr(0, eq)), value = args[i].substr(eq + 1);
    auto split = [&] {
      std::vector<std::string> out;
      std::stringstream in(value);
      for (std::string x; std::getline(in, x, ',');) {
        if (!x.empty()) out.push_back(x);
      }
      return out;
    };
    if (key == "reservationname" || key == "reservation" || key == "name") {
      body["name"] = value;
    } else if (key == "starttime" || key == "endtime") {
      const std::optional<Time> t = SlurmTimeArg(value, now);
      if (!t) return Error("Invalid time specification " + value);
      body[key == "starttime" ? "start" : "end"] = FormatRfc3339Utc(*t);
    } else if (key == "duration") {
      std::string d = value;
      if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) d += "m";  // minutes, as Slurm
      body["duration"] = d;
    } else if ((key == "nodes" || key == "nodelist") && value == "ALL") {
      body["nodes"] = "ALL";
    } else if (key == "nodes" || key == "nodelist") {
      auto hosts = ExpandHostlist(value);
      if (!hosts.ok()) return Error(hosts.status().message());
      body["nodes"] = *hosts;
    } else if (key == "users") {
      body["users"] = split();
    } else if (key == "accounts") {
      body["queues"] = split();
    } else if (key == "flags") {
      body["flags"] = split();  // the server names a flag it does not take
    } else if (key == "partitionname" || key == "features" || key == "tres") {
      return Error(args[i].substr(0, eq) +
                   " is not supported here (a reservation holds named nodes for users or "
                   "queues)");
    } else {
      return Error("Invalid input: " + args[i]);
    }
  }
  Client client(DefaultServer(), "", RetrySeconds());
  auto r = client.Post("/v1/reservations", body.dump(), "application/json");
  if (!r.ok()) return Error(r.status().message());
  if (r->status != 201) return Error("Error creating the reservation: " + Client::ErrorOf(*r).message());
  std::cout << "Reservation created: " << r->body.value("name", "") << "\n";
  return 0;
}

int DeleteReservation(const std::string& name) {
  Client client(DefaultServer(), "", RetrySeconds());
  auto r = client.Delete("/v1/reservations/" + UrlEncode(name));
  if (!r.ok()) return Error(r.status().message());
  if (r->status != 200) return Error("Error deleting the reservation: " + Client::ErrorOf(*r).message());
  return 0;
}

}  // namespace

int RunScontrol(const std::vector<std::string>& args) {
  const std::string supported =
      "show hostnames [LIST], show hostlist LIST, show job [ID], show reservation [NAME], create reservation "
      "KEY=VALUE..., delete ReservationName=NAME";
  if (args.size() >= 2 && args[0] == "create" && Lower(args[1]).rfind("res", 0) == 0) return CreateReservation(args);
  if (args.size() == 2 && args[0] == "delete" && Lower(args[1]).rfind("reservationname=", 0) == 0) {
    return DeleteReservation(args[1].substr(args[1].find('=') + 1));
  }
  if (args.size() < 2 || args[0] != "show") return Error("only these are supported here yet: " + supported);
  const std::string& what = args[1];
  if (what == "hostnames" || what == "hostname" || what == "hostlist") return ShowHosts(what, args);
  if (what == "job" || what == "jobs") return ShowJob(args);
  if (Lower(what).rfind("res", 0) == 0) return ShowReservations(args);
  return Error("\"show " + what + "\" is not supported here yet (" + supported + ")");
}

}  // namespace muster::cli
