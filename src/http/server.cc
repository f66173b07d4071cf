#include "http/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/message_text.h"
#include "http/router.h"

namespace muster::http {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
// After an error answer, how long what the peer still sends is read and dropped.
constexpr std::chrono::milliseconds kLinger{2'000};
// How long Serve waits, once stopping and nothing is in flight, for answers to drain.
constexpr std::chrono::milliseconds kDrain{5'000};
// What a client may send while its stream goes on (its next requests).
constexpr size_t kMaxHeadBytesWhileStreaming = 64 << 10;

// `with_body` false (an answer to HEAD): the head only, with the length the body would have.
// One chunk of a streamed answer: its size in hex, the data, CRLF.
void AppendChunk(const std::string& data, std::string& out) {
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out.append(size, static_cast<size_t>(n)).append(data).append("\r\n");
}

void AppendResponse(const Response& r, bool close, bool with_body, std::string& out) {
  out += "HTTP/1.1 ";
  out += std::to_string(r.status);
  out += ' ';
  out += ReasonPhrase(r.status);
  out += "\r\n";
  if (!r.content_type.empty()) {
    out += "Content-Type: ";
    out += r.content_type;
    out += "\r\n";
  }
  for (const auto& [k, v] : r.headers) {
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(r.body.size());
  out += close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
  if (with_body) out += r.body;
}

}  // namespace

// A pool of threads running blocking handlers, first come first served
// (outside the anonymous namespace: Server::Impl holds one).
class WorkerPool {
 public:
  void Start(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        pthread_setname_np(pthread_self(), "http-worker");
        Run();
      });
    }
  }
  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  // Runs what is queued, then joins.
  void Join() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      // A task that throws loses only itself: its Reply, dropped, answers 500.
      try {
        task();
      } catch (const std::exception&) {
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::vector<std::thread> threads_;
};

struct Server::Stream::State {
  std::mutex mu;
  Server::Impl* impl = nullptr;  // guarded by mu: null once the server is gone
  uint64_t conn = 0;
  std::atomic<bool> open{true};
};

class Server::Impl {
 public:
  explicit Impl(Options options) : options_(std::move(options)) {}
  ~Impl() {
    // Streams a handler still holds write to nothing from now on.
    for (const std::weak_ptr<Stream::State>& w : streams_) {
      if (std::shared_ptr<Stream::State> s = w.lock()) {
        std::lock_guard<std::mutex> lock(s->mu);
        s->impl = nullptr;
        s->open = false;
      }
    }
    for (auto& [id, c] : conns_) {
      if (!c->closed) ::close(c->fd);
    }
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (reserve_fd_ >= 0) ::close(reserve_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
  }

  Status Bind(int& port);
  void Serve();
  void Stop() {
    stopping_ = true;
    Wake();
  }
  // From any thread: the answer to request `conn` has come (or `make` will
  // write it). The loop takes answers after each round of events, so one
  // given on its own thread (an inline handler) needs no wake-up.
  void Complete(uint64_t conn, Response response, std::function<Response()> make = nullptr) {
    Enqueue({Completion::Kind::kAnswer, conn, std::move(response), std::move(make), nullptr});
  }
  // A stream's head (the request's answer), one of its chunks, or its end.
  Stream StartStream(uint64_t conn, Response head) {
    auto state = std::make_shared<Stream::State>();
    state->impl = this;
    state->conn = conn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::erase_if(streams_, [](const std::weak_ptr<Stream::State>& w) { return w.expired(); });
      streams_.push_back(state);
    }
    Enqueue({Completion::Kind::kStreamHead, conn, std::move(head), nullptr, state});
    return Stream(std::move(state));
  }
  void StreamChunk(uint64_t conn, std::string data) {
    Response r;
    r.body = std::move(data);
    Enqueue({Completion::Kind::kChunk, conn, std::move(r), nullptr, nullptr});
  }
  void StreamEnd(uint64_t conn) { Enqueue({Completion::Kind::kEnd, conn, Response{}, nullptr, nullptr}); }

  Options options_;
  Router router_;
  struct Route {
    Handler handler;
    AsyncHandler async;
    std::function<bool(const Request&)> on_worker;  // async: run this request on a worker
  };
  std::vector<Route> routes_;
  Filter filter_;
  AnswerFilter answer_filter_;
  ErrorBody error_body_;
  AccessLog access_log_;
  WorkerPool workers_;

 private:
  struct Conn {
    int fd = -1;
    uint64_t id = 0;
    std::unique_ptr<TlsStream> tls;  // null: plain
    SteadyClock::time_point accepted;
    std::string remote;
    // Who holds it: empty (anonymous) until a request on it is
    // authenticated, then that request's principal (see server.h).
    std::string owner;
    uint64_t requests = 0;                  // dispatched on it so far
    std::string path;                       // of the request being handled
    std::string method, target, principal;  // of the request being handled, for the access log
    std::string in;                         // read, not yet consumed
    std::string out;                        // to send
    size_t out_sent = 0;
    // kStreaming: its request is answered by a stream still going on.
    enum class Phase { kHead, kBody, kHandling, kStreaming, kLinger } phase = Phase::kHead;
    std::shared_ptr<Stream::State> stream;  // kStreaming
    RequestHead head;                       // kBody, kHandling
    size_t head_searched = 0;               // kHead: how much of `in` holds no head's end
    bool close_after = false;               // close once `out` is sent
    bool unread = false;                    // readable, but reading was put off (a request in flight)
    bool peer_closed = false;
    bool hangup_seen = false;  // EPOLLRDHUP: read until the end, even after a short read
    bool head_only = false;    // the request being answered is HEAD
    bool closed = false;       // its descriptor is closed; erased after this loop turn
    SteadyClock::time_point last_active;
    // kHead with bytes in `in`, kBody: when the request's first byte came;
    // kLinger: when the error answer was given.
    SteadyClock::time_point since;
  };
  bool Backlogged(const Conn& c) const { return c.out.size() - c.out_sent > options_.max_unsent_bytes; }
  // read(2) and send(2), through TLS when the connection has it.
  static ssize_t Receive(Conn& c, char* buf, size_t n) { return c.tls ? c.tls->Read(buf, n) : ::read(c.fd, buf, n); }
  static ssize_t Transmit(Conn& c, const char* buf, size_t n) {
    return c.tls ? c.tls->Write(buf, n) : ::send(c.fd, buf, n, MSG_NOSIGNAL);
  }

  void Wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
  void Accept();
  // Out of descriptors, the waiting connection would be offered again and
  // again (a busy loop): it is taken with the reserve descriptor, answered
  // 503 and closed. False when there was no reserve to use.
  bool Shed();
  void OnEvent(uint64_t id, uint32_t events);
  void Read(Conn& c);
  // A TLS handshake failed: a client speaking plain HTTP is told so, plainly.
  void RefusePlainHttp(Conn& c);
  // Parses and dispatches what `c.in` holds, while the connection is free.
  void Process(Conn& c);
  void Dispatch(Conn& c, Request&& req);
  void Fail(Conn& c, int status, const std::string& message);
  void Send(Conn& c, const Response& r);
  void Write(Conn& c);
  // Closes the descriptor now; the Conn stays valid until the loop turn ends.
  void Close(Conn& c);
  void TakeCompletions();
  // The answer filter on `res` (one that throws leaves a 500).
  void FilterAnswer(const Conn& c, Response& res);
  // After an answer: the connection's next request, read or parsed.
  void TakeNext(Conn& c);
  // The stream's head on `c`, whose request it answers.
  void BeginStream(Conn& c, Response& head, std::shared_ptr<Stream::State> state);
  // Its last chunk: the connection serves its next request (or closes).
  void FinishStream(Conn& c);
  void Sweep(SteadyClock::time_point now);
  Reply MakeReply(uint64_t conn);

  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  int reserve_fd_ = -1;  // /dev/null, given up to shed a connection when out of descriptors
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;  // event loop only
  // Event loop only: open anonymous connections by address, and their ids
  // oldest first (stale ids, of connections closed or owned since, are
  // skipped and compacted away); open owned connections by principal.
  std::unordered_map<std::string, size_t> per_client_;
  std::unordered_map<std::string, std::deque<uint64_t>> anonymous_order_;
  std::unordered_map<std::string, size_t> per_principal_;
  // Closes the oldest anonymous connection from `remote` that waits for a
  // request's head, other than `keep`; false when there is none.
  bool EvictAnonymous(const std::string& remote, uint64_t keep);
  // `c` carried a request of `principal`: it is theirs from now on. False
  // when that is one more than the principal's bound.
  bool Own(Conn& c, const std::string& principal);
  std::vector<uint64_t> closed_;  // to erase at the turn's end
  uint64_t next_id_ = 2;
  int64_t in_flight_ = 0;  // requests dispatched, not yet completed; event loop only
  std::atomic<bool> stopping_{false};
  std::thread::id loop_thread_;  // set before the loop starts
  std::mutex mu_;
  struct Completion {
    enum class Kind { kAnswer, kStreamHead, kChunk, kEnd } kind;
    uint64_t conn;
    Response response;                      // a chunk: its body
    std::function<Response()> make;         // when set, writes the response
    std::shared_ptr<Stream::State> stream;  // kStreamHead
  };
  void Enqueue(Completion done) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake = completions_.empty() && std::this_thread::get_id() != loop_thread_;
      completions_.push_back(std::move(done));
    }
    if (wake) Wake();
  }
  std::vector<Completion> completions_;                // guarded by mu_
  std::vector<std::weak_ptr<Stream::State>> streams_;  // guarded by mu_: every stream started
};

struct Server::Reply::Token {
  Impl* impl;
  uint64_t conn;
  std::atomic<bool> answered{false};
  ~Token() {
    if (!answered) {
      Response r;
      impl->error_body_(500, "internal error: the request was not answered", r);
      impl->Complete(conn, std::move(r));
    }
  }
};

void Server::Reply::operator()(Response response) const {
  if (token_->answered.exchange(true)) return;
  token_->impl->Complete(token_->conn, std::move(response));
}

void Server::Reply::operator()(std::function<Response()> make) const {
  if (token_->answered.exchange(true)) return;
  token_->impl->Complete(token_->conn, Response{}, std::move(make));
}

Server::Stream Server::Reply::Start(Response head) const {
  if (token_->answered.exchange(true)) {
    auto over = std::make_shared<Stream::State>();
    over->open = false;
    return Stream(std::move(over));
  }
  return token_->impl->StartStream(token_->conn, std::move(head));
}

bool Server::Stream::Write(std::string data) const {
  if (!state_) return false;
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->open || state_->impl == nullptr) return false;
  if (!data.empty()) state_->impl->StreamChunk(state_->conn, std::move(data));
  return true;
}

void Server::Stream::End() const {
  if (!state_) return;
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->open.exchange(false) || state_->impl == nullptr) return;
  state_->impl->StreamEnd(state_->conn);
}

bool Server::Stream::open() const { return state_ && state_->open; }

Server::Reply Server::Impl::MakeReply(uint64_t conn) {
  auto token = std::make_shared<Reply::Token>();
  token->impl = this;
  token->conn = conn;
  return Reply(std::move(token));
}

Status Server::Impl::Bind(int& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(options_.port);
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  if (int rc = ::getaddrinfo(options_.host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status(StatusCode::kUnavailable, "cannot listen on " + where + ": " + ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      listen_fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) {
    return Status(StatusCode::kUnavailable,
                  "cannot listen on " + where + " (" + why + "; in use, or not an address of this machine)");
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0)
    return Status(StatusCode::kInternal, std::string("epoll: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: a connection left for later is offered again
  ev.data.u64 = kListenId;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  return Status::Ok();
}

void Server::Impl::Serve() {
  pthread_setname_np(pthread_self(), "http-loop");
  {
    std::lock_guard<std::mutex> lock(mu_);
    loop_thread_ = std::this_thread::get_id();
  }
  workers_.Start(options_.worker_threads);
  epoll_event events[256];
  SteadyClock::time_point last_sweep = SteadyClock::now();
  SteadyClock::time_point drain_since{};
  bool listening = true;
  while (true) {
    const int n = ::epoll_wait(epoll_fd_, events, 256, 1000);
    for (int i = 0; i < n; ++i) OnEvent(events[i].data.u64, events[i].events);
    TakeCompletions();
    for (uint64_t id : closed_) conns_.erase(id);
    closed_.clear();
    const SteadyClock::time_point now = SteadyClock::now();
    if (now - last_sweep >= std::chrono::seconds(1)) {
      Sweep(now);
      last_sweep = now;
    }
    if (stopping_) {
      if (listening) {
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        ::close(listen_fd_);
        listen_fd_ = -1;
        listening = false;
        drain_since = now;
      }
      // Idle connections go now; busy ones once answered; streams end.
      for (auto& [id, c] : conns_) {
        if (c->closed) continue;
        if (c->phase == Conn::Phase::kStreaming) {
          c->close_after = true;
          FinishStream(*c);
          continue;
        }
        if (c->phase != Conn::Phase::kHandling && c->out_sent == c->out.size())
          Close(*c);
        else
          c->close_after = true;
      }
      for (uint64_t id : closed_) conns_.erase(id);
      closed_.clear();
      if (in_flight_ == 0) {
        if (conns_.empty() || now - drain_since > kDrain) break;
      } else {
        drain_since = now;
      }
    }
  }
  workers_.Join();
}

void Server::Impl::OnEvent(uint64_t id, uint32_t events) {
  if (id == kListenId) return Accept();
  if (id == kWakeId) {
    uint64_t count;
    [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof count);
    return;
  }
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second->closed) return;
  Conn& c = *it->second;
  if (events & (EPOLLERR | EPOLLHUP)) return Close(c);
  if (events & EPOLLRDHUP) c.hangup_seen = true;
  // TLS may need to read in order to write, or the reverse (a handshake):
  // any readiness retries both.
  const bool tls_ready = c.tls && (events & (EPOLLIN | EPOLLOUT));
  if ((events & EPOLLOUT) || tls_ready) {
    const bool backlogged = Backlogged(c);
    Write(c);
    // The client has read enough of its answers: take its next requests.
    if (backlogged && !c.closed && !Backlogged(c) && c.phase == Conn::Phase::kHead) {
      TakeNext(c);
    }
  }
  if (!c.closed && ((events & (EPOLLIN | EPOLLRDHUP)) || tls_ready)) Read(c);
}

void Server::Impl::Accept() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if ((errno == EMFILE || errno == ENFILE) && Shed()) continue;
      return;  // EAGAIN: no more waiting
    }
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // small answers must not wait for ACKs
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    if (options_.tls) {
      auto tls = TlsStream::Accept(*options_.tls, fd);
      if (!tls.ok()) {
        ::close(fd);
        continue;
      }
      c->tls = std::move(*tls);
    }
    c->id = next_id_++;
    c->last_active = SteadyClock::now();
    c->accepted = c->last_active;
    char host[INET6_ADDRSTRLEN] = "";
    if (addr.ss_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, host, sizeof host);
    } else if (addr.ss_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, host, sizeof host);
    }
    c->remote = host;
    const size_t from_here = ++per_client_[c->remote];
    std::deque<uint64_t>& order = anonymous_order_[c->remote];
    order.push_back(c->id);
    if (order.size() > 2 * from_here + 16) {  // mostly stale: compact
      std::erase_if(order, [&](uint64_t id) {
        auto it = conns_.find(id);
        return it == conns_.end() || it->second->closed || !it->second->owner.empty();
      });
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = c->id;
    Conn& conn = *c;
    conns_.emplace(conn.id, std::move(c));
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      Close(conn);
      continue;
    }
    if (conns_.size() > options_.max_connections) {
      Fail(conn, 503, "too many connections (" + std::to_string(options_.max_connections) + "); retry later");
    } else if (options_.max_connections_per_client > 0 && from_here > options_.max_connections_per_client &&
               !EvictAnonymous(conn.remote, conn.id)) {
      Fail(conn, 503,
           "too many unauthenticated connections from " + conn.remote + " (" +
               std::to_string(options_.max_connections_per_client) + "); retry later");
    }
  }
}

bool Server::Impl::EvictAnonymous(const std::string& remote, uint64_t keep) {
  auto order = anonymous_order_.find(remote);
  if (order == anonymous_order_.end()) return false;
  std::deque<uint64_t>& ids = order->second;
  for (auto at = ids.begin(); at != ids.end();) {
    auto it = conns_.find(*at);
    if (it == conns_.end() || it->second->closed || !it->second->owner.empty()) {
      at = ids.erase(at);
      continue;
    }
    Conn& c = *it->second;
    // Waiting for a head (none begun, or one trickling): never a request
    // being read, handled or answered.
    if (c.id != keep && c.phase == Conn::Phase::kHead && c.out_sent == c.out.size()) {
      ids.erase(at);
      Close(c);
      return true;
    }
    ++at;
  }
  return false;
}

bool Server::Impl::Own(Conn& c, const std::string& principal) {
  if (auto it = per_client_.find(c.remote); it != per_client_.end() && --it->second == 0) {
    per_client_.erase(it);
    anonymous_order_.erase(c.remote);
  }
  c.owner = principal;
  const size_t held = ++per_principal_[principal];
  return options_.max_connections_per_principal == 0 || held <= options_.max_connections_per_principal;
}

bool Server::Impl::Shed() {
  if (reserve_fd_ < 0) return false;
  ::close(reserve_fd_);
  const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0 && !options_.tls) {  // (a TLS client could not read a plain answer)
    static constexpr char kBusy[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 38\r\n"
        "Connection: close\r\n\r\nout of file descriptors; retry later\r\n";
    [[maybe_unused]] ssize_t n = ::send(fd, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL);
  }
  if (fd >= 0) ::close(fd);
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return fd >= 0;
}

void Server::Impl::Read(Conn& c) {
  // Edge-triggered: read until the socket is drained, unless a request is in
  // flight (then the rest waits in the kernel, and is read once it is answered).
  // Nor while the client leaves its answers unread (its requests wait in
  // the kernel's buffers, which bound them, not in ours).
  if (c.phase == Conn::Phase::kHandling || (c.phase != Conn::Phase::kLinger && Backlogged(c))) {
    c.unread = true;
    return;
  }
  c.unread = false;
  char buf[64 << 10];
  while (true) {
    const ssize_t n = Receive(c, buf, sizeof buf);
    if (n > 0) {
      c.last_active = SteadyClock::now();
      if (c.phase == Conn::Phase::kLinger) continue;  // dropped
      if (c.in.empty() && c.phase == Conn::Phase::kHead) c.since = c.last_active;
      c.in.append(buf, static_cast<size_t>(n));
      // Drained: a later byte is a new edge. Unless the peer has hung up:
      // then its end of file is read now (it raises no later edge). TLS
      // gives a record at a time, and says when nothing more waits.
      const bool drained = c.tls ? c.tls->Drained() : static_cast<size_t>(n) < sizeof buf;
      if (drained && !c.hangup_seen) break;
      continue;
    }
    if (n == 0) {
      c.peer_closed = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    if (errno == EPROTO && c.tls && !c.tls->handshake_done()) return RefusePlainHttp(c);
    return Close(c);
  }
  if (c.phase == Conn::Phase::kLinger) {
    if (c.peer_closed) Close(c);
    return;
  }
  // A client sends nothing while its stream goes on, but its next request
  // (pipelined) waits here, bounded.
  if (c.phase == Conn::Phase::kStreaming && c.in.size() > kMaxHeadBytesWhileStreaming) return Close(c);
  Process(c);
  // The peer is gone and nothing is left to answer: close.
  if (!c.closed && c.peer_closed && c.phase != Conn::Phase::kHandling && c.out_sent == c.out.size()) Close(c);
}

void Server::Impl::RefusePlainHttp(Conn& c) {
  // OpenSSL's reason when the first bytes are an HTTP request.
  if (c.tls->error().find("http request") == std::string::npos) return Close(c);
  // The rest of the connection is plain: the answer, then what the client
  // still sends read and dropped for a moment (closing at once, with its
  // request unread, would reset the connection under the answer).
  c.tls.reset();
  Fail(c, 400, "this server speaks HTTPS: use https:// in its address");
}

void Server::Impl::Process(Conn& c) {
  while (c.phase == Conn::Phase::kHead || c.phase == Conn::Phase::kBody) {
    if (c.phase == Conn::Phase::kHead) {
      if (c.in.empty() || Backlogged(c)) return;
      ParseError error;
      c.head_only = false;
      switch (ParseRequestHead(c.in, options_.head_limits, c.head, error, &c.head_searched)) {
        case ParseResult::kIncomplete:
          return;
        case ParseResult::kError:
          return Fail(c, error.status, error.message);
        case ParseResult::kComplete:
          break;
      }
      c.head_only = c.head.request.method == "HEAD";
      if (c.head.content_length > options_.max_body_bytes) {
        return Fail(c, 413, "request body over the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
      }
      c.phase = Conn::Phase::kBody;
      const size_t have = c.in.size() - c.head.head_bytes;
      if (c.head.expect_continue && have < static_cast<size_t>(c.head.content_length)) {
        c.out += "HTTP/1.1 100 Continue\r\n\r\n";
        Write(c);
        if (c.closed) return;
      }
    }
    const size_t need = c.head.head_bytes + static_cast<size_t>(c.head.content_length);
    if (c.in.size() < need) return;
    Request req = std::move(c.head.request);
    req.body.assign(c.in, c.head.head_bytes, static_cast<size_t>(c.head.content_length));
    c.in.erase(0, need);
    c.since = SteadyClock::now();  // the next request's bytes, if any, count from here
    c.head_searched = 0;
    c.phase = Conn::Phase::kHandling;
    Dispatch(c, std::move(req));
  }
}

void Server::Impl::Dispatch(Conn& c, Request&& req) {
  ++in_flight_;
  req.remote_addr = c.remote;
  c.path = req.path;
  if (access_log_) {
    c.method = req.method;
    c.target = req.target;
    c.principal.clear();
  }
  Reply reply = MakeReply(c.id);
  const Route* route = nullptr;
  // Nothing a request holds may stop the event loop: what throws here is
  // answered 500 (plainly: the error writer may be what threw).
  try {
    Response res;
    const bool answered = filter_ && filter_(req, res);
    if (access_log_) c.principal = req.principal;
    ++c.requests;
    if (c.owner.empty() && !req.principal.empty() && !Own(c, req.principal)) {
      res = Response{};
      error_body_(503,
                  "too many connections of " + req.principal + " (" +
                      std::to_string(options_.max_connections_per_principal) + "); retry later",
                  res);
      c.close_after = true;  // counted no longer once closed
      return reply(std::move(res));
    }
    if (answered) return reply(std::move(res));
    if (c.head_only) req.method = "GET";  // answered as GET, without the body
    Router::Match m = router_.Find(req.method, req.path);
    if (m.outcome != Router::Outcome::kFound) {
      const bool wrong = m.outcome == Router::Outcome::kWrongMethod;
      // The path is echoed quoted: it is percent-decoded, so any byte may be in it.
      const std::string path = QuoteForMessage(req.path, 256);
      const std::string sent = c.head_only ? std::string("HEAD") : req.method;
      error_body_(wrong ? 405 : 404,
                  wrong ? "method " + sent + " is not allowed on " + path + "; use " + m.allow
                        : "no such endpoint: " + sent + " " + path,
                  res);
      if (wrong) res.headers.emplace_back("Allow", m.allow);
      return reply(std::move(res));
    }
    req.captures = std::move(m.captures);
    route = &routes_[m.id];
    if (route->async && !(route->on_worker && route->on_worker(req))) return route->async(std::move(req), reply);
  } catch (const std::exception&) {
    Response out;
    out.Set(500, "internal error\n", "text/plain; charset=utf-8");
    return reply(std::move(out));  // unless it had answered already
  }
  workers_.Post([this, route, req = std::move(req), reply = std::move(reply)]() mutable {
    Response out;
    try {
      if (route->async) return route->async(std::move(req), reply);
      route->handler(req, out);
    } catch (const std::exception&) {
      out = Response{};
      error_body_(500, "internal error", out);
    }
    reply(std::move(out));  // unless it had answered already
  });
}

void Server::Impl::Fail(Conn& c, int status, const std::string& message) {
  Response r;
  error_body_(status, message, r);
  c.close_after = true;
  c.phase = Conn::Phase::kLinger;
  c.since = SteadyClock::now();
  c.in.clear();
  Send(c, r);
}

void Server::Impl::Send(Conn& c, const Response& r) {
  // c.head is still the answered request's: the next is parsed only after this.
  // A peer that has sent its end of file, and no request after this one,
  // gets the answer and then the close.
  const bool close = c.close_after || !c.head.keep_alive || stopping_ || (c.peer_closed && c.in.empty());
  if (close) c.close_after = true;
  if (access_log_) {
    // c.since: when the request was whole (Process), or the error found.
    access_log_({c.remote, c.method, c.target, c.principal, r.status, r.body.size(),
                 std::chrono::duration<double>(SteadyClock::now() - c.since).count()});
    c.method.clear();
    c.target.clear();
    c.principal.clear();
  }
  AppendResponse(r, close, !c.head_only, c.out);
  Write(c);
}

void Server::Impl::Write(Conn& c) {
  while (c.out_sent < c.out.size()) {
    const ssize_t n = Transmit(c, c.out.data() + c.out_sent, c.out.size() - c.out_sent);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
      c.last_active = SteadyClock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // EPOLLOUT resumes
    return Close(c);
  }
  c.out.clear();
  c.out_sent = 0;
  if (!c.close_after) return;
  if (c.phase == Conn::Phase::kLinger) {
    // An error answer is out: shut the write side, and read and drop what
    // the peer still sends until it closes (or kLinger passes).
    if (c.tls) c.tls->Shutdown();
    ::shutdown(c.fd, SHUT_WR);
    if (c.peer_closed) Close(c);
  } else if (c.phase == Conn::Phase::kHead) {
    Close(c);  // the last answer of a connection that ends
  }
}

void Server::Impl::Close(Conn& c) {
  if (c.closed) return;
  if (c.stream) {
    c.stream->open = false;
    c.stream.reset();
  }
  if (c.owner.empty()) {
    if (auto it = per_client_.find(c.remote); it != per_client_.end() && --it->second == 0) {
      per_client_.erase(it);
      anonymous_order_.erase(c.remote);
    }
  } else if (auto it = per_principal_.find(c.owner); it != per_principal_.end() && --it->second == 0) {
    per_principal_.erase(it);
  }
  ::close(c.fd);  // closing removes it from the epoll set
  c.closed = true;
  closed_.push_back(c.id);
}

void Server::Impl::TakeCompletions() {
  std::vector<Completion> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (completions_.empty()) return;
    done.swap(completions_);
  }
  for (auto& [kind, id, response, make, stream] : done) {
    if (kind == Completion::Kind::kChunk || kind == Completion::Kind::kEnd) {
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second->closed || it->second->phase != Conn::Phase::kStreaming) continue;
      Conn& c = *it->second;
      if (kind == Completion::Kind::kEnd) {
        FinishStream(c);
        if (!c.closed && !c.close_after) TakeNext(c);
        continue;
      }
      AppendChunk(response.body, c.out);
      Write(c);
      if (!c.closed && Backlogged(c)) Close(c);  // it does not keep up: it may watch again
      continue;
    }
    --in_flight_;
    if (make) {
      try {
        response = make();
      } catch (const std::exception&) {
        response = Response{};
        error_body_(500, "internal error", response);
      }
    }
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second->closed) {  // the client left before its answer
      if (stream) stream->open = false;
      continue;
    }
    Conn& c = *it->second;
    if (kind == Completion::Kind::kStreamHead) {
      BeginStream(c, response, std::move(stream));
      continue;
    }
    c.phase = Conn::Phase::kHead;
    FilterAnswer(c, response);
    Send(c, response);
    if (!c.closed && !c.close_after) TakeNext(c);
  }
}

void Server::Impl::FilterAnswer(const Conn& c, Response& res) {
  if (!answer_filter_) return;
  try {
    answer_filter_(c.path, res);
  } catch (const std::exception&) {
    res = Response{};
    error_body_(500, "internal error", res);
  }
}

void Server::Impl::TakeNext(Conn& c) {
  // The next request may already be here, whole or in part, or still in the socket.
  if (c.unread)
    Read(c);
  else
    Process(c);
}

void Server::Impl::BeginStream(Conn& c, Response& head, std::shared_ptr<Stream::State> state) {
  FilterAnswer(c, head);
  if (c.head_only || head.status < 200 || head.status > 299) {
    // The head alone, or not a stream after all: an ordinary answer.
    state->open = false;
    c.phase = Conn::Phase::kHead;
    Send(c, head);
    if (!c.closed && !c.close_after) TakeNext(c);
    return;
  }
  if (stopping_) c.close_after = true;
  if (access_log_) {
    access_log_({c.remote, c.method, c.target, c.principal, head.status, 0,
                 std::chrono::duration<double>(SteadyClock::now() - c.since).count()});
  }
  c.out += "HTTP/1.1 " + std::to_string(head.status) + " " + ReasonPhrase(head.status) + "\r\n";
  if (!head.content_type.empty()) c.out += "Content-Type: " + head.content_type + "\r\n";
  for (const auto& [k, v] : head.headers) c.out += k + ": " + v + "\r\n";
  c.out += "Transfer-Encoding: chunked\r\n";
  c.out += c.close_after || !c.head.keep_alive ? "Connection: close\r\n\r\n" : "\r\n";
  if (!c.head.keep_alive) c.close_after = true;
  c.phase = Conn::Phase::kStreaming;
  c.stream = std::move(state);
  if (stopping_) return FinishStream(c);
  Write(c);
}

void Server::Impl::FinishStream(Conn& c) {
  if (c.stream) {
    c.stream->open = false;
    c.stream.reset();
  }
  c.out += "0\r\n\r\n";
  c.phase = Conn::Phase::kHead;
  Write(c);
}

void Server::Impl::Sweep(SteadyClock::time_point now) {
  for (auto& [id, c] : conns_) {
    if (c->closed) continue;
    const auto quiet = now - c->last_active;
    switch (c->phase) {
      case Conn::Phase::kHandling:
        break;
      case Conn::Phase::kStreaming:
        if (c->out_sent < c->out.size() && quiet > options_.read_timeout) Close(*c);  // the peer reads nothing
        break;
      case Conn::Phase::kLinger:
        if (now - c->since > kLinger) Close(*c);  // however the peer trickles
        break;
      case Conn::Phase::kHead:
        if (c->tls && !c->tls->handshake_done()) {
          if (now - c->accepted > options_.read_timeout) Close(*c);  // however the handshake trickles
        } else if (c->out_sent < c->out.size()) {
          if (quiet > options_.read_timeout) Close(*c);  // the peer reads nothing
        } else if (c->in.empty()) {
          // A connection that never sent a request gets a short while.
          const auto bound = c->requests == 0 ? std::min(options_.first_request_timeout, options_.idle_timeout)
                                              : options_.idle_timeout;
          if (quiet > bound) Close(*c);
        } else if (now - c->since > options_.read_timeout) {
          Fail(*c, 408, "the request was not sent in time");
        }
        break;
      case Conn::Phase::kBody:
        if (now - c->since > options_.read_timeout) Fail(*c, 408, "the request body was not sent in time");
        break;
    }
  }
}

Server::Server(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->error_body_ = [](int status, const std::string& message, Response& r) {
    r.Set(status, message + "\n", "text/plain; charset=utf-8");
  };
}

Server::~Server() = default;

void Server::Handle(std::string method, std::string_view pattern, Handler handler) {
  impl_->router_.Add(std::move(method), pattern);
  impl_->routes_.push_back({std::move(handler), nullptr, nullptr});
}

std::vector<Router::Entry> Server::RouteTable() const { return impl_->router_.Table(); }

void Server::HandleAsync(std::string method, std::string_view pattern, AsyncHandler handler,
                         std::function<bool(const Request&)> on_worker) {
  impl_->router_.Add(std::move(method), pattern);
  impl_->routes_.push_back({nullptr, std::move(handler), std::move(on_worker)});
}

void Server::SetFilter(Filter filter) { impl_->filter_ = std::move(filter); }
void Server::SetAnswerFilter(AnswerFilter filter) { impl_->answer_filter_ = std::move(filter); }
void Server::SetErrorBody(ErrorBody error_body) { impl_->error_body_ = std::move(error_body); }
void Server::SetAccessLog(AccessLog access_log) { impl_->access_log_ = std::move(access_log); }
Status Server::Bind() { return impl_->Bind(port_); }
void Server::Serve() { impl_->Serve(); }
void Server::Stop() { impl_->Stop(); }

}  // namespace muster::http
