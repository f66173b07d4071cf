#include "server/openapi_check.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "server/web_assets.h"

namespace muster::server {
namespace {

// "/v1/jobs/{id}/events" -> "/v1/jobs/*/events".
std::string PatternOf(const std::string& path) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '{') {
      const size_t close = path.find('}', i);
      if (close == std::string::npos) return out + path.substr(i);
      out += '*';
      i = close + 1;
    } else {
      out += path[i++];
    }
  }
  return out;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

OpenApiDrift CompareOpenApi(const nlohmann::json& document, const std::vector<http::Router::Entry>& routes) {
  static const std::set<std::string> kMethods = {"get", "put", "post", "delete", "patch", "head", "options"};
  std::set<std::string> described;
  if (document.contains("paths") && document["paths"].is_object()) {
    for (const auto& [path, item] : document["paths"].items()) {
      if (!item.is_object()) continue;
      for (const auto& [method, operation] : item.items()) {
        if (kMethods.count(method) != 0) described.insert(Upper(method) + " " + PatternOf(path));
      }
    }
  }
  std::set<std::string> served;
  for (const http::Router::Entry& r : routes) {
    if (r.pattern.rfind("/v1/", 0) == 0) served.insert(r.method + " " + r.pattern);
  }
  OpenApiDrift drift;
  std::set_difference(served.begin(), served.end(), described.begin(), described.end(),
                      std::back_inserter(drift.undocumented));
  std::set_difference(described.begin(), described.end(), served.begin(), served.end(),
                      std::back_inserter(drift.unrouted));
  return drift;
}

nlohmann::json ServedOpenApi(const std::vector<http::Router::Entry>& routes) {
  static const nlohmann::json kDocument = [] {
    const WebAsset* file = FindWebAsset("/openapi.json");
    return file == nullptr ? nlohmann::json::object() : nlohmann::json::parse(file->bytes(), nullptr, false);
  }();
  nlohmann::json doc = kDocument.is_discarded() ? nlohmann::json::object() : kDocument;
  const OpenApiDrift drift = CompareOpenApi(doc, routes);
  if (!drift.empty()) doc["x-muster-drift"] = {{"undocumented", drift.undocumented}, {"unrouted", drift.unrouted}};
  return doc;
}

}  // namespace muster::server
