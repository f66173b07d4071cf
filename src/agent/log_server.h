// LogServer: the agent's log port. Serves a task's log to a caller that
// holds the server's grant for that task (auth/grants.h); the server
// decides who may read a log, and fetches it from here for them (muster
// logs).
//
//   GET /logs/KEY[?offset=N | ?tail=N]
//     KEY: a task key (jNNN.aNNN.rNNN); 400 for anything else.
//     The grant in X-Muster-Grant, else 403; 404 when the task has no log.
//     The bytes from `offset` (at most 4 MiB a request), or the last
//     `tail` lines; X-Muster-Log-Offset: the offset after them.
//
// Over TLS when asked (an agent whose server is https://): the certificate
// is self-signed for the node's name, and the server pins it (tls_pin(),
// sent in every sync). It serves on a thread of its own, with two workers.
//
// Thread-safety: Start and the destructor from one thread; port() and
// tls_pin() from any.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"

namespace muster::http {
class Server;
}

namespace muster::agent {

class LogServer {
 public:
  struct Options {
    std::string host;
    int port = 0;          // 0: any free port
    std::string tls_name;  // not empty: TLS, with a certificate made for this name
  };
  // `grant_key`: what the server signs grants with (the digest of the
  // node's token); `log_path`: the log file of a task, by its key.
  static StatusOr<std::unique_ptr<LogServer>> Start(const Options& options, std::string grant_key, const Clock& clock,
                                                    std::function<std::string(const std::string&)> log_path);
  ~LogServer();  // stops serving and joins its thread
  LogServer(const LogServer&) = delete;
  LogServer& operator=(const LogServer&) = delete;

  // Ends the serving (idempotent); the destructor joins.
  void Stop();
  int port() const { return port_; }
  const std::string& tls_pin() const { return tls_pin_; }  // "": plain HTTP

 private:
  LogServer(std::string grant_key, const Clock& clock, std::function<std::string(const std::string&)> log_path);

  const std::string grant_key_;
  const Clock& clock_;
  const std::function<std::string(const std::string&)> log_path_;
  std::unique_ptr<http::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::string tls_pin_;
};

// Whether `key` is a task key (jNNN.aNNN.rNNN).
bool ValidTaskKey(const std::string& key);
// The output of a task's log: from `offset`, or its last `tail` lines (-1:
// not asked), at most 4 MiB. Returns (bytes, the offset after them).
std::pair<std::string, int64_t> ReadLog(const std::string& path, int64_t offset, int64_t tail);

}  // namespace muster::agent
