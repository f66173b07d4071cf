// Request and Response: one HTTP/1.1 exchange, as the server's handlers see it.
//
// A Request is complete when a handler gets it: head parsed, body read in
// full (Content-Length only; see request_parser.h). Header names compare
// without regard to case; query parameters are percent-decoded ('+' is a
// space) and kept in order, repeats included.
#pragma once

#include <any>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace muster::http {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // as sent: "GET", "POST", ...
  std::string path;    // percent-decoded, without the query
  std::string target;  // the request target as sent: path and query, still encoded
  Fields params;       // the query, decoded
  Fields headers;      // names as sent
  std::string body;
  std::string remote_addr;            // the peer's address, without port
  std::vector<std::string> captures;  // what each '*' of the route matched
  std::any context;                   // what the server's filter found (the caller's identity)
  std::string principal;              // who sent it, as the access log names them (set by the filter)

  // The first header named `name` (any case); "" when absent.
  std::string_view Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
  // The first query parameter named `name`; "" when absent.
  const std::string& Param(std::string_view name) const;
  bool HasParam(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type;  // empty: no Content-Type header
  std::string body;
  Fields headers;  // extra headers (not Content-Length or Connection)

  void Set(int code, std::string text, std::string type) {
    status = code;
    body = std::move(text);
    content_type = std::move(type);
  }
};

// ASCII comparison without regard to case (header names, tokens).
bool EqualsIgnoringCase(std::string_view a, std::string_view b);

// The reason phrase of a status code ("Not Found"); "Unknown" for others.
const char* ReasonPhrase(int status);

}  // namespace muster::http
