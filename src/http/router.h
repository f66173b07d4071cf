// Router: maps a method and a path to a route id.
//
// A pattern is a path whose segments are literal or '*', which matches one
// whole non-empty segment ("/v1/jobs/*/events"); what each '*' matched is
// returned in order. Routes are tried in the order added. A path that some
// route matches with another method is kWrongMethod, with the methods that
// would do (for a 405 and its Allow header).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace muster::http {

class Router {
 public:
  // Adds a route; returns its id (0, 1, ...).
  size_t Add(std::string method, std::string_view pattern);

  enum class Outcome { kFound, kWrongMethod, kNotFound };
  struct Match {
    Outcome outcome = Outcome::kNotFound;
    size_t id = 0;                      // kFound
    std::vector<std::string> captures;  // kFound
    std::string allow;                  // kWrongMethod: "GET, POST"
  };
  Match Find(std::string_view method, std::string_view path) const;

  // Every route as added: its method and pattern ("GET", "/v1/jobs/*").
  struct Entry {
    std::string method;
    std::string pattern;
  };
  std::vector<Entry> Table() const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
  };
  std::vector<Route> routes_;
};

}  // namespace muster::http
