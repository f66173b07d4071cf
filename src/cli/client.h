// Client: the CLI's connection to `muster server`.
//
// The address comes from --server, else MUSTER_SERVER, else
// http://127.0.0.1:8470; several, comma-separated, name the servers of one
// cluster, and requests go to whichever leads (http/failover_client.h). An
// https:// server is verified by the CAs of --ca, else MUSTER_CA, else the
// system's.
// Every request carries the caller's credential, found as
// auth/client_credential.h says (munged, a token file, $MUSTER_TOKEN); an
// admin may act for another user (--as: X-Muster-Act-As, recorded in the
// server's audit log). Connection failures are retried with backoff for
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
}  // namespace muster::http

namespace muster::auth {
class ClientCredential;
}

namespace CLI {
class App;
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
  // `act_as`: "" for oneself.
  Client(std::string server, std::string act_as, double retry_for_seconds = 10.0);
  ~Client();

  StatusOr<Response> Get(const std::string& path);
  // A GET whose answer is text when it succeeds (logs) and a JSON error
  // otherwise; `headers` names the response headers to keep.
  StatusOr<Response> GetText(const std::string& path, const std::vector<std::string>& headers);
  StatusOr<Response> Post(const std::string& path, const std::string& body, const std::string& content_type,
                          const std::map<std::string, std::string>& headers = {});
  // Sent again without an answer, as Post: a PUT (a JSON body) and a
  // deletion are idempotent.
  StatusOr<Response> Put(const std::string& path, const std::string& json_body);
  StatusOr<Response> Delete(const std::string& path);
  // A GET answered by a stream of lines (a watch): each line, as it comes,
  // to `line`; false from it ends the watch. Returns when the server ends
  // the stream (status 200, no body), when `line` says stop, with the
  // server's error answer, or with the transport's failure.
  StatusOr<Response> Watch(const std::string& path, const std::function<bool(std::string_view line)>& line);

  // The error of a non-2xx response, as a Status (message includes the field).
  static Status ErrorOf(const Response& r);
  const std::string& server() const { return server_; }

 private:
  std::string server_;
  std::string act_as_;
  double retry_for_;
  // The credential, or why none could be read (an unsafe token file).
  std::unique_ptr<auth::ClientCredential> credential_;
  Status credential_error_;
  // The headers of one request: its credential (a MUNGE one is made for
  // each request), and X-Muster-Act-As.
  StatusOr<std::vector<std::pair<std::string, std::string>>> Headers(std::string_view method, std::string_view target,
                                                                     std::string_view body);
  // The answer; a 401's message also says what credential was sent.
  StatusOr<Response> Decoded(const http::ClientResponse& r) const;
  Status Unreachable(const Status& why) const;
  // Calls `send` until it has an answer to keep, within retry_for_ seconds
  // (then the last answer, or Unreachable).
  StatusOr<http::ClientResponse> Exchange(const std::function<StatusOr<http::ClientResponse>()>& send,
                                          bool retry_busy = false);

  std::unique_ptr<http::FailoverClient> http_;
};

// $MUSTER_SERVER, else http://127.0.0.1:8470.
std::string DefaultServer();

// How long a command retries a server it cannot reach: $MUSTER_RETRY_SECONDS,
// else 10 (Client's retry_for).
double RetrySeconds();

// j[key] when it is a string, else "" (reading answers leniently).
std::string StringField(const nlohmann::json& j, const char* key);

// Adds --server (into `server`, which should hold DefaultServer()) and --ca
// (into $MUSTER_CA, which Client reads) to a subcommand.
void AddServerOptions(CLI::App* sub, std::string& server);

// A query parameter's value, percent-encoded (commas kept: lists such as
// state=PENDING,RUNNING).
std::string UrlEncode(const std::string& v);

// A random RFC 4122 version 4 UUID, for idempotency keys.
std::string NewUuid();

}  // namespace muster::cli
