// Client: a blocking HTTP/1.1 client for one server, used by the CLI, the
// agent (its syncs) and the server (an agent's logs).
//
// One connection, kept alive and reused while the server keeps it open. A
// request sent on a reused connection that the server had already closed
// (it closes idle connections) is sent again once on a new connection, when
// nothing of an answer had arrived.
//
// Answers are read by Content-Length, chunked transfer coding, or until the
// server closes. Every wait is bounded: connecting by `connect_timeout`,
// sending by `write_timeout`, and the whole answer by `read_timeout`.
// TLS (tls.h) for https:// servers, verified by `tls.ca_file` (default: the
// system's CAs) and the host's name, or by a pin; the handshake is part of
// connecting, and nothing is sent before the server is verified.
//
//   http::Client c("http://127.0.0.1:8470");
//   StatusOr<http::ClientResponse> r = c.Get("/v1/jobs?limit=10", {{"Authorization", "Bearer " + token}});
//   if (r.ok() && r->status == 200) Use(r->body);
//
// A transport failure (no connection, a timeout, a malformed answer, an
// interruption) is a kUnavailable Status saying what failed (callers say
// which server); a TLS handshake that fails (a certificate not verified, a
// server not speaking TLS) is kUnauthenticated; any HTTP status is an
// answer.
//
// Thread-safety: one request at a time; Interrupt() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/message.h"
#include "http/tls.h"

namespace muster::http {

struct ClientResponse {
  int status = 0;
  Fields headers;
  std::string body;

  // The first header named `name` (any case); "" when absent.
  std::string_view Header(std::string_view name) const;
};

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds write_timeout{10'000};
  std::chrono::milliseconds read_timeout{60'000};
  size_t max_body_bytes = size_t{1} << 30;  // a larger answer is an error
  TlsClientOptions tls;                     // how an https:// server is verified
};

// Reads one answer (after any interim 1xx ones) from the start of `buf`,
// calling `more` whenever it needs more bytes: `more` appends at least one
// byte and returns true, or returns false when the peer has closed, or
// fails. What follows the answer stays in `buf`. `keep_alive`: whether the
// connection may carry another request. The client's own reader, apart
// from its sockets (and the fuzz target's).
// With `sink`, a 2xx answer in chunks gives each chunk's data to it as it
// is read, not to the body; false from the sink ends the answer there
// (returned as it is, and the connection may carry nothing more).
using MoreBytes = std::function<StatusOr<bool>(std::string& buf)>;
using ChunkSink = std::function<bool(std::string_view data)>;
StatusOr<ClientResponse> ReadResponse(std::string& buf, const MoreBytes& more, bool head_only, bool& keep_alive,
                                      size_t max_body_bytes = ClientOptions{}.max_body_bytes,
                                      const ChunkSink* sink = nullptr);

class Client {
 public:
  using Options = ClientOptions;

  // `server`: "http://HOST:PORT", "https://HOST:PORT", "HOST:PORT" (plain),
  // or without the port (80, 443); HOST may be a name, an IPv4 address or a
  // bracketed IPv6 address. A malformed address fails every request with
  // kInvalidArgument.
  explicit Client(std::string server, Options options = {});
  // A host (name or address; IPv6 without brackets) and a port; `tls`:
  // speak TLS to it.
  Client(std::string host, int port, Options options = {}, bool tls = false);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  StatusOr<ClientResponse> Get(std::string_view target, const Fields& headers = {});
  StatusOr<ClientResponse> Post(std::string_view target, std::string_view body, std::string_view content_type,
                                const Fields& headers = {});
  // `target`: origin form ("/path?query"), sent as given.
  StatusOr<ClientResponse> Send(std::string_view method, std::string_view target, const Fields& headers,
                                std::string_view body, std::string_view content_type);

  // GET `target`, answered by a stream (a watch): each chunk's data goes to
  // `on_data` as it arrives; false from it ends the stream (the connection
  // is closed). read_timeout bounds each silence of the server,
  // not the whole answer. An answer that is not a 2xx stream comes back
  // whole, as from Get; a stream the server ends, with an empty body.
  StatusOr<ClientResponse> Stream(std::string_view target, const Fields& headers, const ChunkSink& on_data);

  void set_read_timeout(std::chrono::milliseconds t) { options_.read_timeout = t; }

  // Ends the request in progress now (it fails, "interrupted"), or the next
  // one if none is in progress, and closes the connection.
  void Interrupt();

 private:
  Status Connect(std::chrono::steady_clock::time_point deadline);
  Status Handshake(std::chrono::steady_clock::time_point deadline);
  void CloseConnection();
  // One attempt on the current connection. `*received` says whether any
  // byte of an answer arrived.
  StatusOr<ClientResponse> Exchange(const std::string& request, bool head_only, bool* received, const ChunkSink* sink);
  StatusOr<ClientResponse> Request(std::string_view method, std::string_view target, const Fields& headers,
                                   std::string_view body, std::string_view content_type, const ChunkSink* sink);

  // read(2)/send(2) on the connection, through TLS when it has it; on
  // EAGAIN, *events: what to wait for.
  ssize_t Receive(char* buf, size_t n, short* events);
  ssize_t Transmit(const char* buf, size_t n, short* events);
  Status TransportFailure(const std::string& what, int err) const;

  std::string host_;
  int port_ = 0;
  bool tls_ = false;
  std::shared_ptr<TlsClientContext> tls_context_;  // made at the first connection
  std::unique_ptr<TlsStream> stream_;              // the connection's TLS; with fd_
  Status address_error_;
  Options options_;
  std::mutex fd_mu_;  // guards fd_ against Interrupt()
  int fd_ = -1;
  std::atomic<bool> interrupted_{false};
};

}  // namespace muster::http
