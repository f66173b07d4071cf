// A real PostgreSQL server for tests: initdb in a fresh temporary directory,
// started with pg_ctl on a free TCP port of 127.0.0.1, trust authentication
// for the superuser "muster". As root, every PostgreSQL program runs as the
// unprivileged "postgres" user (Debian's postgresql-15 creates it):
// PostgreSQL refuses to run as root.
//
//   auto pg = PgInstance::Start();          // skip the test when !pg
//   std::string url = pg->Url("muster");    // postgresql://muster@127.0.0.1:PORT/muster
//
// A streaming replica (pg_basebackup -R) and its promotion, and the ways a
// primary is lost (immediate stop, SIGKILL), are here for the failover tests.
// The binaries are found under /usr/lib/postgresql/*/bin, or in
// $MUSTER_PG_BINDIR.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "free_port.h"
#include "run_binary.h"
#include "wait_for.h"

namespace muster::testing {

class PgInstance {
 public:
  // The directory of initdb and pg_ctl, or empty when PostgreSQL is not installed.
  static std::string BinDir() {
    if (const char* dir = std::getenv("MUSTER_PG_BINDIR"); dir != nullptr && *dir != '\0') return dir;
    std::string best;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
      const std::string bin = e.path().string() + "/bin";
      if (std::filesystem::exists(bin + "/initdb") && bin > best) best = bin;
    }
    return best;
  }

  // Starts a new, empty server; nullptr (with the reason in *why) when it cannot.
  static std::unique_ptr<PgInstance> Start(std::string* why = nullptr) {
    auto pg = std::unique_ptr<PgInstance>(new PgInstance());
    std::string error = pg->Init();
    if (error.empty()) error = pg->Launch();
    if (!error.empty()) {
      if (why != nullptr) *why = error;
      return nullptr;
    }
    return pg;
  }

  ~PgInstance() {
    if (running_) Run("stop -m immediate");
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  PgInstance(const PgInstance&) = delete;
  PgInstance& operator=(const PgInstance&) = delete;

  int port() const { return port_; }
  const std::string& log_path() const { return log_; }
  // A libpq URL for database `db` on this server.
  std::string Url(const std::string& db = "postgres") const {
    return "postgresql://muster@127.0.0.1:" + std::to_string(port_) + "/" + db;
  }

  // Runs SQL with psql; returns its output (unaligned, tuples only), or
  // nullopt when psql failed.
  std::optional<std::string> Sql(const std::string& sql, const std::string& db = "postgres") const {
    const CommandResult r = RunCommand("psql -X -q -A -t -v ON_ERROR_STOP=1 '" + Url(db) + "' -c " + Quote(sql));
    if (r.code != 0) return std::nullopt;
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  bool CreateDatabase(const std::string& name) const { return Sql("CREATE DATABASE " + name).has_value(); }

  // A streaming replica of this server (which must be running), started.
  std::unique_ptr<PgInstance> StartReplica(std::string* why = nullptr) const {
    auto replica = std::unique_ptr<PgInstance>(new PgInstance());
    std::string error = replica->MakeRoot();
    if (error.empty()) {
      const CommandResult r = RunCommand(replica->As() + BinDir() + "/pg_basebackup -R -X stream -c fast -D " +
                                         replica->data_ + " -d " + Quote(Url() + "?application_name=replica"));
      if (r.code != 0) error = "pg_basebackup: " + r.out;
    }
    if (error.empty()) error = replica->Launch();
    if (!error.empty()) {
      if (why != nullptr) *why = error;
      return nullptr;
    }
    return replica;
  }
  // Makes a replica the primary (pg_ctl promote, waiting for it).
  bool Promote() { return Run("promote -w").code == 0; }
  // True once the replica has replayed everything it received.
  std::optional<std::string> ReplayLsn() const { return Sql("SELECT pg_last_wal_replay_lsn()"); }

  // Loses the server as a crash would: SIGKILL to the postmaster and every backend.
  void Kill() {
    const pid_t pid = PostmasterPid();
    if (pid > 0) {
      RunCommand("pkill -KILL -P " + std::to_string(pid));
      ::kill(pid, SIGKILL);
    }
    WaitFor([&] { return !(pid > 0 && ::kill(pid, 0) == 0); }, std::chrono::seconds(5));
    running_ = false;
  }
  // Stops it now (no checkpoint: like a crash, but it waits for the processes to end).
  void StopImmediately() {
    Run("stop -m immediate");
    running_ = false;
  }
  // Starts it again after Kill or StopImmediately, on the same port.
  std::string Restart() { return Launch(); }

 private:
  PgInstance() = default;

  static std::string Quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  }
  // The prefix that runs a program as the unprivileged user, when root.
  std::string As() const { return ::geteuid() == 0 ? "runuser -u postgres -- " : ""; }
  CommandResult Run(const std::string& args) const {
    return RunCommand(As() + BinDir() + "/pg_ctl -D " + data_ + " " + args);
  }
  pid_t PostmasterPid() const {
    std::ifstream in(data_ + "/postmaster.pid");
    long pid = 0;
    in >> pid;
    return static_cast<pid_t>(pid);
  }

  std::string MakeRoot() {
    if (BinDir().empty()) return "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)";
    char tmpl[] = "/tmp/muster-pg-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return "mkdtemp failed";
    root_ = tmpl;
    data_ = root_ + "/data";
    log_ = root_ + "/postgres.log";
    if (::geteuid() == 0 && RunCommand("chown postgres " + root_).code != 0) {
      return "cannot give " + root_ + " to the postgres user (is postgresql-15 installed?)";
    }
    return "";
  }
  std::string Init() {
    if (std::string error = MakeRoot(); !error.empty()) return error;
    const CommandResult r =
        RunCommand(As() + BinDir() + "/initdb -D " + data_ + " -U muster --auth=trust -N -E UTF8 --locale=C");
    if (r.code != 0) return "initdb: " + r.out;
    // Streaming replication to a replica on this machine.
    std::ofstream(data_ + "/pg_hba.conf", std::ios::app) << "host replication muster 127.0.0.1/32 trust\n";
    return "";
  }
  std::string Launch() {
    if (port_ == 0) port_ = FreeLoopbackPort();
    const std::string options = "-p " + std::to_string(port_) + " -k " + root_ +
                                " -c listen_addresses=127.0.0.1 -c max_connections=200 -c wal_level=replica"
                                " -c max_wal_senders=4 -c hot_standby=on";
    const CommandResult r = Run("-l " + log_ + " -w -t 60 -o " + Quote(options) + " start");
    if (r.code != 0) return "pg_ctl start: " + r.out;
    running_ = true;
    return "";
  }

  std::string root_, data_, log_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace muster::testing
