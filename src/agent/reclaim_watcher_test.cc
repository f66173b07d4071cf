#include "agent/reclaim_watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "common/rfc3339.h"
#include "http/server.h"

namespace muster::agent {
namespace {

const Time kNow = *ParseRfc3339Utc("2026-11-28T08:20:00Z");

TEST(ReclaimAnswer, AwsSpotInstanceAction) {
  auto none = ParseReclaimAnswer(404, "Not Found", kNow);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  auto n = ParseReclaimAnswer(200, R"({"action": "terminate", "time": "2026-11-28T08:22:00Z"})", kNow);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_TRUE(n->has_value());
  EXPECT_EQ((*n)->deadline - kNow, Duration::Minutes(2));
  EXPECT_EQ((*n)->source, "aws spot instance-action: terminate at 2026-11-28T08:22:00Z");
}

TEST(ReclaimAnswer, GcePreemptedCountsThirtySecondsFromTheFirstTrue) {
  auto no = ParseReclaimAnswer(200, "FALSE", kNow);
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(no->has_value());
  auto yes = ParseReclaimAnswer(200, "TRUE\n", kNow + Duration::Seconds(5), kNow);
  ASSERT_TRUE(yes.ok() && yes->has_value());
  EXPECT_EQ((*yes)->deadline, kNow + Duration::Seconds(30));
  EXPECT_EQ((*yes)->source, "gce preempted");
}

TEST(ReclaimAnswer, AnythingElseIsAnErrorThatSaysWhatCame) {
  auto server_error = ParseReclaimAnswer(500, "oops", kNow);
  ASSERT_FALSE(server_error.ok());
  EXPECT_NE(server_error.status().message().find("HTTP 500: oops"), std::string::npos)
      << server_error.status().ToString();
  auto junk = ParseReclaimAnswer(200, "<html>", kNow);
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("<html>"), std::string::npos) << junk.status().ToString();
  auto bad_time = ParseReclaimAnswer(200, R"({"action": "stop", "time": "soon"})", kNow);
  ASSERT_FALSE(bad_time.ok());
  EXPECT_EQ(bad_time.status().field(), "reclaim notice.time");
}

// A metadata endpoint on a real loopback HTTP server that, like EC2 with
// IMDSv2 required, refuses requests without a session token.
class Endpoint {
 public:
  Endpoint() {
    server_.Handle("PUT", "/latest/api/token", [this](const http::Request& req, http::Response& res) {
      if (req.Header("X-aws-ec2-metadata-token-ttl-seconds").empty()) return res.Set(400, "", "");
      ++tokens_;
      res.Set(200, "tok-1", "text/plain");
    });
    server_.Handle("GET", "/latest/meta-data/spot/instance-action",
                   [this](const http::Request& req, http::Response& res) {
                     if (req.Header("X-aws-ec2-metadata-token") != "tok-1") return res.Set(401, "", "");
                     std::lock_guard<std::mutex> lock(mu_);
                     if (answer_.empty()) return res.Set(404, "Not Found", "text/plain");
                     res.Set(200, answer_, "text/plain");
                   });
    EXPECT_TRUE(server_.Bind().ok());
    thread_ = std::thread([this] { server_.Serve(); });
  }
  ~Endpoint() {
    server_.Stop();
    thread_.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(server_.port()) + "/latest/meta-data/spot/instance-action";
  }
  void Notice(std::string answer) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = std::move(answer);
  }
  int tokens() const { return tokens_; }

 private:
  http::Server server_{http::Server::Options{}};
  std::thread thread_;
  std::mutex mu_;
  std::string answer_;
  std::atomic<int> tokens_{0};
};

TEST(MetadataReclaimWatcher, ReadsARealEndpointWithASessionToken) {
  Endpoint endpoint;
  SimClock clock(kNow);
  std::unique_ptr<ReclaimWatcher> w = NewMetadataReclaimWatcher(endpoint.url(), clock);
  auto first = w->Check();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->has_value());
  EXPECT_EQ(endpoint.tokens(), 1);
  endpoint.Notice(R"({"action": "terminate", "time": "2026-11-28T08:22:00Z"})");
  auto notice = w->Check();
  ASSERT_TRUE(notice.ok()) << notice.status().ToString();
  ASSERT_TRUE(notice->has_value());
  EXPECT_EQ((*notice)->deadline - kNow, Duration::Minutes(2));
  EXPECT_EQ(endpoint.tokens(), 1) << "the token is kept";
}

TEST(MetadataReclaimWatcher, NoEndpointIsAnError) {
  SimClock clock(kNow);
  std::unique_ptr<ReclaimWatcher> w = NewMetadataReclaimWatcher("http://127.0.0.1:1/x", clock);
  auto r = w->Check();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

}  // namespace
}  // namespace muster::agent
