// JobWatch over a real HTTP server and client: what a watch sends, from
// which version, through which filter, and when it ends.
#include "server/job_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "http/client.h"
#include "http/server.h"
#include "wait_for.h"

namespace muster::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using muster::testing::WaitFor;

store::JobRow Row(int64_t id, const std::string& state, const std::string& labels = "{}") {
  store::JobRow r;
  r.id = id;
  r.name = "j" + std::to_string(id);
  r.user = "ann";
  r.queue = "default";
  r.state = state;
  r.spec_json = R"({"name":"j)" + std::to_string(id) + R"(","labels":)" + labels + "}";
  return r;
}

JobWatch::Change Changed(int64_t id, const std::string& state, std::optional<std::string> before,
                         const std::string& labels = "{}") {
  return {Row(id, state, labels), std::move(before)};
}

// A watch's lines, read on a thread of its own through a real server.
class Reader {
 public:
  Reader(int port, std::string target) : client_("127.0.0.1", port) {
    thread_ = std::thread([this, target = std::move(target)] {
      std::string partial;
      auto r = client_.Stream(target, {}, [&](std::string_view d) {
        partial.append(d);
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1)) {
          lines_.push_back(json::parse(partial.substr(0, nl)));
        }
        return true;
      });
      std::lock_guard<std::mutex> lock(mu_);
      if (r.ok() && r->status != 200) lines_.push_back(json::parse(r->body));
      ended_ = true;
    });
  }
  ~Reader() {
    client_.Interrupt();
    thread_.join();
  }
  // The first `n` lines, once they came (5 s at most).
  std::vector<json> Wait(size_t n) {
    WaitFor(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return lines_.size() >= n || ended_;
        },
        5s);
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  bool WaitEnded() {
    return WaitFor(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return ended_;
        },
        5s);
  }

 private:
  http::Client client_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<json> lines_;  // guarded by mu_
  bool ended_ = false;       // guarded by mu_
};

class JobWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.HandleAsync("GET", "/watch", [this](http::Request&& req, http::Server::Reply reply) {
      store::JobFilter f;
      if (req.HasParam("state")) f.states = {req.Param("state")};
      const Status s = watch_.Watch(f, req.Param("from"), [&] {
        http::Response head;
        head.status = 200;
        return reply.Start(std::move(head));
      });
      if (!s.ok()) {
        http::Response res;
        res.Set(s.code() == StatusCode::kOutOfRange ? 410 : 400, json{{"error", s.message()}}.dump(),
                "application/json");
        reply(std::move(res));
      }
    });
    ASSERT_TRUE(server_.Bind().ok());
    thread_ = std::thread([this] { server_.Serve(); });
    watch_.Start();
  }
  void TearDown() override {
    watch_.Stop();
    server_.Stop();
    thread_.join();
  }
  // Waits until the watch of `n` watches is registered.
  void WaitWatches(size_t n) {
    WaitFor([&] { return watch_.watches() >= n; }, 5s);
    ASSERT_EQ(watch_.watches(), n);
  }

  SimClock clock_{Time::FromSeconds(1'000)};
  JobWatch watch_{clock_, {.retained = 5, .bookmark_every = 200ms, .keep_after_list = Duration::Hours(1)}};
  http::Server server_{{}};
  std::thread thread_;
};

TEST_F(JobWatchTest, AWatchFromAListsVersionGetsEveryChangeAfterIt) {
  EXPECT_FALSE(watch_.Keeping());
  watch_.Publish({});  // before any list: not kept
  const std::string listed = watch_.ListVersion();
  EXPECT_TRUE(watch_.Keeping());
  std::vector<JobWatch::Change> first;
  first.push_back(Changed(1, "PENDING", ""));
  watch_.Publish(std::move(first));
  Reader r(server_.port(), "/watch?from=" + listed);
  WaitWatches(1);
  std::vector<JobWatch::Change> second;
  second.push_back(Changed(1, "RUNNING", "PENDING"));
  watch_.Publish(std::move(second));
  const std::vector<json> lines = r.Wait(2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["type"], "ADDED");
  EXPECT_EQ(lines[0]["object"]["state"], "PENDING");
  EXPECT_EQ(lines[0]["object"]["id"], 1);
  EXPECT_EQ(lines[1]["type"], "MODIFIED");
  EXPECT_EQ(lines[1]["object"]["state"], "RUNNING");
  // Versions: the list's run, counting on from it.
  const std::string run = listed.substr(0, listed.find('-'));
  EXPECT_EQ(listed, run + "-1");
  EXPECT_EQ(lines[0]["resourceVersion"], run + "-2");
  EXPECT_EQ(lines[1]["resourceVersion"], run + "-3");
}

TEST_F(JobWatchTest, AJobThatLeavesTheFiltersStatesIsDeleted) {
  watch_.ListVersion();
  Reader r(server_.port(), "/watch?state=RUNNING");
  WaitWatches(1);
  std::vector<JobWatch::Change> b;
  b.push_back(Changed(7, "PENDING", ""));         // never RUNNING: nothing
  b.push_back(Changed(8, "RUNNING", "PENDING"));  // enters: ADDED
  watch_.Publish(std::move(b));
  std::vector<JobWatch::Change> c;
  c.push_back(Changed(8, "RUNNING", std::nullopt));  // its reason, say: MODIFIED
  watch_.Publish(std::move(c));
  std::vector<JobWatch::Change> d;
  d.push_back(Changed(8, "COMPLETED", "RUNNING"));  // leaves: DELETED
  watch_.Publish(std::move(d));
  const std::vector<json> lines = r.Wait(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["type"], "ADDED");
  EXPECT_EQ(lines[1]["type"], "MODIFIED");
  EXPECT_EQ(lines[2]["type"], "DELETED");
  EXPECT_EQ(lines[2]["object"]["state"], "COMPLETED");
  for (const json& l : lines) EXPECT_EQ(l["object"]["id"], 8) << l.dump();
}

TEST_F(JobWatchTest, VersionsNotKeptOrOfAnotherRunAreExpired) {
  const std::string listed = watch_.ListVersion();
  const std::string run = listed.substr(0, listed.find('-'));
  for (int i = 1; i <= 7; ++i) {  // 7 changes; 5 are kept
    std::vector<JobWatch::Change> b;
    b.push_back(Changed(i, "PENDING", ""));
    watch_.Publish(std::move(b));
  }
  auto open = [&](const std::string& from) {
    return watch_.Watch({}, from, [] { return http::Server::Stream(nullptr); });
  };
  EXPECT_EQ(open(listed).code(), StatusCode::kOutOfRange);  // jobs 1 and 2 are not kept
  EXPECT_EQ(open(run + "-1").code(), StatusCode::kOutOfRange);
  EXPECT_EQ(open("1-3").code(), StatusCode::kOutOfRange);        // another run
  EXPECT_EQ(open(run + "-99").code(), StatusCode::kOutOfRange);  // not yet
  EXPECT_EQ(open("three").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(open(run + "-x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(watch_.watches(), 0u);
  // From the oldest kept one on, it is served.
  Reader r(server_.port(), "/watch?from=" + run + "-2");  // job i was version i
  const std::vector<json> lines = r.Wait(5);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines.front()["object"]["id"], 3);
  EXPECT_EQ(lines.back()["object"]["id"], 7);
}

TEST_F(JobWatchTest, ASilentWatchGetsBookmarksAndStopEndsIt) {
  const std::string listed = watch_.ListVersion();
  Reader r(server_.port(), "/watch");
  const std::vector<json> lines = r.Wait(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["type"], "BOOKMARK");
  EXPECT_EQ(lines[0]["resourceVersion"], listed);
  watch_.Stop();
  EXPECT_TRUE(r.WaitEnded());
  EXPECT_EQ(watch_.watches(), 0u);
}

TEST_F(JobWatchTest, AWatchThatFallsBehindWhatIsKeptIsToldToListAgain) {
  watch_.ListVersion();
  Reader r(server_.port(), "/watch");
  WaitWatches(1);
  // More changes at once than are kept, before the pump sends any.
  std::vector<JobWatch::Change> many;
  for (int i = 1; i <= 6; ++i) many.push_back(Changed(i, "PENDING", ""));
  watch_.Publish(std::move(many));
  const std::vector<json> lines = r.Wait(1);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back()["type"], "ERROR");
  EXPECT_EQ(lines.back()["object"]["code"], 410);
  EXPECT_TRUE(r.WaitEnded());
}

TEST(JobWatchBytes, WhatIsKeptIsBoundedInBytesToo) {
  SimClock clock{Time::FromSeconds(1)};
  JobWatch watch(clock, {.retained = 1000, .retained_bytes = 100'000});
  const std::string listed = watch.ListVersion();
  const std::string run = listed.substr(0, listed.find('-'));
  for (int i = 1; i <= 20; ++i) {  // about 20 KB each: the first ones go
    std::vector<JobWatch::Change> b;
    b.push_back(Changed(i, "PENDING", ""));
    b.back().row.spec_json = std::string(10'000, ' ') + "{}";
    watch.Publish(std::move(b));
  }
  auto open = [&](const std::string& from) {
    return watch.Watch({}, from, [] { return http::Server::Stream(nullptr); });
  };
  EXPECT_EQ(open(run + "-10").code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(open(run + "-17").ok());
}

}  // namespace
}  // namespace muster::server
