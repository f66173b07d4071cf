// One request to a server's API as a given caller, for the attacker's tests.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

namespace muster::testing {

struct ApiAnswer {
  int status = 0;  // 0: no answer
  nlohmann::json body;
  std::string text;
  std::string message() const {
    return body.is_object() && body.contains("error") ? body["error"].value("message", "") : "";
  }
};

// METHOD (GET, DELETE, or POST of `body` as `type`) `path` on `url`, with
// `token` as the credential: "MUNGE ..." as it is, another as a bearer
// token, none when empty.
inline ApiAnswer CallApi(const std::string& url, const std::string& method, const std::string& path,
                         const std::string& token, const std::string& body = "",
                         const std::string& type = "application/yaml", httplib::Headers extra = {}) {
  httplib::Client c(url);
  c.set_read_timeout(30, 0);
  if (!token.empty()) extra.emplace("Authorization", token.rfind("MUNGE ", 0) == 0 ? token : "Bearer " + token);
  httplib::Result r = method == "GET"      ? c.Get(path, extra)
                      : method == "DELETE" ? c.Delete(path, extra)
                                           : c.Post(path, extra, body, type);
  ApiAnswer a;
  if (!r) return a;
  a.status = r->status;
  a.text = r->body;
  a.body = nlohmann::json::parse(r->body, nullptr, false);
  return a;
}

}  // namespace muster::testing
