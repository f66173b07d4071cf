// Server: an HTTP/1.1 server with one event-loop thread for every
// connection, and a pool of worker threads for handlers that block.
//
// Why not a thread per connection: a submit is small and the server's cost
// is mostly the request path itself. One thread owns every socket (epoll,
// edge-triggered, non-blocking), reads and parses requests, and writes each
// answer with one send(); handlers run where they belong:
//   - Handle(): a blocking handler (a store read, an agent's waiting sync,
//     a call through the control loop). It runs on a worker thread; a worker
//     is held for as long as the handler blocks.
//   - HandleAsync(): a handler that must not block. It runs on the event
//     loop and answers later, from any thread, through its Reply (the submit
//     path: the answer comes from the store writer once the job is durable).
//     A request its route's `on_worker` picks (a body slow to parse) runs
//     the same handler on a worker instead, so the loop never waits on it.
//
// Connections: keep-alive (HTTP/1.1 by default, 1.0 on request), pipelined
// requests answered in order one at a time, "Expect: 100-continue" honoured,
// HEAD answered as GET without the body.
// TLS (tls.h) when the options give a context: each connection's handshake
// is done on the loop as its first bytes arrive, and must be done within
// `read_timeout`.
// Bounds: head size and fields (request_parser.h), body size (413), idle
// timeout, a deadline for each request from its first byte (a request not
// whole in time gets 408, however slowly it trickles), connections in all
// (503), and answers a client has not read (it is not read from until it
// reads). Connections are counted by who holds them, so that one party
// cannot lock out others at its address: a connection is anonymous until a
// request on it is authenticated (the filter sets Request::principal), then
// its principal's. Anonymous ones are bounded per address: past the bound
// the oldest of them that waits for a request's head is closed to make
// room (503 to the newcomer only when none does), and one that sends no
// whole request within `first_request_timeout` is closed. A principal's
// are bounded too (503 to the request past the bound). After an error the connection is closed
// gracefully: the answer is sent, the write side shut, and what the peer
// still sends is read and dropped for a moment (a fixed one), so the peer
// reads the answer instead of a reset.
//
// Streams: an answer that goes on (a watch) is sent with chunked transfer
// coding. Reply::Start sends its head; each Stream::Write, from any
// thread, one chunk; End the last, and the connection serves its next
// request. A stream is not an answer in flight: Stop ends every stream
// (its last chunk, then the close) without waiting for it. A client too
// slow to read (unsent bytes past max_unsent_bytes), or silent with bytes
// unsent for read_timeout, is closed; so is one that hangs up.
//
// Errors the server finds itself (malformed request, no such route, body too
// large, ...) are answered through the ErrorBody callback, so that every
// error has the application's shape.
//
// Thread-safety: Handle*, Set* and Bind before Serve; Stop and Reply from
// any thread. Serve returns after Stop once every request in flight has
// been answered (it waits for them) and the workers have finished: so no
// unanswered Reply outlives a server that served.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "http/message.h"
#include "http/request_parser.h"
#include "http/router.h"
#include "http/tls.h"

namespace muster::http {

class Server {
 public:
  struct Options {
    std::string host = "127.0.0.1";
    int port = 0;  // 0: a free port (see port())
    int worker_threads = 8;
    int64_t max_body_bytes = 1 << 20;
    HeadLimits head_limits;
    std::chrono::milliseconds idle_timeout{60'000};  // a kept-alive connection with no request
    std::chrono::milliseconds read_timeout{30'000};  // from a request's first byte until it is whole
    // A new connection that has sent no whole request yet: closed after
    // this (or idle_timeout, when shorter).
    std::chrono::milliseconds first_request_timeout{10'000};
    size_t max_connections = 10'000;
    size_t max_connections_per_client = 1'000;     // anonymous ones from one address; 0: no bound
    size_t max_connections_per_principal = 1'000;  // of one principal; 0: no bound
    // Answers not yet taken by a client: past this, its connection's next
    // requests are neither read nor handled until it reads.
    size_t max_unsent_bytes = 1 << 20;
    std::shared_ptr<const TlsServerContext> tls;  // null: plain HTTP
  };

  // A streamed answer (see above). Copies share the stream.
  class Stream {
   public:
    // Sends `data` as one chunk (nothing when empty). False, sending
    // nothing, once the stream is over: ended, its client gone or too
    // slow, or the server stopping or destroyed.
    bool Write(std::string data) const;
    // The last chunk; Write returns false from now on.
    void End() const;
    bool open() const;

    struct State;
    // Null: a stream that is over before it began.
    explicit Stream(std::shared_ptr<State> state) : state_(std::move(state)) {}

   private:
    std::shared_ptr<State> state_;
  };

  // Answers a request; call exactly once, from any thread. A Reply dropped
  // unanswered answers 500 (a handler's bug must not hang the client).
  class Reply {
   public:
    void operator()(Response response) const;
    // Answers with what `make` returns, called on the event loop: an answer
    // that takes work to write is written there, not on the thread that
    // learned the outcome (the store writer, whose next commit waits).
    void operator()(std::function<Response()> make) const;
    // Answers with a stream: `head`'s status (2xx), type and headers, its
    // body ignored. A HEAD request gets the head alone, and the stream is
    // over at once; so is one started on an answered Reply.
    Stream Start(Response head) const;
    struct Token;
    explicit Reply(std::shared_ptr<Token> token) : token_(std::move(token)) {}

   private:
    std::shared_ptr<Token> token_;
  };

  using Handler = std::function<void(const Request&, Response&)>;
  using AsyncHandler = std::function<void(Request&&, Reply)>;
  // Runs on the event loop before routing; true: it answered in the
  // Response. It may set the request's `context` for the handler.
  using Filter = std::function<bool(Request&, Response&)>;
  // Runs on the event loop just before an answer to a request for `path`
  // is sent; it may change or replace the answer.
  using AnswerFilter = std::function<void(const std::string& path, Response&)>;
  // Fills the answer for an error the server found: status and a message
  // for people (`method` and `path` are those of the request, or empty).
  using ErrorBody = std::function<void(int status, const std::string& message, Response&)>;
  // One answered request, for an access log: called on the event loop as
  // its answer is sent (errors the server found itself included, with
  // what is known of the request). Must be quick.
  struct Access {
    std::string_view remote, method, target, principal;  // "" when unknown
    int status = 0;
    size_t body_bytes = 0;
    double seconds = 0;  // from the request's arrival, whole, to its answer
  };
  using AccessLog = std::function<void(const Access&)>;

  explicit Server(Options options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Routes (router.h patterns: '*' is one path segment, in captures).
  void Handle(std::string method, std::string_view pattern, Handler handler);
  // `on_worker` (optional, called on the loop): true runs `handler` for that
  // request on a worker thread.
  void HandleAsync(std::string method, std::string_view pattern, AsyncHandler handler,
                   std::function<bool(const Request&)> on_worker = nullptr);
  // The routes added, in order (what Router::Table says).
  std::vector<Router::Entry> RouteTable() const;
  void SetFilter(Filter filter);
  void SetAnswerFilter(AnswerFilter filter);
  void SetErrorBody(ErrorBody error_body);
  void SetAccessLog(AccessLog access_log);

  // Listens on options.host:options.port (SO_REUSEADDR, not SO_REUSEPORT:
  // a second server on a port in use fails here).
  Status Bind();
  int port() const { return port_; }
  // Runs the event loop on the calling thread until Stop.
  void Serve();
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace muster::http
