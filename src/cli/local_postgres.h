// A local PostgreSQL server for `muster dev --ha`: Debian's postgresql-15
// (scripts/install-deps.sh) initialized once in DIR/data, started on a free
// loopback port with trust authentication, database "muster". As root the
// server runs as the unprivileged "postgres" user, as PostgreSQL requires.
// For trying high availability on one machine, not for production.
#pragma once

#include <string>

#include "common/status.h"

namespace muster::cli {

class LocalPostgres {
 public:
  // Starts it (initdb first if DIR/data is empty); the store URL.
  static StatusOr<LocalPostgres> Start(const std::string& dir);
  // Stops it (fast shutdown); once.
  void Stop();
  const std::string& url() const { return url_; }

 private:
  std::string dir_, bin_, url_;
  bool running_ = false;
};

}  // namespace muster::cli
