#include "agent/log_server.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "auth/grants.h"
#include "http/client.h"

namespace muster::agent {
namespace {

namespace fs = std::filesystem;

class LogServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/log_server_" + std::to_string(::getpid());
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/j7.a1.r0.log") << "one\ntwo\nthree\n";
    auto started = LogServer::Start({"127.0.0.1", 0, ""}, kGrantKey, clock_,
                                    [this](const std::string& key) { return dir_ + "/" + key + ".log"; });
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    logs_ = std::move(*started);
  }
  void TearDown() override {
    logs_.reset();
    fs::remove_all(dir_);
  }
  // GET path with a grant for `task` valid for a minute ("": none).
  http::ClientResponse Get(const std::string& path, const std::string& task) {
    http::Client c("127.0.0.1", logs_->port());
    http::Fields headers;
    if (!task.empty()) {
      headers.emplace_back("X-Muster-Grant", auth::SignLogGrant(kGrantKey, task, clock_.Now().millis() + 60'000));
    }
    auto r = c.Get(path, headers);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::ClientResponse{};
  }

  static constexpr const char* kGrantKey = "the-node-token-digest";
  SimClock clock_{Time::FromSeconds(1'800'000'000)};
  std::string dir_;
  std::unique_ptr<LogServer> logs_;
};

TEST_F(LogServerTest, ServesALogWithTheServersGrantFromAnOffsetOrItsTail) {
  ASSERT_GT(logs_->port(), 0);
  EXPECT_EQ(logs_->tls_pin(), "") << "plain HTTP unless asked";
  http::ClientResponse all = Get("/logs/j7.a1.r0", "j7.a1.r0");
  EXPECT_EQ(all.status, 200);
  EXPECT_EQ(all.body, "one\ntwo\nthree\n");
  EXPECT_EQ(all.Header("X-Muster-Log-Offset"), "14");
  http::ClientResponse from = Get("/logs/j7.a1.r0?offset=8", "j7.a1.r0");
  EXPECT_EQ(from.body, "three\n");
  http::ClientResponse tail = Get("/logs/j7.a1.r0?tail=2", "j7.a1.r0");
  EXPECT_EQ(tail.body, "two\nthree\n");
}

TEST_F(LogServerTest, RefusesWithoutAGrantForThatTaskABadKeyAndAMissingLog) {
  EXPECT_EQ(Get("/logs/j7.a1.r0", "").status, 403);
  EXPECT_EQ(Get("/logs/j7.a1.r0", "j8.a1.r0").status, 403) << "another task's grant";
  EXPECT_EQ(Get("/logs/..%2Fetc%2Fpasswd", "..%2Fetc%2Fpasswd").status, 400);
  EXPECT_EQ(Get("/logs/j9.a1.r0", "j9.a1.r0").status, 404);
}

TEST_F(LogServerTest, OverTlsItHasAPinForTheServer) {
  auto tls = LogServer::Start({"127.0.0.1", 0, "node-1"}, kGrantKey, clock_,
                              [this](const std::string& key) { return dir_ + "/" + key + ".log"; });
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_FALSE((*tls)->tls_pin().empty());
  EXPECT_GT((*tls)->port(), 0);
  EXPECT_NE((*tls)->port(), logs_->port());
}

TEST(ReadLogTest, AnOffsetPastTheEndReadsNothingAndATailOfZeroToo) {
  const std::string path = ::testing::TempDir() + "/read_log_" + std::to_string(::getpid());
  std::ofstream(path) << "a\nb\n";
  EXPECT_EQ(ReadLog(path, 100, -1), (std::pair<std::string, int64_t>{"", 4}));
  EXPECT_EQ(ReadLog(path, -1, 0), (std::pair<std::string, int64_t>{"", 4}));
  EXPECT_EQ(ReadLog(path + ".none", 0, -1), (std::pair<std::string, int64_t>{"", 0}));
  EXPECT_TRUE(ValidTaskKey("j1.a2.r3"));
  EXPECT_FALSE(ValidTaskKey("j1.a2"));
  EXPECT_FALSE(ValidTaskKey("../j1.a2.r3"));
  fs::remove(path);
}

}  // namespace
}  // namespace muster::agent
