// The OpenAPI description of /v1 (web/openapi.json, built into the binary)
// checked against the routes the server really serves, so a route added
// without its description, or a description left for a route removed, is
// found: GET /v1/openapi.json reports any difference in the document
// itself ("x-muster-drift"), and the tests fail on it.
//
// A description's path matches a route's pattern segment by segment, a
// "{name}" segment matching the route's "*" ("/v1/jobs/{id}/events" is
// "/v1/jobs/*/events"). Only routes under /v1/ are compared: the dashboard's
// files, /healthz and /metrics are not the REST API.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/router.h"

namespace muster::server {

struct OpenApiDrift {
  std::vector<std::string> undocumented;  // "GET /v1/jobs/*": routes no operation describes
  std::vector<std::string> unrouted;      // "GET /v1/gone": operations no route serves
  bool empty() const { return undocumented.empty() && unrouted.empty(); }
};

OpenApiDrift CompareOpenApi(const nlohmann::json& document, const std::vector<http::Router::Entry>& routes);

// The document as served: the built-in description, with "x-muster-drift"
// ({undocumented, unrouted}) added when it differs from `routes`.
nlohmann::json ServedOpenApi(const std::vector<http::Router::Entry>& routes);

}  // namespace muster::server
