#include "server/openapi_check.h"

#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <set>
#include <string>

#include "server/web_assets.h"

namespace muster::server {
namespace {

using nlohmann::json;

TEST(OpenApiCheck, RoutesAndDescriptionsAreMatchedSegmentBySegment) {
  const json doc = {{"paths",
                     {{"/v1/jobs", {{"get", json::object()}, {"post", json::object()}}},
                      {"/v1/jobs/{id}/events", {{"get", json::object()}, {"parameters", json::array()}}},
                      {"/v1/gone", {{"delete", json::object()}}}}}};
  const std::vector<http::Router::Entry> routes = {{"GET", "/v1/jobs"},          {"POST", "/v1/jobs"},
                                                   {"GET", "/v1/jobs/*/events"}, {"POST", "/v1/jobs/*/cancel"},
                                                   {"GET", "/healthz"},          {"GET", "/ui/*"}};
  const OpenApiDrift drift = CompareOpenApi(doc, routes);
  EXPECT_EQ(drift.undocumented, std::vector<std::string>{"POST /v1/jobs/*/cancel"});
  EXPECT_EQ(drift.unrouted, std::vector<std::string>{"DELETE /v1/gone"});
  EXPECT_FALSE(drift.empty());
  EXPECT_TRUE(
      CompareOpenApi(doc,
                     {{"GET", "/v1/jobs"}, {"POST", "/v1/jobs"}, {"GET", "/v1/jobs/*/events"}, {"DELETE", "/v1/gone"}})
          .empty());
}

TEST(OpenApiCheck, TheServedDocumentNamesItsDriftFromTheRoutesGiven) {
  const json served = ServedOpenApi({{"GET", "/v1/jobs"}, {"PUT", "/v1/not-described"}});
  ASSERT_TRUE(served.contains("x-muster-drift"));
  EXPECT_EQ(served["x-muster-drift"]["undocumented"], json::array({"PUT /v1/not-described"}));
  EXPECT_FALSE(served["x-muster-drift"]["unrouted"].empty());
}

// The built-in description (web/openapi.json) is a sound OpenAPI 3.0
// document: every operation summarised, with a unique operationId and an
// error answer; every path parameter declared; every $ref resolving.
TEST(OpenApiCheck, TheBuiltInDocumentIsSound) {
  const WebAsset* file = FindWebAsset("/openapi.json");
  ASSERT_NE(file, nullptr);
  const json doc = json::parse(file->bytes(), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << "web/openapi.json does not parse";
  EXPECT_EQ(doc.value("openapi", ""), "3.0.3");
  ASSERT_TRUE(doc["info"].contains("title") && doc["info"].contains("version"));
  std::set<std::string> ids;
  int operations = 0;
  for (const auto& [path, item] : doc["paths"].items()) {
    std::set<std::string> in_path;
    const std::regex param(R"(\{([^}]+)\})");
    for (auto it = std::sregex_iterator(path.begin(), path.end(), param); it != std::sregex_iterator(); ++it) {
      in_path.insert((*it)[1].str());
    }
    for (const auto& [method, op] : item.items()) {
      ++operations;
      const std::string where = method + " " + path;
      EXPECT_FALSE(op.value("summary", "").empty()) << where;
      const std::string id = op.value("operationId", "");
      EXPECT_FALSE(id.empty()) << where;
      EXPECT_TRUE(ids.insert(id).second) << where << ": operationId " << id << " twice";
      ASSERT_TRUE(op.contains("responses")) << where;
      EXPECT_TRUE(op["responses"].contains("default")) << where << ": no error answer";
      std::set<std::string> declared;
      for (const json& p : op.value("parameters", json::array())) {
        if (p.value("in", "") == "path") {
          EXPECT_TRUE(p.value("required", false))
              << where << ": path parameter " << p.value("name", "") << " not required";
          declared.insert(p.value("name", ""));
        }
      }
      EXPECT_EQ(declared, in_path) << where;
    }
  }
  EXPECT_GT(operations, 30);
  // Every reference names a component that exists.
  std::function<void(const json&)> refs = [&](const json& j) {
    if (j.is_object()) {
      if (j.contains("$ref")) {
        const std::string ref = j["$ref"].get<std::string>();
        ASSERT_EQ(ref.rfind("#/", 0), 0u) << ref;
        EXPECT_TRUE(doc.contains(json::json_pointer(ref.substr(1)))) << "unresolved " << ref;
      }
      for (const auto& [k, v] : j.items()) refs(v);
    } else if (j.is_array()) {
      for (const json& v : j) refs(v);
    }
  };
  refs(doc);
}

}  // namespace
}  // namespace muster::server
