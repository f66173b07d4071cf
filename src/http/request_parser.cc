#include "http/request_parser.h"

#include <algorithm>
#include <charconv>

namespace muster::http {
namespace {

bool IsTokenChar(char c) {
  if (c >= 'a' && c <= 'z') return true;
  if (c >= 'A' && c <= 'Z') return true;
  if (c >= '0' && c <= '9') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar); }

// True when the comma-separated header value lists `token` (any case).
bool ListsToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = std::min(value.find(','), value.size());
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (EqualsIgnoringCase(item, token)) return true;
    value.remove_prefix(std::min(comma + 1, value.size()));
  }
  return false;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

ParseResult Fail(ParseError& error, int status, std::string message) {
  error.status = status;
  error.message = std::move(message);
  return ParseResult::kError;
}

// The next line of `data` from `pos`, without its CR LF or LF; false when
// no line ends there.
bool NextLine(std::string_view data, size_t& pos, std::string_view& line) {
  const size_t lf = data.find('\n', pos);
  if (lf == std::string_view::npos) return false;
  size_t end = lf;
  if (end > pos && data[end - 1] == '\r') --end;
  line = data.substr(pos, end - pos);
  pos = lf + 1;
  return true;
}

ParseResult ParseTarget(std::string_view target, Request& req, ParseError& error) {
  if (target.empty() || target.front() != '/') {
    return Fail(error, 400, "the request target must be a path starting with '/'");
  }
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F) {
      return Fail(error, 400, "the request target must be visible ASCII (percent-encode other bytes)");
    }
  }
  req.target = std::string(target);
  const size_t q = target.find('?');
  // An escaped '/' would be one more separator to the router, where a proxy
  // in front saw none (a path rule passed by "/v1/jobs/1%2Fcancel").
  const std::string_view raw_path = target.substr(0, q);
  for (size_t i = 0; i + 2 < raw_path.size(); ++i) {
    if (raw_path[i] == '%' && raw_path[i + 1] == '2' && (raw_path[i + 2] == 'F' || raw_path[i + 2] == 'f')) {
      return Fail(error, 400, "the request path has an escaped '/' (%2F), which no path here has");
    }
  }
  if (!PercentDecode(raw_path, false, req.path)) {
    return Fail(error, 400, "the request path has a malformed percent-escape");
  }
  for (char c : req.path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return Fail(error, 400, "the request path has an escaped control character");
    }
  }
  if (q == std::string_view::npos) return ParseResult::kComplete;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = std::min(query.find('&'), query.size());
    const std::string_view pair = query.substr(0, amp);
    query.remove_prefix(std::min(amp + 1, query.size()));
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key, value;
    if (!PercentDecode(pair.substr(0, eq), true, key) ||
        (eq != std::string_view::npos && !PercentDecode(pair.substr(eq + 1), true, value))) {
      return Fail(error, 400, "the query has a malformed percent-escape");
    }
    req.params.emplace_back(std::move(key), std::move(value));
  }
  return ParseResult::kComplete;
}

}  // namespace

bool PercentDecode(std::string_view in, bool plus_is_space, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      if (c == '\0') return false;
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    out.push_back(c);
  }
  return true;
}

ParseResult ParseRequestHead(std::string_view data, const HeadLimits& limits, RequestHead& head, ParseError& error,
                             size_t* searched) {
  // Find the blank line first: nothing is parsed until the head is whole.
  // A blank line is at most 3 bytes ("\n\r\n"): resume 2 before the end of
  // what was searched.
  const size_t from = searched && *searched >= 2 ? std::min(*searched - 2, data.size()) : 0;
  size_t end = std::string_view::npos;
  for (size_t lf = data.find('\n', from); lf != std::string_view::npos; lf = data.find('\n', lf + 1)) {
    if (lf + 1 < data.size() && data[lf + 1] == '\n') {
      end = lf + 2;
      break;
    }
    if (lf + 2 < data.size() && data[lf + 1] == '\r' && data[lf + 2] == '\n') {
      end = lf + 3;
      break;
    }
    if (lf + 1 > limits.max_head_bytes) break;
  }
  if (end == std::string_view::npos || end > limits.max_head_bytes) {
    if (data.size() > limits.max_head_bytes) {
      return Fail(error, 431, "the request head is over " + std::to_string(limits.max_head_bytes) + " bytes");
    }
    if (searched) *searched = data.size();
    return ParseResult::kIncomplete;
  }
  const std::string_view text = data.substr(0, end);
  head = RequestHead{};
  head.head_bytes = end;
  Request& req = head.request;

  size_t pos = 0;
  std::string_view line;
  NextLine(text, pos, line);
  // Request line: METHOD SP target SP HTTP/1.x
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Fail(error, 400, "malformed request line");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Fail(error, 400, "malformed request method");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return Fail(error, 505, "only HTTP/1.1 and HTTP/1.0 are served");
  }
  req.method = method;
  if (ParseTarget(target, req, error) == ParseResult::kError) return ParseResult::kError;
  const bool http10 = version == "HTTP/1.0";
  head.keep_alive = !http10;

  bool have_length = false;
  while (NextLine(text, pos, line) && !line.empty()) {
    if (line.front() == ' ' || line.front() == '\t') return Fail(error, 400, "folded header lines are not accepted");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Fail(error, 400, "malformed header field");
    }
    std::string_view name = line.substr(0, colon), value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    for (char c : value) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        return Fail(error, 400, "a header value has a control character");
      }
    }
    if (req.headers.size() == limits.max_fields) {
      return Fail(error, 431, "more than " + std::to_string(limits.max_fields) + " header fields");
    }
    if (EqualsIgnoringCase(name, "content-length")) {
      int64_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || value.size() > 18 || value.front() < '0' || value.front() > '9' || ec != std::errc() ||
          p != value.data() + value.size() || (have_length && n != head.content_length)) {
        return Fail(error, 400, "malformed Content-Length");
      }
      have_length = true;
      head.content_length = n;
    } else if (EqualsIgnoringCase(name, "transfer-encoding")) {
      return Fail(error, 501, "Transfer-Encoding is not supported; send the body with Content-Length");
    } else if (EqualsIgnoringCase(name, "connection")) {
      if (ListsToken(value, "close")) head.keep_alive = false;
      if (http10 && ListsToken(value, "keep-alive") && !ListsToken(value, "close")) head.keep_alive = true;
    } else if (EqualsIgnoringCase(name, "expect")) {
      if (!EqualsIgnoringCase(value, "100-continue"))
        return Fail(error, 417, "only \"Expect: 100-continue\" is understood");
      head.expect_continue = !http10;
    }
    req.headers.emplace_back(std::string(name), std::string(value));
  }
  return ParseResult::kComplete;
}

}  // namespace muster::http
