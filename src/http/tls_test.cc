// TLS between http::Server and http::Client over real loopback sockets,
// with certificates the `openssl` command makes for each test run; curl
// and `openssl s_server` stand in for a client and a server not our own.
#include "http/tls.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "http/client.h"
#include "http/server.h"
#include "run_binary.h"
#include "tls_files.h"
#include "wait_for.h"

namespace muster::http {
namespace {

using namespace std::chrono_literals;
using testing::MakeTlsFiles;
using testing::RunCommand;
using testing::TlsFiles;

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char dir[] = "/tmp/muster-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    files_ = new TlsFiles(MakeTlsFiles(dir));
    ASSERT_EQ(files_->error, "");
  }
  static void TearDownTestSuite() {
    RunCommand("rm -rf '" + files_->dir + "'");
    delete files_;
  }

  // A TLS server on a free loopback port with an echo route, a big answer
  // and a counter of requests handled.
  void Start(std::shared_ptr<const TlsServerContext> ctx, Server::Options options = {}) {
    options.tls = std::move(ctx);
    server_ = std::make_unique<Server>(options);
    server_->Handle("POST", "/echo", [this](const Request& req, Response& res) {
      ++handled_;
      res.Set(200, req.body, "application/octet-stream");
    });
    server_->Handle("GET", "/big", [this](const Request&, Response& res) {
      ++handled_;
      res.Set(200, std::string(3 << 20, 'b'), "application/octet-stream");
    });
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { server_->Serve(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string Url(const std::string& host = "127.0.0.1") const {
    return "https://" + host + ":" + std::to_string(server_->port());
  }
  static std::shared_ptr<const TlsServerContext> Context(const std::string& cert, const std::string& key) {
    auto ctx = TlsServerContext::FromFiles(cert, key);
    EXPECT_TRUE(ctx.ok()) << ctx.status().message();
    return ctx.ok() ? *ctx : nullptr;
  }
  static ClientOptions Trusting(const std::string& ca) {
    ClientOptions o;
    o.tls.ca_file = ca;
    o.connect_timeout = 3s;
    o.read_timeout = 10s;
    return o;
  }

  static TlsFiles* files_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  std::atomic<int> handled_{0};
};
TlsFiles* TlsTest::files_ = nullptr;

TEST_F(TlsTest, RequestsOnOneConnectionBothWaysWithLargeBodies) {
  Server::Options o;
  o.max_body_bytes = 4 << 20;
  Start(Context(files_->cert, files_->key), o);
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    Client c(Url(host), Trusting(files_->ca));
    // Many records each way, kept alive across requests.
    std::string body(2 << 20, '\0');
    for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>(i * 131 % 251);
    for (int i = 0; i < 3; ++i) {
      auto r = c.Post("/echo", body, "application/octet-stream");
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(r->status, 200);
      EXPECT_TRUE(r->body == body);
    }
    auto big = c.Get("/big");
    ASSERT_TRUE(big.ok()) << big.status().message();
    EXPECT_EQ(big->body.size(), size_t{3} << 20);
  }
  EXPECT_EQ(handled_.load(), 8);
}

TEST_F(TlsTest, ManyClientsAtOnce) {
  Start(Context(files_->cert, files_->key));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Client c(Url(), Trusting(files_->ca));
      for (int i = 0; i < 20; ++i) {
        const std::string body = "client " + std::to_string(t) + " request " + std::to_string(i);
        auto r = c.Post("/echo", body, "text/plain");
        if (r.ok() && r->status == 200 && r->body == body) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 160);
}

TEST_F(TlsTest, ClientRefusesServersItCannotVerifyAndSendsThemNothing) {
  struct Case {
    std::string what, cert, key, ca, host, expect;
  } cases[] = {
      {"a CA the client does not trust", files_->cert, files_->key, files_->stranger_ca, "127.0.0.1",
       "certificate verify failed: unable to get local issuer certificate"},
      {"the system's CAs only", files_->cert, files_->key, "", "127.0.0.1", "certificate verify failed"},
      {"a certificate for another name", files_->other_cert, files_->other_key, files_->ca, "127.0.0.1",
       "certificate verify failed: IP address mismatch"},
      {"a certificate for another host name", files_->other_cert, files_->other_key, files_->ca, "localhost",
       "certificate verify failed: hostname mismatch"},
      {"an expired certificate", files_->expired_cert, files_->expired_key, files_->ca, "127.0.0.1",
       "certificate verify failed: certificate has expired"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    TearDown();
    Start(Context(k.cert, k.key));
    Client c(Url(k.host), Trusting(k.ca));
    auto r = c.Post("/echo", "secret", "text/plain");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
    EXPECT_NE(r.status().message().find(k.expect), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(TlsTest, PinnedSelfSignedCertificate) {
  auto made = MakeSelfSignedCertificate("node-7", 30);
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(made->pin.substr(0, 7), "sha256:");
  EXPECT_EQ(*PinOfCertificate(made->cert_pem), made->pin);
  auto ctx = TlsServerContext::FromPem(made->cert_pem, made->key_pem);
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  Start(*ctx);

  ClientOptions right;
  right.tls.pin = made->pin;
  Client good("127.0.0.1", server_->port(), right, /*tls=*/true);
  auto r = good.Post("/echo", "hello", "text/plain");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, "hello");

  // Another key's pin: refused before the request leaves.
  auto other = MakeSelfSignedCertificate("node-8", 30);
  ClientOptions wrong;
  wrong.tls.pin = other->pin;
  Client bad("127.0.0.1", server_->port(), wrong, /*tls=*/true);
  auto refused = bad.Post("/echo", "secret", "text/plain");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not the one expected"), std::string::npos) << refused.status().message();
  // Nor does the system's CA store vouch for it.
  Client unpinned(Url(), Trusting(""));
  EXPECT_FALSE(unpinned.Post("/echo", "secret", "text/plain").ok());
  EXPECT_EQ(handled_.load(), 1);

  ClientOptions malformed;
  malformed.tls.pin = "sha256:xyz";
  Client m("127.0.0.1", server_->port(), malformed, true);
  auto bad_pin = m.Get("/big");
  ASSERT_FALSE(bad_pin.ok());
  EXPECT_EQ(bad_pin.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TlsTest, PlainHttpToTheTlsPortIsToldToUseHttps) {
  Start(Context(files_->cert, files_->key));
  Client plain("http://127.0.0.1:" + std::to_string(server_->port()));
  auto r = plain.Post("/echo", "secret", "text/plain");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("use https://"), std::string::npos) << r->body;
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(TlsTest, HttpsToAPlainServerFailsClearly) {
  Start(nullptr);
  ClientOptions o = Trusting(files_->ca);
  o.connect_timeout = 1s;  // the plain server waits for a request's head: no answer comes
  Client c(Url(), o);
  auto r = c.Post("/echo", "secret", "text/plain");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TLS handshake"), std::string::npos) << r.status().message();
}

TEST_F(TlsTest, AStalledHandshakeIsClosedAfterTheReadTimeout) {
  Server::Options o;
  o.read_timeout = 300ms;
  Start(Context(files_->cert, files_->key), o);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(server_->port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  // Half a ClientHello's record header, then nothing.
  ASSERT_EQ(::send(fd, "\x16\x03\x01", 3, MSG_NOSIGNAL), 3);
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);  // the sweep runs each second
  char buf[16];
  EXPECT_LE(::read(fd, buf, sizeof buf), 0);
  ::close(fd);
}

TEST_F(TlsTest, KeyFilesOthersCanReadAreRefused) {
  const std::string loose = files_->dir + "/loose.key";
  ASSERT_EQ(RunCommand("cp '" + files_->key + "' '" + loose + "' && chmod 644 '" + loose + "'").code, 0);
  auto ctx = TlsServerContext::FromFiles(files_->cert, loose);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().field(), "tls.key");
  EXPECT_NE(ctx.status().message().find("mode 0644"), std::string::npos) << ctx.status().message();
  // Group-readable (ssl-cert) is how Debian keeps keys: allowed.
  ASSERT_EQ(::chmod(loose.c_str(), 0640), 0);
  EXPECT_TRUE(TlsServerContext::FromFiles(files_->cert, loose).ok());
  // A key that is not the certificate's.
  auto mismatch = TlsServerContext::FromFiles(files_->cert, files_->other_key);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("key values mismatch"), std::string::npos) << mismatch.status().message();
  auto missing = TlsServerContext::FromFiles(files_->dir + "/none.crt", files_->key);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().field(), "tls.cert");
}

TEST_F(TlsTest, CurlSpeaksToTheServer) {
  Start(Context(files_->cert, files_->key));
  const auto r = RunCommand("curl -sS --cacert '" + files_->ca + "' --data-binary hello " + Url("localhost") + "/echo");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "hello");
  // And refuses it without the CA, as we do.
  EXPECT_NE(RunCommand("curl -sS --data-binary hello " + Url("localhost") + "/echo").code, 0);
}

TEST_F(TlsTest, ClientSpeaksToOpenSslServer) {
  // `openssl s_server -WWW` serves files from its directory over HTTPS.
  const auto port = RunCommand(
      "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); "
      "print(s.getsockname()[1])'");
  ASSERT_EQ(port.code, 0);
  const std::string p = port.out.substr(0, port.out.find('\n'));
  ASSERT_EQ(RunCommand("echo served-by-openssl > '" + files_->dir + "/hello.txt'").code, 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::chdir(files_->dir.c_str());
    ::execlp("openssl", "openssl", "s_server", "-quiet", "-accept", ("127.0.0.1:" + p).c_str(), "-cert",
             files_->cert.c_str(), "-key", files_->key.c_str(), "-WWW", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Client c("https://127.0.0.1:" + p, Trusting(files_->ca));
  StatusOr<ClientResponse> r = Status(StatusCode::kUnavailable, "not tried");
  muster::testing::WaitFor([&] { return (r = c.Get("/hello.txt")).ok(); }, std::chrono::seconds(5), 100ms);
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, "served-by-openssl\n");
}

TEST(LoopbackTest, Hosts) {
  for (const char* h : {"localhost", "127.0.0.1", "127.1.2.3", "::1"}) EXPECT_TRUE(IsLoopbackHost(h)) << h;
  for (const char* h : {"0.0.0.0", "", "::", "10.0.0.1", "example.org", "128.0.0.1", "localhost.evil"}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
}

}  // namespace
}  // namespace muster::http
