#include "http/router.h"

namespace muster::http {
namespace {

// "/a/b/" -> {"a", "b", ""}; "/" -> {""}.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (true) {
    const size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

size_t Router::Add(std::string method, std::string_view pattern) {
  Route r{std::move(method), {}};
  for (std::string_view s : Segments(pattern)) r.segments.emplace_back(s);
  routes_.push_back(std::move(r));
  return routes_.size() - 1;
}

std::vector<Router::Entry> Router::Table() const {
  std::vector<Entry> out;
  for (const Route& r : routes_) {
    std::string pattern;
    for (const std::string& s : r.segments) pattern += "/" + s;
    out.push_back({r.method, pattern.empty() ? "/" : pattern});
  }
  return out;
}

Router::Match Router::Find(std::string_view method, std::string_view path) const {
  const std::vector<std::string_view> parts = Segments(path);
  Match m;
  std::vector<std::string> captures;
  for (size_t id = 0; id < routes_.size(); ++id) {
    const Route& r = routes_[id];
    if (r.segments.size() != parts.size()) continue;
    captures.clear();
    bool ok = true;
    for (size_t i = 0; i < parts.size() && ok; ++i) {
      if (r.segments[i] == "*") {
        ok = !parts[i].empty();
        captures.emplace_back(parts[i]);
      } else {
        ok = r.segments[i] == parts[i];
      }
    }
    if (!ok) continue;
    if (r.method == method) {
      m.outcome = Outcome::kFound;
      m.id = id;
      m.captures = std::move(captures);
      return m;
    }
    m.outcome = Outcome::kWrongMethod;
    if (m.allow.find(r.method) == std::string::npos) m.allow += (m.allow.empty() ? "" : ", ") + r.method;
  }
  return m;
}

}  // namespace muster::http
