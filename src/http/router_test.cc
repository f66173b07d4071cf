#include "http/router.h"

#include <gtest/gtest.h>

namespace muster::http {
namespace {

TEST(Router, MatchesLiteralsAndCapturesSegments) {
  Router r;
  const size_t list = r.Add("GET", "/v1/jobs");
  const size_t one = r.Add("GET", "/v1/jobs/*");
  const size_t cancel = r.Add("POST", "/v1/jobs/*/cancel");
  const size_t submit = r.Add("POST", "/v1/jobs");

  Router::Match m = r.Find("GET", "/v1/jobs");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  EXPECT_EQ(m.id, list);
  m = r.Find("POST", "/v1/jobs");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  EXPECT_EQ(m.id, submit);
  m = r.Find("GET", "/v1/jobs/42");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  EXPECT_EQ(m.id, one);
  EXPECT_EQ(m.captures, std::vector<std::string>{"42"});
  m = r.Find("POST", "/v1/jobs/7/cancel");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  EXPECT_EQ(m.id, cancel);
  EXPECT_EQ(m.captures, std::vector<std::string>{"7"});
}

TEST(Router, AnotherMethodIsWrongMethodWithTheAllowedOnes) {
  Router r;
  r.Add("GET", "/v1/jobs");
  r.Add("POST", "/v1/jobs");
  r.Add("POST", "/v1/jobs/*/cancel");
  Router::Match m = r.Find("DELETE", "/v1/jobs");
  EXPECT_EQ(m.outcome, Router::Outcome::kWrongMethod);
  EXPECT_EQ(m.allow, "GET, POST");
  EXPECT_EQ(r.Find("GET", "/v1/jobs/1/cancel").allow, "POST");
}

TEST(Router, UnknownPathsAndEmptySegmentsAreNotFound) {
  Router r;
  r.Add("GET", "/v1/jobs/*");
  r.Add("GET", "/v1/jobs/*/events");
  EXPECT_EQ(r.Find("GET", "/v1/jobs/").outcome, Router::Outcome::kNotFound);
  EXPECT_EQ(r.Find("GET", "/v1/jobs//events").outcome, Router::Outcome::kNotFound);
  EXPECT_EQ(r.Find("GET", "/v1/jobs/1/explode").outcome, Router::Outcome::kNotFound);
  EXPECT_EQ(r.Find("GET", "/v2/jobs/1").outcome, Router::Outcome::kNotFound);
  EXPECT_EQ(r.Find("GET", "/").outcome, Router::Outcome::kNotFound);
}

TEST(Router, TheTableListsEveryRouteAsAdded) {
  Router r;
  r.Add("GET", "/");
  r.Add("POST", "/v1/jobs");
  r.Add("GET", "/v1/jobs/*/events");
  const std::vector<Router::Entry> table = r.Table();
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].method + " " + table[0].pattern, "GET /");
  EXPECT_EQ(table[1].method + " " + table[1].pattern, "POST /v1/jobs");
  EXPECT_EQ(table[2].method + " " + table[2].pattern, "GET /v1/jobs/*/events");
}

}  // namespace
}  // namespace muster::http
