// FailoverClient against real http::Servers playing a leader and standbys.
#include "http/failover_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "free_port.h"
#include "http/server.h"

namespace muster::http {
namespace {

// A server that answers as `role` ("leader", "standby") naming `leader`,
// and counts the requests it acted on (as leader).
class Member {
 public:
  explicit Member(std::string role) : role_(std::move(role)) {
    Server::Options o;
    o.port = 0;
    o.worker_threads = 2;
    server_ = std::make_unique<Server>(o);
    server_->Handle("GET", "/healthz", [this](const Request&, Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      res.headers.emplace_back("X-Muster-Role", role_);
      res.Set(200, "{\"leader\":\"" + leader_ + "\",\"role\":\"" + role_ + "\"}", "application/json");
    });
    server_->Handle("POST", "/v1/jobs", [this](const Request&, Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (role_ != "leader") {
        res.headers.emplace_back("X-Muster-Role", role_);
        if (!leader_.empty()) res.headers.emplace_back("X-Muster-Leader", leader_);
        res.Set(503, "{\"error\":{\"code\":\"NotLeader\"}}", "application/json");
        return;
      }
      ++acted_;
      res.Set(201, "{\"id\":1}", "application/json");
    });
    EXPECT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { server_->Serve(); });
  }
  ~Member() {
    server_->Stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  void set_leader(const std::string& l) {
    std::lock_guard<std::mutex> lock(mu_);
    leader_ = l;
  }
  void set_role(const std::string& r) {
    std::lock_guard<std::mutex> lock(mu_);
    role_ = r;
  }
  int acted() const { return acted_; }

 private:
  std::mutex mu_;
  std::string role_, leader_;  // guarded by mu_
  std::atomic<int> acted_{0};
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

// A port nothing listens on.
std::string Closed() { return "http://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()); }

TEST(SplitServers, TrimsAndDropsEmptyEntries) {
  EXPECT_EQ(SplitServers(" a:1, b:2,,c:3 "), (std::vector<std::string>{"a:1", "b:2", "c:3"}));
  EXPECT_EQ(SplitServers("http://x:1"), (std::vector<std::string>{"http://x:1"}));
}

TEST(FailoverClient, FindsTheLeaderPastADeadServerAndAStandby) {
  Member standby("standby"), leader("leader");
  standby.set_leader(leader.url());
  FailoverClient c(Closed() + "," + standby.url() + "," + leader.url());
  for (int i = 0; i < 3; ++i) {
    auto r = c.Post("/v1/jobs", "{}", "application/json");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 201);
  }
  EXPECT_EQ(leader.acted(), 3);
  EXPECT_EQ(c.current(), leader.url());
}

// The leader changes between requests: the next request finds the new one.
TEST(FailoverClient, FollowsALeaderThatMoved) {
  auto first = std::make_unique<Member>("leader");
  Member second("standby");
  FailoverClient c(first->url() + "," + second.url());
  ASSERT_EQ(c.Post("/v1/jobs", "{}", "application/json")->status, 201);
  EXPECT_EQ(c.current(), first->url());
  first.reset();  // the leader dies; the standby takes over
  second.set_role("leader");
  auto r = c.Post("/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(second.acted(), 1);
}

// A standby may name a leader that is paused (it accepts connections and
// never answers): the client trusts only a server's word about itself, and
// gives a silent one a second.
TEST(FailoverClient, AStandbysWordDoesNotSendItToAPausedLeader) {
  Member standby("standby"), leader("leader");
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);  // listens, never answers
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(silent, 16);
  ::getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string paused = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  standby.set_leader(paused);
  FailoverClient c(standby.url() + "," + paused + "," + leader.url());
  const auto began = std::chrono::steady_clock::now();
  auto r = c.Post("/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
  ::close(silent);
}

TEST(FailoverClient, NoLeaderIsUnavailableSayingWhatEachSaid) {
  Member a("standby"), b("taking-over");
  const std::string dead = Closed();
  FailoverClient c(a.url() + "," + b.url() + "," + dead);
  auto r = c.Post("/v1/jobs", "{}", "application/json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find(a.url() + ": standby"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(b.url() + ": taking-over"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(dead + ": "), std::string::npos) << r.status().message();
}

// One address: exactly the plain client (a standby's 503 is its answer).
TEST(FailoverClient, OneAddressIsThePlainClient) {
  Member standby("standby");
  FailoverClient c(standby.url());
  auto r = c.Post("/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
}

}  // namespace
}  // namespace muster::http
