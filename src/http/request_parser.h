// ParseRequestHead: the head of one HTTP/1.1 request (request line and
// header fields), read from the start of a connection's buffer.
//
// What it accepts, and why the rest is refused with a status for the peer:
//   - origin-form targets ("/path?query"), HTTP/1.0 and HTTP/1.1 (else 505);
//   - lines ending in CRLF or a bare LF; no obsolete line folding (400);
//   - a body only by Content-Length (digits, at most 18; repeats must agree,
//     400). Transfer-Encoding is refused (501): no client of the API needs
//     chunked uploads, and refusing it closes request-smuggling by a
//     disagreeing proxy;
//   - at most `max_head_bytes` of head (431) and `max_fields` fields (431).
// The target must be visible ASCII; the path is percent-decoded (a bad
// escape, an escaped NUL or control character, or an escaped '/' is 400);
// the query is split on '&' and decoded with '+' as a space. "Connection:
// close" wins over "keep-alive" in the same header.
//
// Pure function: no I/O, no allocation beyond the result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/message.h"

namespace muster::http {

struct HeadLimits {
  size_t max_head_bytes = 16 << 10;
  size_t max_fields = 100;
};

struct RequestHead {
  Request request;        // method, path, params, headers; no body yet
  size_t head_bytes = 0;  // bytes of the head, its blank line included
  int64_t content_length = 0;
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; 1.0 only with "keep-alive"
  bool expect_continue = false;  // "Expect: 100-continue"
};

struct ParseError {
  int status = 400;
  std::string message;
};

enum class ParseResult { kIncomplete, kComplete, kError };

// kIncomplete: `data` holds no whole head yet (and is within the limits).
// kComplete: `head` is filled. kError: `error` says what to answer.
// `searched`, when given, carries how far a previous call on a prefix of
// the same data looked for the head's end: a head arriving a byte at a
// time is then searched once, not once per byte.
ParseResult ParseRequestHead(std::string_view data, const HeadLimits& limits, RequestHead& head, ParseError& error,
                             size_t* searched = nullptr);

// Percent-decodes `in` into `out`; '+' becomes a space when `plus_is_space`.
// False on a malformed escape or a decoded NUL.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string& out);

}  // namespace muster::http
