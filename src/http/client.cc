#include "http/client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/message_text.h"

namespace muster::http {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxHeadBytes = 64 << 10;

bool ParsePort(std::string_view text, int& port) {
  if (text.empty() || text.size() > 5) return false;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > 65535) return false;
  port = v;
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ContainsToken(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (EqualsIgnoringCase(Trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// A transport failure: what failed, and the system's reason when there is one.
Status Failure(const std::string& what, int err) {
  return Status(StatusCode::kUnavailable, what + (err ? std::string(": ") + std::strerror(err) : std::string()));
}

// Waits until `fd` is ready for `events`; false on timeout.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, RemainingMs(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;  // let the next call report the error
  }
}

// "http(s)://HOST:PORT" and its shorter forms -> host, port, TLS or not.
Status ParseServer(std::string_view s, std::string& host_out, int& port, bool& tls) {
  const std::string whole(s);
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("server address " + QuoteForMessage(whole) + ": " + why, "server");
  };
  tls = false;
  if (s.substr(0, 7) == "http://") {
    s.remove_prefix(7);
  } else if (s.substr(0, 8) == "https://") {
    s.remove_prefix(8);
    tls = true;
  } else if (s.find("://") != std::string_view::npos) {
    return bad("only http:// and https:// are supported");
  }
  if (!s.empty() && s.back() == '/') s.remove_suffix(1);
  if (s.find('/') != std::string_view::npos) return bad("must be http(s)://HOST:PORT, without a path");
  port = tls ? 443 : 80;
  std::string_view host = s;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address needs its closing ']'");
    host = s.substr(1, close - 1);
    const std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("expected ':PORT' after the IPv6 address");
      if (!ParsePort(rest.substr(1), port)) return bad("the port must be a number from 1 to 65535");
    }
  } else if (const size_t colon = s.find(':'); colon != std::string_view::npos) {
    if (s.find(':', colon + 1) != std::string_view::npos)
      return bad("write an IPv6 address in brackets: [ADDRESS]:PORT");
    host = s.substr(0, colon);
    if (!ParsePort(s.substr(colon + 1), port)) return bad("the port must be a number from 1 to 65535");
  }
  if (host.empty()) return bad("no host");
  host_out = std::string(host);
  return Status::Ok();
}

}  // namespace

std::string_view ClientResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoringCase(k, name)) return v;
  }
  return {};
}

Client::Client(std::string server, Options options)
    : address_error_(ParseServer(server, host_, port_, tls_)), options_(options) {}

Client::Client(std::string host, int port, Options options, bool tls)
    : host_(std::move(host)), port_(port), tls_(tls), options_(options) {
  if (host_.empty() || port_ < 1 || port_ > 65535) {
    address_error_ = InvalidArgument("server address " + QuoteForMessage(host_) + ":" + std::to_string(port_) +
                                         ": needs a host and a port from 1 to 65535",
                                     "server");
  }
}

Client::~Client() { CloseConnection(); }

void Client::Interrupt() {
  std::lock_guard<std::mutex> lock(fd_mu_);
  interrupted_.store(true);
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Client::CloseConnection() {
  std::lock_guard<std::mutex> lock(fd_mu_);
  stream_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status Client::Connect(Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port_);
  if (int rc = ::getaddrinfo(host_.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status(StatusCode::kUnavailable, "cannot resolve " + host_ + ": " + ::gai_strerror(rc));
  }
  Status last = Failure("no address to connect to", 0);
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = Failure("socket", errno);
      continue;
    }
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (!WaitFor(fd, POLLOUT, deadline)) {
          ::close(fd);
          last = Status(StatusCode::kUnavailable,
                        "connect: no answer within " + std::to_string(options_.connect_timeout.count()) + " ms");
          continue;
        }
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err != 0) {
      ::close(fd);
      last = Failure("connect", err);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::freeaddrinfo(found);
    {
      std::lock_guard<std::mutex> lock(fd_mu_);
      if (interrupted_.load()) {
        ::close(fd);
        return Status(StatusCode::kUnavailable, "interrupted");
      }
      fd_ = fd;
    }
    return tls_ ? Handshake(deadline) : Status::Ok();
  }
  ::freeaddrinfo(found);
  return last;
}

Status Client::Handshake(Clock::time_point deadline) {
  if (!tls_context_) {
    auto made = TlsClientContext::Make(options_.tls);
    if (!made.ok()) {
      CloseConnection();
      return made.status();
    }
    tls_context_ = std::move(*made);
  }
  auto stream = TlsStream::Connect(*tls_context_, fd_, host_);
  if (!stream.ok()) {
    CloseConnection();
    return stream.status();
  }
  stream_ = std::move(*stream);
  while (true) {
    const ssize_t rc = stream_->Handshake();
    if (rc == 1) return Status::Ok();
    const int err = errno;
    if (rc == 0) {
      CloseConnection();
      return Status(StatusCode::kUnavailable, "TLS handshake: the server closed the connection");
    }
    if (err != EAGAIN) {
      // A server that cannot be verified (or does not speak TLS) will not
      // be next time either: kUnauthenticated, which callers do not retry.
      Status failed = TransportFailure("TLS handshake", err);
      if (err == EPROTO) failed = Status(StatusCode::kUnauthenticated, failed.message());
      CloseConnection();
      return failed;
    }
    if (!WaitFor(fd_, stream_->wants_write() ? POLLOUT : POLLIN, deadline)) {
      CloseConnection();
      return Status(StatusCode::kUnavailable,
                    "TLS handshake: not done within " + std::to_string(options_.connect_timeout.count()) + " ms");
    }
  }
}

ssize_t Client::Receive(char* buf, size_t n, short* events) {
  *events = POLLIN;
  if (!stream_) return ::recv(fd_, buf, n, 0);
  const ssize_t got = stream_->Read(buf, n);
  if (got < 0 && stream_->wants_write()) *events = POLLOUT;
  return got;
}

ssize_t Client::Transmit(const char* buf, size_t n, short* events) {
  *events = POLLOUT;
  if (!stream_) return ::send(fd_, buf, n, MSG_NOSIGNAL);
  const ssize_t sent = stream_->Write(buf, n);
  if (sent < 0 && !stream_->wants_write()) *events = POLLIN;
  return sent;
}

Status Client::TransportFailure(const std::string& what, int err) const {
  if (err == EPROTO && stream_) return Status(StatusCode::kUnavailable, what + ": " + stream_->error());
  return Failure(what, err);
}

StatusOr<ClientResponse> Client::Get(std::string_view target, const Fields& headers) {
  return Send("GET", target, headers, {}, {});
}

StatusOr<ClientResponse> Client::Post(std::string_view target, std::string_view body, std::string_view content_type,
                                      const Fields& headers) {
  return Send("POST", target, headers, body, content_type);
}

StatusOr<ClientResponse> Client::Send(std::string_view method, std::string_view target, const Fields& headers,
                                      std::string_view body, std::string_view content_type) {
  return Request(method, target, headers, body, content_type, nullptr);
}

StatusOr<ClientResponse> Client::Stream(std::string_view target, const Fields& headers, const ChunkSink& on_data) {
  return Request("GET", target, headers, {}, {}, &on_data);
}

StatusOr<ClientResponse> Client::Request(std::string_view method, std::string_view target, const Fields& headers,
                                         std::string_view body, std::string_view content_type, const ChunkSink* sink) {
  if (!address_error_.ok()) return address_error_;
  std::string request;
  request.reserve(128 + target.size() + body.size());
  request.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ");
  const bool ipv6 = host_.find(':') != std::string::npos;  // an IPv6 address goes in brackets
  request.append(ipv6 ? "[" : "").append(host_).append(ipv6 ? "]:" : ":").append(std::to_string(port_)).append("\r\n");
  for (const auto& [k, v] : headers) request.append(k).append(": ").append(v).append("\r\n");
  if (!content_type.empty()) request.append("Content-Type: ").append(content_type).append("\r\n");
  if (!body.empty() || (method != "GET" && method != "HEAD")) {
    request.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  request.append("\r\n").append(body);

  const bool head_only = method == "HEAD";
  StatusOr<ClientResponse> result = Status(StatusCode::kUnavailable, "interrupted");
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (interrupted_.exchange(false)) {
      CloseConnection();
      return Status(StatusCode::kUnavailable, "interrupted");
    }
    bool reused;
    {
      std::lock_guard<std::mutex> lock(fd_mu_);
      reused = fd_ >= 0;
    }
    if (!reused) {
      if (Status s = Connect(Clock::now() + options_.connect_timeout); !s.ok()) {
        interrupted_.store(false);
        return s;
      }
    }
    bool received = false;
    result = Exchange(request, head_only, &received, sink);
    if (result.ok()) break;
    CloseConnection();
    // A kept-alive connection the server had closed: once more, anew.
    if (!reused || received || interrupted_.load()) break;
  }
  if (interrupted_.exchange(false)) {
    CloseConnection();
    return Status(StatusCode::kUnavailable, "interrupted");
  }
  return result;
}

StatusOr<ClientResponse> Client::Exchange(const std::string& request, bool head_only, bool* received,
                                          const ChunkSink* sink) {
  const int fd = fd_;  // only this thread changes fd_ (Interrupt shuts it, never closes it)
  // Send.
  const Clock::time_point write_deadline = Clock::now() + options_.write_timeout;
  short wait_for = 0;
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = Transmit(request.data() + sent, request.size() - sent, &wait_for);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!WaitFor(fd, wait_for, write_deadline)) {
        return Status(StatusCode::kUnavailable,
                      "sending took longer than " + std::to_string(options_.write_timeout.count()) + " ms");
      }
      continue;
    }
    return TransportFailure("send", n == 0 ? EPIPE : errno);
  }

  // Receive.
  // A stream's deadline moves on with each byte: it bounds a silence.
  Clock::time_point deadline = Clock::now() + options_.read_timeout;
  std::string buf;
  bool closed = false;
  auto more = [&](std::string& into) -> StatusOr<bool> {
    char chunk[64 << 10];
    while (true) {
      const ssize_t n = Receive(chunk, sizeof chunk, &wait_for);
      if (n > 0) {
        *received = true;
        into.append(chunk, static_cast<size_t>(n));
        if (sink != nullptr) deadline = Clock::now() + options_.read_timeout;
        return true;
      }
      if (n == 0) {
        closed = true;
        return false;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return TransportFailure("receive", errno);
      if (!WaitFor(fd, wait_for, deadline)) {
        return Status(StatusCode::kUnavailable,
                      "no whole answer within " + std::to_string(options_.read_timeout.count()) + " ms");
      }
    }
  };
  bool keep_alive = false;
  StatusOr<ClientResponse> res = ReadResponse(buf, more, head_only, keep_alive, options_.max_body_bytes, sink);
  // Bytes beyond the answer (none from a well-behaved server) make the
  // connection unusable for the next request.
  if (!keep_alive || closed || !buf.empty()) CloseConnection();  // (a failure leaves keep_alive false)
  return res;
}

StatusOr<ClientResponse> ReadResponse(std::string& buf, const MoreBytes& more, bool head_only, bool& keep_alive,
                                      size_t max_body_bytes, const ChunkSink* sink) {
  keep_alive = false;
  const auto too_large = [&] { return "body larger than the limit of " + std::to_string(max_body_bytes) + " bytes"; };
  bool any = !buf.empty();
  // Appends what `more` gives; fails when the peer has closed.
  const auto need = [&]() -> Status {
    ASSIGN_OR_RETURN(const bool appended, more(buf));
    if (!appended) {
      return Status(StatusCode::kUnavailable, any ? "the server closed the connection before its answer was whole"
                                                  : "the server closed the connection without answering");
    }
    any = true;
    return Status::Ok();
  };
  const auto malformed = [](const std::string& why) {
    return Status(StatusCode::kUnavailable, "malformed answer: " + why);
  };

  ClientResponse res;
  bool alive = true;
  while (true) {  // skips interim (1xx) answers
    size_t head_end, searched = 0;
    while ((head_end = buf.find("\r\n\r\n", searched)) == std::string::npos) {
      if (buf.size() > kMaxHeadBytes) return malformed("head larger than 64 KiB");
      searched = buf.size() < 3 ? 0 : buf.size() - 3;
      RETURN_IF_ERROR(need());
    }
    // The same bound however the head arrived.
    if (head_end > kMaxHeadBytes) return malformed("head larger than 64 KiB");
    std::string_view head(buf.data(), head_end);
    const size_t line_end = head.find("\r\n");
    std::string_view status_line = head.substr(0, line_end);
    if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
      return malformed("status line " + QuoteForMessage(status_line.substr(0, 80)));
    }
    const bool http10 = status_line[7] == '0';
    int code = 0;
    for (char c : status_line.substr(9, 3)) {
      if (c < '0' || c > '9') return malformed("status line " + QuoteForMessage(status_line.substr(0, 80)));
      code = code * 10 + (c - '0');
    }
    if (code < 100) return malformed("status line " + QuoteForMessage(status_line.substr(0, 80)));
    res.status = code;
    res.headers.clear();
    std::string_view rest = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
    while (!rest.empty()) {
      const size_t eol = rest.find("\r\n");
      std::string_view line = rest.substr(0, eol);
      rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 2);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0)
        return malformed("header line " + QuoteForMessage(line.substr(0, 80)));
      res.headers.emplace_back(std::string(line.substr(0, colon)), std::string(Trim(line.substr(colon + 1))));
    }
    buf.erase(0, head_end + 4);
    const std::string_view connection = res.Header("Connection");
    alive = http10 ? ContainsToken(connection, "keep-alive") : !ContainsToken(connection, "close");
    if (code >= 100 && code < 200) continue;
    break;
  }

  if (head_only || res.status == 204 || res.status == 304) {
    // no body
  } else if (ContainsToken(res.Header("Transfer-Encoding"), "chunked")) {
    const bool streamed = sink != nullptr && res.status >= 200 && res.status < 300;
    while (true) {
      size_t eol;
      while ((eol = buf.find("\r\n")) == std::string::npos) {
        if (buf.size() > 1024) return malformed("chunk size line too long");
        RETURN_IF_ERROR(need());
      }
      if (eol > 1024) return malformed("chunk size line too long");
      const std::string_view size_text = Trim(std::string_view(buf).substr(0, std::min(eol, buf.find(';'))));
      if (size_text.empty() || size_text.size() > 15) return malformed("chunk size " + QuoteForMessage(size_text));
      size_t size = 0;
      for (char c : size_text) {
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0) return malformed("chunk size " + QuoteForMessage(size_text));
        size = size * 16 + static_cast<size_t>(d);
      }
      buf.erase(0, eol + 2);
      if (size == 0) {  // trailers, up to the blank line
        while (true) {
          while ((eol = buf.find("\r\n")) == std::string::npos) {
            if (buf.size() > kMaxHeadBytes) return malformed("trailers larger than 64 KiB");
            RETURN_IF_ERROR(need());
          }
          if (eol > kMaxHeadBytes) return malformed("trailers larger than 64 KiB");
          buf.erase(0, eol + 2);
          if (eol == 0) break;
        }
        break;
      }
      if (size > max_body_bytes || (!streamed && res.body.size() + size > max_body_bytes))
        return malformed(too_large());
      while (buf.size() < size + 2) RETURN_IF_ERROR(need());
      if (buf.compare(size, 2, "\r\n") != 0) return malformed("chunk not followed by CRLF");
      if (streamed) {
        if (!(*sink)(std::string_view(buf.data(), size))) return res;  // keep_alive false: ended midway
      } else {
        res.body.append(buf, 0, size);
      }
      buf.erase(0, size + 2);
    }
  } else if (const std::string_view length = res.Header("Content-Length"); !length.empty()) {
    size_t n = 0;
    if (length.size() > 12) return malformed("Content-Length " + QuoteForMessage(length));
    for (char c : length) {
      if (c < '0' || c > '9') return malformed("Content-Length " + QuoteForMessage(length));
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    if (n > max_body_bytes) return malformed(too_large());
    while (buf.size() < n) RETURN_IF_ERROR(need());
    res.body = buf.substr(0, n);
    buf.erase(0, n);
  } else {  // until the server closes
    alive = false;
    while (true) {
      if (buf.size() > max_body_bytes) return malformed(too_large());
      ASSIGN_OR_RETURN(const bool appended, more(buf));
      if (!appended) break;
    }
    res.body = std::move(buf);
    buf.clear();
  }
  keep_alive = alive;
  return res;
}

}  // namespace muster::http
