#include "http/request_parser.h"

#include <gtest/gtest.h>

namespace muster::http {
namespace {

struct Parsed {
  ParseResult result;
  RequestHead head;
  ParseError error;
};

Parsed Parse(std::string_view text, HeadLimits limits = {}) {
  Parsed p;
  p.result = ParseRequestHead(text, limits, p.head, p.error);
  return p;
}

TEST(ParseRequestHead, ReadsTheRequestLineHeadersAndQuery) {
  const std::string text =
      "GET /v1/jobs?state=RUNNING&name=a%20b+c&flag HTTP/1.1\r\nHost: x\r\nX-Muster-User:  ana \r\n\r\nrest";
  Parsed p = Parse(text);
  ASSERT_EQ(p.result, ParseResult::kComplete) << p.error.message;
  EXPECT_EQ(p.head.request.method, "GET");
  EXPECT_EQ(p.head.request.path, "/v1/jobs");
  EXPECT_EQ(p.head.request.Param("state"), "RUNNING");
  EXPECT_EQ(p.head.request.Param("name"), "a b c");
  EXPECT_TRUE(p.head.request.HasParam("flag"));
  EXPECT_EQ(p.head.request.Header("x-muster-user"), "ana");
  EXPECT_EQ(p.head.head_bytes, text.size() - 4);
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_EQ(p.head.content_length, 0);
}

TEST(ParseRequestHead, IsIncompleteUntilTheBlankLine) {
  EXPECT_EQ(Parse("").result, ParseResult::kIncomplete);
  EXPECT_EQ(Parse("POST /v1/jobs HTTP/1.1\r\nContent-Length: 5\r\n").result, ParseResult::kIncomplete);
  Parsed p = Parse("POST /v1/jobs HTTP/1.1\r\nContent-Length: 5\r\n\r\n");
  ASSERT_EQ(p.result, ParseResult::kComplete);
  EXPECT_EQ(p.head.content_length, 5);
}

// A head arriving a byte at a time: each call resumes where the last stopped,
// and finds the same head as one call on the whole.
TEST(ParseRequestHead, ResumesWhereItStoppedSearching) {
  const std::string text = "POST /v1/jobs?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
  const size_t head_end = text.find("abc");
  size_t searched = 0;
  for (size_t n = 1; n <= text.size(); ++n) {
    RequestHead head;
    ParseError error;
    const ParseResult r = ParseRequestHead(std::string_view(text).substr(0, n), {}, head, error, &searched);
    if (n < head_end) {
      ASSERT_EQ(r, ParseResult::kIncomplete) << n;
      EXPECT_EQ(searched, n);
    } else {
      ASSERT_EQ(r, ParseResult::kComplete) << n;
      EXPECT_EQ(head.head_bytes, head_end);
      EXPECT_EQ(head.content_length, 3);
      EXPECT_EQ(head.request.Param("a"), "1");
      break;
    }
  }
  // Bare line feeds, the blank line split across calls.
  searched = 0;
  RequestHead head;
  ParseError error;
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\n", {}, head, error, &searched), ParseResult::kIncomplete);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\n\n", {}, head, error, &searched), ParseResult::kComplete);
}

TEST(ParseRequestHead, AcceptsBareLineFeeds) {
  Parsed p = Parse("GET /healthz HTTP/1.0\nConnection: keep-alive\n\n");
  ASSERT_EQ(p.result, ParseResult::kComplete) << p.error.message;
  EXPECT_EQ(p.head.request.path, "/healthz");
  EXPECT_TRUE(p.head.keep_alive);
}

TEST(ParseRequestHead, KeepAliveFollowsTheVersionAndConnectionHeader) {
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nConnection: upgrade, close\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n").head.keep_alive);
}

TEST(ParseRequestHead, ExpectContinue) {
  EXPECT_TRUE(Parse("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n").head.expect_continue);
  Parsed p = Parse("POST / HTTP/1.1\r\nExpect: something\r\n\r\n");
  EXPECT_EQ(p.result, ParseResult::kError);
  EXPECT_EQ(p.error.status, 417);
}

TEST(ParseRequestHead, MalformedHeadsAreErrorsWithTheirStatus) {
  struct Case {
    std::string text;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET\r\n\r\n", 400},
      {"GET /a b HTTP/1.1\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET http://x/ HTTP/1.1\r\n\r\n", 400},
      {"GET /%zz HTTP/1.1\r\n\r\n", 400},
      {"GET /%4 HTTP/1.1\r\n\r\n", 400},
      {"GET /a%00b HTTP/1.1\r\n\r\n", 400},
      {"GET /a%0Ab HTTP/1.1\r\n\r\n", 400},
      {"POST /v1/jobs/1%2Fcancel HTTP/1.1\r\n\r\n", 400},  // one more path separator than a proxy saw
      {"GET /v1%2fjobs HTTP/1.1\r\n\r\n", 400},
      {std::string("GET /h/\0hz HTTP/1.1\r\n\r\n", 23), 400},  // found by http_request_fuzz
      {"GET /a\tb HTTP/1.1\r\n\r\n", 400},
      {"GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n", 400},
      {"GET /?a=%g1 HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nNo colon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 9999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Parsed p = Parse(c.text);
    ASSERT_EQ(p.result, ParseResult::kError);
    EXPECT_EQ(p.error.status, c.status) << p.error.message;
    EXPECT_FALSE(p.error.message.empty());
  }
  // The same Content-Length twice is one length.
  Parsed same = Parse("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n");
  ASSERT_EQ(same.result, ParseResult::kComplete);
  EXPECT_EQ(same.head.content_length, 2);
}

TEST(ParseRequestHead, BoundsTheHeadAndItsFields) {
  HeadLimits limits;
  limits.max_head_bytes = 64;
  limits.max_fields = 2;
  // Over the bound before the blank line arrives: an error, not a wait.
  Parsed big = Parse("GET / HTTP/1.1\r\nA: " + std::string(100, 'x'), limits);
  ASSERT_EQ(big.result, ParseResult::kError);
  EXPECT_EQ(big.error.status, 431);
  Parsed whole = Parse("GET / HTTP/1.1\r\nA: " + std::string(100, 'x') + "\r\n\r\n", limits);
  EXPECT_EQ(whole.error.status, 431);
  Parsed fields = Parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits);
  ASSERT_EQ(fields.result, ParseResult::kError);
  EXPECT_EQ(fields.error.status, 431);
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n", limits).result, ParseResult::kComplete);
}

TEST(PercentDecode, DecodesAndRejects) {
  std::string out;
  EXPECT_TRUE(PercentDecode("a%2Fb+c", false, out));
  EXPECT_EQ(out, "a/b+c");
  EXPECT_TRUE(PercentDecode("a%2fb+c", true, out));
  EXPECT_EQ(out, "a/b c");
  EXPECT_FALSE(PercentDecode("%", false, out));
  EXPECT_FALSE(PercentDecode("%2", false, out));
  EXPECT_FALSE(PercentDecode("%00", false, out));
}

}  // namespace
}  // namespace muster::http
