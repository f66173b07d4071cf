// FailoverClient: an http::Client for a group of servers of which one leads
// (several `muster server` processes on one PostgreSQL store).
//
//   http::FailoverClient c("http://a:8470,http://b:8470,http://c:8470");
//   auto r = c.Post("/v1/jobs", body, "application/json", headers);
//
// Before its first request, the client finds the leader: it asks each
// server's GET /healthz in turn, with a short timeout (a paused server
// accepts connections and never answers), until one says it leads or names
// the leader. A request then goes to the server that answered last. When
// that one cannot be
// reached, or answers that it does not lead (503 with an X-Muster-Role
// header: a standby, one taking over, one stepping down), the request goes
// at once to the leader the answer names (X-Muster-Leader), else to the
// next server, each at most once per request. When none leads, the result
// is kUnavailable naming what each said, and the caller retries as it would
// for one unreachable server. A request only goes elsewhere when the server
// did not act on it (no connection, or refused before any work), so this
// adds no duplicate.
//
// With one address it is exactly an http::Client.
//
// Thread-safety: one request at a time; Interrupt() from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "http/client.h"

namespace muster::http {

// "a,b,c" -> {"a", "b", "c"}, spaces trimmed, empty entries dropped.
std::vector<std::string> SplitServers(std::string_view list);

// The index of the server that answers GET /healthz as leader (each asked
// in turn, `timeout` each), or -1; `seen` (if not null) then gets what each
// said. Only a server's word about itself counts: a standby may name a
// leader that is paused.
int FindLeader(const std::vector<std::string>& servers, std::chrono::milliseconds timeout, std::string* seen,
               const TlsClientOptions& tls = {});

class FailoverClient {
 public:
  explicit FailoverClient(std::string_view servers, ClientOptions options = {});
  ~FailoverClient();

  StatusOr<ClientResponse> Get(std::string_view target, const Fields& headers = {});
  StatusOr<ClientResponse> Post(std::string_view target, std::string_view body, std::string_view content_type,
                                const Fields& headers = {});
  StatusOr<ClientResponse> Send(std::string_view method, std::string_view target, const Fields& headers,
                                std::string_view body, std::string_view content_type);
  // Client::Stream, from the leader.
  StatusOr<ClientResponse> Stream(std::string_view target, const Fields& headers, const ChunkSink& on_data);

  void set_read_timeout(std::chrono::milliseconds t);
  // Ends the request in progress now (it fails, "interrupted"), or the next one.
  void Interrupt();
  // The server that answered last (the leader, as far as is known).
  std::string current() const;

 private:
  // `call` on the leader: found first, and again once if it fails or does not lead.
  StatusOr<ClientResponse> OnLeader(const std::function<StatusOr<ClientResponse>(Client&)>& call);
  Client& At(size_t i);  // and makes it the current one
  // Makes the leader current, if one answers as such; true if found.
  // Otherwise `seen` (if not null) gets what each server said.
  bool Locate(std::string* seen);

  std::vector<std::string> servers_;
  ClientOptions options_;
  std::vector<std::unique_ptr<Client>> clients_;
  mutable std::mutex mu_;  // guards current_ against Interrupt()
  size_t current_ = 0;
  bool located_ = false;  // Locate() ran since the last time no server led
};

}  // namespace muster::http
