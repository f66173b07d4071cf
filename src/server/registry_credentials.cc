#include "server/registry_credentials.h"

#include <nlohmann/json.hpp>

namespace muster::server {

using nlohmann::json;

std::string ImageRegistry(const std::string& image) {
  const size_t slash = image.find('/');
  if (slash == std::string::npos) return "docker.io";
  const std::string first = image.substr(0, slash);
  if (first.find_first_of(".:") != std::string::npos || first == "localhost") return first;
  return "docker.io";
}

Status RegistryCredentials::Load(const std::string& text) {
  creds_.clear();
  if (text.empty()) return Status::Ok();
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return DataLoss("meta registryCredentials is damaged");
  // value() throws on a field of the wrong type: damaged too.
  try {
    return LoadEntries(j);
  } catch (const json::exception&) {
    creds_.clear();
    return DataLoss("meta registryCredentials has a field of the wrong type");
  }
}

Status RegistryCredentials::LoadEntries(const nlohmann::json& j) {
  for (const json& e : j) {
    if (!e.is_object()) return DataLoss("meta registryCredentials is damaged");
    RegistryCredential c;
    c.scope = e.value("scope", "");
    c.owner = e.value("owner", "");
    c.registry = e.value("registry", "");
    c.username = e.value("username", "");
    c.password = e.value("password", "");
    c.created_by = e.value("createdBy", "");
    c.created_ms = e.value("createdMs", int64_t{0});
    if ((c.scope != "user" && c.scope != "queue") || c.owner.empty() || c.registry.empty()) {
      return DataLoss("meta registryCredentials has a damaged entry");
    }
    Put(std::move(c));
  }
  return Status::Ok();
}

std::string RegistryCredentials::Dump() const {
  json out = json::array();
  for (const auto& [key, c] : creds_) {
    out.push_back({{"scope", c.scope},
                   {"owner", c.owner},
                   {"registry", c.registry},
                   {"username", c.username},
                   {"password", c.password},
                   {"createdBy", c.created_by},
                   {"createdMs", c.created_ms}});
  }
  return out.dump();
}

void RegistryCredentials::Put(RegistryCredential c) {
  Key key{c.scope, c.owner, c.registry};
  creds_[key] = std::move(c);
}

bool RegistryCredentials::Remove(const std::string& scope, const std::string& owner, const std::string& registry) {
  return creds_.erase({scope, owner, registry}) > 0;
}

std::optional<RegistryCredential> RegistryCredentials::ForJob(const std::string& user, const std::string& queue,
                                                              const std::string& image) const {
  const std::string registry = ImageRegistry(image);
  for (const Key& key : {Key{"user", user, registry}, Key{"queue", queue, registry}}) {
    auto it = creds_.find(key);
    if (it != creds_.end()) return it->second;
  }
  return std::nullopt;
}

std::vector<RegistryCredential> RegistryCredentials::All() const {
  std::vector<RegistryCredential> out;
  for (const auto& [key, c] : creds_) out.push_back(c);
  return out;
}

}  // namespace muster::server
