// The HTTP client against the project's server and against scripted raw
// sockets, where the bytes on the wire (chunks, closes, silence) matter.
#include "http/client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "http/server.h"
#include "wait_for.h"

namespace muster::http {
namespace {

using namespace std::chrono_literals;
using muster::testing::WaitFor;

// A listening loopback socket; each accepted connection is handed to
// `serve` on the listener's thread, one after another.
class Scripted {
 public:
  explicit Scripted(std::function<void(int fd, int nth)> serve) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (int nth = 0;; ++nth) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        serve_(c, nth);
        ::close(c);
      }
    });
  }
  ~Scripted() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::function<void(int, int)> serve_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// Reads one request head (and nothing after it) from `fd`.
std::string ReadHead(int fd) {
  std::string in;
  char c;
  while (in.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) in += c;
  return in;
}

void Write(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

TEST(HttpClient, TalksToTheServer) {
  Server server({});
  server.Handle("GET", "/echo", [](const Request& req, Response& res) {
    res.Set(200, std::string(req.Param("q")) + "|" + std::string(req.Header("X-Test")), "text/plain");
  });
  server.Handle("POST", "/body", [](const Request& req, Response& res) {
    res.Set(201, std::string(req.Header("Content-Type")) + "|" + req.body, "text/plain");
    res.headers.emplace_back("X-Length", std::to_string(req.body.size()));
  });
  ASSERT_TRUE(server.Bind().ok());
  std::thread serving([&] { server.Serve(); });
  Client c("http://127.0.0.1:" + std::to_string(server.port()) + "/");
  for (int i = 0; i < 3; ++i) {
    auto r = c.Get("/echo?q=" + std::to_string(i), {{"X-Test", "yes"}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::to_string(i) + "|yes");
    EXPECT_EQ(r->Header("content-type"), "text/plain");
  }
  const std::string big(300'000, 'x');
  auto p = c.Post("/body", big, "application/json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->status, 201);
  EXPECT_EQ(p->body, "application/json|" + big);
  EXPECT_EQ(p->Header("X-Length"), "300000");
  auto missing = c.Get("/nothing");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  server.Stop();
  serving.join();
}

TEST(HttpClient, ReadsChunkedAnswersInterimAnswersAndBodiesUntilClose) {
  Scripted s([](int fd, int nth) {
    ReadHead(fd);
    if (nth == 0) {
      Write(fd,
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
            "5;ext=1\r\nhello\r\n1A\r\n, and twenty-one bytes mor\r\n0\r\nTrailer: t\r\n\r\n");
      ReadHead(fd);  // the same connection serves the next request
      Write(fd, "HTTP/1.0 200 OK\r\n\r\nuntil the end");
    }
  });
  Client c(s.url());
  auto r = c.Get("/");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello, and twenty-one bytes mor");
  EXPECT_EQ(r->Header("X-A"), "1");
  auto until_close = c.Get("/");
  ASSERT_TRUE(until_close.ok()) << until_close.status().ToString();
  EXPECT_EQ(until_close->body, "until the end");
}

TEST(HttpClient, ResendsOnceWhenAKeptAliveConnectionWasClosed) {
  std::atomic<int> requests{0};
  Scripted s([&](int fd, int nth) {
    ReadHead(fd);
    ++requests;
    // The first connection answers once and closes without saying so (as a
    // server does when the connection idles out); the second answers.
    Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" + std::string(nth == 0 ? "a1" : "b2"));
  });
  Client c(s.url());
  auto first = c.Post("/x", "{}", "application/json");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->body, "a1");
  std::this_thread::sleep_for(50ms);  // the close has arrived
  auto second = c.Post("/x", "{}", "application/json");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->body, "b2");
  EXPECT_EQ(requests.load(), 2);
}

TEST(HttpClient, NoResendOnceAnAnswerHasBegun) {
  std::atomic<int> requests{0};
  Scripted s([&](int fd, int) {
    ReadHead(fd);
    ++requests;
    Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");  // then closes
  });
  Client c(s.url());
  auto r = c.Get("/");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("before its answer was whole"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(requests.load(), 1);
}

// An answer over the client's body limit is an error, however it is framed
// (the server fetching an agent's log takes at most 4 MiB and a bit).
TEST(HttpClient, AnAnswerOverTheBodyLimitIsAnError) {
  for (const std::string answer :
       {"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello world"}) {
    Scripted s([&](int fd, int) {
      ReadHead(fd);
      Write(fd, answer);
    });
    ClientOptions o;
    o.max_body_bytes = 10;
    Client c(s.url(), o);
    auto r = c.Get("/");
    ASSERT_FALSE(r.ok()) << answer;
    EXPECT_NE(r.status().message().find("body larger than the limit of 10 bytes"), std::string::npos)
        << r.status().ToString();
  }
}

TEST(HttpClient, MalformedAnswersAreErrorsThatSaySo) {
  for (const std::string answer : {"SMTP ready\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 020 OK\r\n\r\n",
                                   "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                                   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    Scripted s([&](int fd, int) {
      ReadHead(fd);
      Write(fd, answer);
    });
    Client c(s.url());
    auto r = c.Get("/");
    ASSERT_FALSE(r.ok()) << answer;
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(r.status().message().find("malformed answer"), std::string::npos) << r.status().ToString();
  }
}

TEST(HttpClient, SilenceEndsAtTheReadTimeout) {
  std::atomic<bool> done{false};
  Scripted s([&](int fd, int) {
    ReadHead(fd);
    WaitFor([&] { return done.load(); }, 60s);
  });
  Client::Options o;
  o.read_timeout = 200ms;
  Client c(s.url(), o);
  auto start = std::chrono::steady_clock::now();
  auto r = c.Get("/");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no whole answer within 200 ms"), std::string::npos) << r.status().ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 190ms);
  done = true;
}

TEST(HttpClient, InterruptEndsAWaitingRequest) {
  std::atomic<bool> done{false};
  Scripted s([&](int fd, int) {
    ReadHead(fd);
    WaitFor([&] { return done.load(); }, 60s);
  });
  Client c(s.url());  // read timeout 60 s
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    c.Interrupt();
  });
  auto r = c.Get("/");
  stopper.join();
  done = true;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("interrupted"), std::string::npos) << r.status().ToString();
  // An interrupt with no request in progress ends the next one.
  c.Interrupt();
  EXPECT_FALSE(c.Get("/").ok());
}

TEST(HttpClient, ReachesAnIpv6AddressAndNamesItInBrackets) {
  Server::Options o;
  o.host = "::1";
  Server server(o);
  server.Handle("GET", "/host",
                [](const Request& req, Response& res) { res.Set(200, std::string(req.Header("Host")), "text/plain"); });
  if (!server.Bind().ok()) GTEST_SKIP() << "no IPv6 loopback here";
  std::thread serving([&] { server.Serve(); });
  const std::string where = "[::1]:" + std::to_string(server.port());
  auto r = Client("http://" + where).Get("/host");
  server.Stop();
  serving.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, where);
}

TEST(HttpClient, UnreachableAndMalformedAddresses) {
  Client refused("http://127.0.0.1:1");
  auto r = refused.Get("/");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("connect: Connection refused"), std::string::npos) << r.status().ToString();
  for (const std::string bad : {"ftp://example.com", "http://host:99999", "http://host:port", "http://[::1",
                                "http://::1:80", "http://h:80/path", "http://", ""}) {
    auto e = Client(bad).Get("/");
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(e.status().message().find("server address"), std::string::npos) << e.status().ToString();
  }
  Scripted s([](int fd, int) {
    ReadHead(fd);
    Write(fd, "HTTP/1.1 204 No Content\r\n\r\n");
  });
  auto ok = Client("127.0.0.1:" + std::to_string(s.port())).Get("/");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 204);
}

}  // namespace
}  // namespace muster::http
