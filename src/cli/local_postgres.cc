#include "cli/local_postgres.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace muster::cli {
namespace {

namespace fs = std::filesystem;

// The newest /usr/lib/postgresql/*/bin with an initdb, or "".
std::string FindBin() {
  std::string best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string bin = e.path().string() + "/bin";
    if (fs::exists(bin + "/initdb") && bin > best) best = bin;
  }
  return best;
}

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

// Runs a shell command line quietly; true when it succeeded.
bool Run(const std::string& line) { return std::system((line + " >/dev/null 2>&1").c_str()) == 0; }

std::string As() { return ::geteuid() == 0 ? "runuser -u postgres -- " : ""; }

}  // namespace

StatusOr<LocalPostgres> LocalPostgres::Start(const std::string& dir) {
  LocalPostgres pg;
  pg.dir_ = dir;
  pg.bin_ = FindBin();
  if (pg.bin_.empty()) {
    return FailedPrecondition(
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run "
        "scripts/install-deps.sh, or apt-get install postgresql-15");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (::geteuid() == 0 && !Run("chown postgres '" + dir + "'")) {
    return FailedPrecondition("cannot give " + dir + " to the postgres user");
  }
  if (!fs::exists(dir + "/data/PG_VERSION") &&
      !Run(As() + pg.bin_ + "/initdb -D '" + dir + "/data' -U muster --auth=trust -E UTF8 --locale=C")) {
    return Internal("initdb in " + dir + "/data failed");
  }
  const int port = FreePort();
  if (!Run(As() + pg.bin_ + "/pg_ctl -D '" + dir + "/data' -l '" + dir + "/postgres.log' -w -o '-p " +
           std::to_string(port) + " -k " + dir + " -c listen_addresses=127.0.0.1' start")) {
    return Internal("PostgreSQL did not start; see " + dir + "/postgres.log");
  }
  pg.running_ = true;
  const std::string base = "postgresql://muster@127.0.0.1:" + std::to_string(port);
  (void)Run("psql -X -q '" + base + "/postgres' -c 'CREATE DATABASE muster'");  // there already after a first run
  pg.url_ = base + "/muster";
  return pg;
}

void LocalPostgres::Stop() {
  if (!running_) return;
  running_ = false;
  (void)Run(As() + bin_ + "/pg_ctl -D '" + dir_ + "/data' -m fast stop");
}

}  // namespace muster::cli
