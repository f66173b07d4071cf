// Streamed answers (Server::Stream, Client::Stream) over real loopback
// sockets: chunks as written, the end, a reader that leaves, a server that stops.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http/client.h"
#include "http/server.h"
#include "wait_for.h"

namespace muster::http {
namespace {

using namespace std::chrono_literals;
using muster::testing::WaitFor;

// A server on a free loopback port, serving on its own thread, with a
// /watch route whose streams the test drives.
class StreamServer {
 public:
  StreamServer() : server_({}) {
    server_.HandleAsync("GET", "/watch", [this](Request&&, Server::Reply reply) {
      Response head;
      head.status = 200;
      head.content_type = "application/x-ndjson";
      Server::Stream s = reply.Start(std::move(head));
      std::lock_guard<std::mutex> lock(mu_);
      streams_.push_back(s);
    });
    server_.Handle("GET", "/plain", [](const Request&, Response& res) { res.Set(200, "plain", "text/plain"); });
    EXPECT_TRUE(server_.Bind().ok());
    thread_ = std::thread([this] { server_.Serve(); });
  }
  ~StreamServer() { Stop(); }
  void Stop() {
    server_.Stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return server_.port(); }
  // The n-th stream started (0-based), once it has (5 s at most).
  std::optional<Server::Stream> WaitStream(size_t n) {
    std::optional<Server::Stream> found;
    WaitFor(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          if (streams_.size() > n) found = streams_[n];
          return found.has_value();
        },
        5s);
    return found;
  }

 private:
  Server server_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Server::Stream> streams_;
};

TEST(HttpStream, ChunksArriveAsWrittenThenTheConnectionServesOn) {
  StreamServer s;
  Client c("127.0.0.1", s.port());
  std::vector<std::string> seen;
  std::atomic<bool> got_one{false};
  std::thread writer([&] {
    std::optional<Server::Stream> st = s.WaitStream(0);
    ASSERT_TRUE(st);
    EXPECT_TRUE(st->Write("one\n"));
    // The reader has the first chunk before the second is written.
    EXPECT_TRUE(WaitFor([&] { return got_one.load(); }, 5s));
    EXPECT_TRUE(st->Write(""));  // nothing sent
    EXPECT_TRUE(st->Write("two\n"));
    st->End();
    EXPECT_FALSE(st->Write("late\n"));
    EXPECT_FALSE(st->open());
  });
  StatusOr<ClientResponse> r = c.Stream("/watch", {}, [&](std::string_view d) {
    seen.emplace_back(d);
    got_one = true;
    return true;
  });
  writer.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r->Header("Content-Type"), "application/x-ndjson");
  EXPECT_EQ(r->body, "");
  EXPECT_EQ(seen, (std::vector<std::string>{"one\n", "two\n"}));
  // The same client (its connection kept) serves on.
  StatusOr<ClientResponse> plain = c.Get("/plain");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->body, "plain");
}

TEST(HttpStream, TheWireCarriesChunksAndTheLastChunk) {
  StreamServer s;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(s.port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string req = "GET /watch HTTP/1.1\r\nHost: x\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::optional<Server::Stream> st = s.WaitStream(0);
  ASSERT_TRUE(st);
  st->Write("hello\n");
  st->End();
  std::string got;
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (got.find("plain", got.find("0\r\n\r\n") == std::string::npos ? got.size() : 0) == std::string::npos &&
         std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t head_end = got.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << got;
  EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << got;
  EXPECT_EQ(got.find("Content-Length"), got.find("Content-Length: 5")) << got;  // only /plain's
  // The chunk, the last chunk, then the pipelined request's answer.
  EXPECT_EQ(got.substr(head_end + 4, 16), "6\r\nhello\n\r\n0\r\n\r\n") << got;
  EXPECT_NE(got.find("plain", head_end + 20), std::string::npos) << got;
}

TEST(HttpStream, AReaderThatLeavesEndsTheStream) {
  StreamServer s;
  std::atomic<bool> stop_writing{false};
  std::thread writer([&] {
    std::optional<Server::Stream> st = s.WaitStream(0);
    ASSERT_TRUE(st);
    // Writes until the stream is over; the reader leaves after one chunk.
    WaitFor([&] { return !st->Write("tick\n"); }, 5s);
    EXPECT_FALSE(st->open()) << "the stream outlived its reader";
    stop_writing = true;
  });
  Client c("127.0.0.1", s.port());
  int chunks = 0;
  StatusOr<ClientResponse> r = c.Stream("/watch", {}, [&](std::string_view) { return ++chunks < 1; });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(chunks, 1);
  writer.join();
  EXPECT_TRUE(stop_writing);
}

TEST(HttpStream, StopEndsEveryStreamWithoutWaitingForIt) {
  StreamServer s;
  Client c("127.0.0.1", s.port());
  std::string seen;
  std::thread reader([&] {
    StatusOr<ClientResponse> r = c.Stream("/watch", {}, [&](std::string_view d) {
      seen.append(d);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();  // ended by the server: a whole answer
  });
  std::optional<Server::Stream> st = s.WaitStream(0);
  ASSERT_TRUE(st);
  ASSERT_TRUE(st->Write("before\n"));
  std::this_thread::sleep_for(100ms);
  s.Stop();  // returns although the stream was never ended
  reader.join();
  EXPECT_EQ(seen, "before\n");
  EXPECT_FALSE(st->Write("after\n"));
}

TEST(HttpStream, HeadGetsTheHeadAloneAndNoStream) {
  StreamServer s;
  Client c("127.0.0.1", s.port());
  StatusOr<ClientResponse> r = c.Send("HEAD", "/watch", {}, {}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  std::optional<Server::Stream> st = s.WaitStream(0);
  ASSERT_TRUE(st);
  EXPECT_FALSE(st->Write("x\n"));
  StatusOr<ClientResponse> plain = c.Get("/plain");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->body, "plain");
}

}  // namespace
}  // namespace muster::http
