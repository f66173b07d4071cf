// Client: the CLI's connection to `muster server`.
//
// The address comes from --server, else MUSTER_SERVER, else
// http://127.0.0.1:8470; several, comma-separated, name the servers of one
// cluster, and requests go to whichever leads (http/failover_client.h). Every request names the user (X-Muster-User: from
// --user, else $USER). Connection failures are retried with backoff for
// `retry_for`; a submit carries one Idempotency-Key across its retries, so a
// retried submit never queues a job twice.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace muster::http {
class FailoverClient;
struct ClientResponse;
}

namespace muster::cli {

struct Response {
  int status = 0;
  nlohmann::json body;
  std::string text;                            // the raw body
  std::map<std::string, std::string> headers;  // those GetText was asked for
};

class Client {
 public:
  Client(std::string server, std::string user, double retry_for_seconds = 10.0);
  ~Client();

  StatusOr<Response> Get(const std::string& path);
  // A GET whose answer is text when it succeeds (logs) and a JSON error
  // otherwise; `headers` names the response headers to keep.
  StatusOr<Response> GetText(const std::string& path, const std::vector<std::string>& headers);
  StatusOr<Response> Post(const std::string& path, const std::string& body, const std::string& content_type,
                          const std::map<std::string, std::string>& headers = {});
  // Sent again without an answer, as Post: a deletion is idempotent.
  StatusOr<Response> Delete(const std::string& path);

  // The error of a non-2xx response, as a Status (message includes the field).
  static Status ErrorOf(const Response& r);
  const std::string& server() const { return server_; }

 private:
  std::string server_;
  std::string user_;
  double retry_for_;
  Status Unreachable(const Status& why) const;
  // Calls `send` until it has an answer to keep, within retry_for_ seconds
  // (then the last answer, or Unreachable).
  StatusOr<http::ClientResponse> Exchange(const std::function<StatusOr<http::ClientResponse>()>& send,
                                          bool retry_busy = false);

  std::unique_ptr<http::FailoverClient> http_;
};

// $MUSTER_SERVER, else http://127.0.0.1:8470.
std::string DefaultServer();
// $USER, else the account this process runs as.
std::string DefaultUser();

// A random RFC 4122 version 4 UUID, for idempotency keys.
std::string NewUuid();

}  // namespace muster::cli
