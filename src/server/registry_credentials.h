// Registry credentials: what a container job's node uses to pull its image
// from a registry that wants a login (nvcr.io, a team's own).
//
// A credential is a username and password (or token) for one registry,
// owned by a user (used for that user's jobs) or by a queue (used for every
// job in the queue; set by admins). A job's image is pulled with its user's
// credential for the image's registry if there is one, else its queue's.
// The password goes to the node that runs the job (in its assignment), is
// written there to a file only root can read for the pull, and is never
// shown by the API: listing shows a user's own credentials, and admins all
// of them, by registry, username and owner only.
//
// All of them are kept in the store as one meta document
// ("registryCredentials"); they are few (a handful per user or queue).
//
// Thread-safety: none; the control loop owns it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace muster::server {

struct RegistryCredential {
  std::string scope;     // "user" or "queue"
  std::string owner;     // the user's or the queue's name
  std::string registry;  // "nvcr.io", "registry.example.com:5000"
  std::string username;
  std::string password;
  std::string created_by;
  int64_t created_ms = 0;
};

// The registry an image reference names: its first component when that
// looks like a host (has '.' or ':', or is "localhost"), else docker.io.
std::string ImageRegistry(const std::string& image);

class RegistryCredentials {
 public:
  static constexpr const char* kMetaKey = "registryCredentials";

  // Loads the store's document ("" or absent: none). DataLoss when damaged.
  Status Load(const std::string& text);
  // The document to store.
  std::string Dump() const;

  // Adds or replaces the credential of (scope, owner, registry).
  void Put(RegistryCredential c);
  // Removes it; false when there was none.
  bool Remove(const std::string& scope, const std::string& owner, const std::string& registry);
  // The credential to pull `image` with for a job of `user` in `queue`.
  std::optional<RegistryCredential> ForJob(const std::string& user, const std::string& queue,
                                           const std::string& image) const;
  // Every credential, sorted by scope, owner and registry.
  std::vector<RegistryCredential> All() const;

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // scope, owner, registry
  Status LoadEntries(const nlohmann::json& j);

  std::map<Key, RegistryCredential> creds_;
};

}  // namespace muster::server
