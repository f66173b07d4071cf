// libFuzzer target for the HTTP request parser (src/http/request_parser.h).
//
// Every byte a client sends reaches this parser first, before any limit but
// its own. Checks its promises, aborting (a reported crash) when one breaks:
//   1. parsing never crashes, throws or hangs (libFuzzer and the sanitizers
//      catch those), with the default bounds and with small ones;
//   2. an error has a status the server answers with (400, 417, 431, 501,
//      505) and a message without raw control characters;
//   3. a parsed head stays within its input and its bounds: head_bytes is
//      at most the input and the head bound, Content-Length >= 0, the path
//      starts with '/' and holds no NUL, header names are non-empty tokens,
//      header values hold no CR, LF or NUL, fields are within their bound;
//   4. it is whole or not at all: the input cut one byte before the head's
//      end is incomplete (the server waits for more), never another request;
//   5. resuming gives the same answer: a call on the first half, then one on
//      the whole that resumes its search, agrees with one call on the whole.
// See README.md for building and running it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_checks.h"
#include "http/request_parser.h"

namespace {

using muster::fuzz::Fail;
using namespace muster::http;

void Check(std::string_view data, const HeadLimits& limits) {
  RequestHead head;
  ParseError error;
  const ParseResult r = ParseRequestHead(data, limits, head, error);
  {
    size_t searched = 0;
    RequestHead h;
    ParseError e;
    if (ParseRequestHead(data.substr(0, data.size() / 2), limits, h, e, &searched) == ParseResult::kIncomplete) {
      const ParseResult again = ParseRequestHead(data, limits, h, e, &searched);
      if (again != r || (r == ParseResult::kComplete && h.head_bytes != head.head_bytes) ||
          (r == ParseResult::kError && e.status != error.status)) {
        Fail("resuming the search gives another answer", std::string(data));
      }
    }
  }
  if (r == ParseResult::kIncomplete) {
    if (data.size() > limits.max_head_bytes) Fail("incomplete beyond the head bound", std::to_string(data.size()));
    return;
  }
  if (r == ParseResult::kError) {
    if (error.status != 400 && error.status != 417 && error.status != 431 && error.status != 501 &&
        error.status != 505) {
      Fail("unexpected error status", std::to_string(error.status));
    }
    if (error.message.empty()) Fail("error without a message", "");
    for (unsigned char c : error.message) {
      if (c < 0x20 || c == 0x7F) Fail("raw control character in error", error.message);
    }
    return;
  }
  if (head.head_bytes == 0 || head.head_bytes > data.size() || head.head_bytes > limits.max_head_bytes) {
    Fail("head_bytes out of range", std::to_string(head.head_bytes));
  }
  if (head.content_length < 0) Fail("negative Content-Length", std::to_string(head.content_length));
  const Request& req = head.request;
  if (req.path.empty() || req.path.front() != '/' || req.path.find('\0') != std::string::npos)
    Fail("bad path", req.path);
  if (req.headers.size() > limits.max_fields) Fail("too many fields", std::to_string(req.headers.size()));
  for (const auto& [name, value] : req.headers) {
    if (name.empty()) Fail("empty header name", value);
    for (char c : name) {
      if (c <= 0x20 || c == ':' || static_cast<unsigned char>(c) >= 0x7F) Fail("header name is not a token", name);
    }
    if (value.find_first_of(std::string("\r\n\0", 3)) != std::string::npos)
      Fail("CR, LF or NUL in a header value", value);
  }
  // Cut one byte short of the head's end: not yet a request.
  RequestHead shorter;
  ParseError shorter_error;
  if (ParseRequestHead(data.substr(0, head.head_bytes - 1), limits, shorter, shorter_error) == ParseResult::kComplete) {
    Fail("a head is complete before its blank line", std::string(data.substr(0, head.head_bytes)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Check(text, HeadLimits{});
  HeadLimits small;
  small.max_head_bytes = 64;
  small.max_fields = 2;
  Check(text, small);
  return 0;
}
