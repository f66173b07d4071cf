#include "server/auth_options.h"

#include <yaml-cpp/yaml.h>

#include "config/yaml_fields.h"

namespace muster::server {
namespace {

// A list of user names (1 to 64 of [A-Za-z0-9._-], or "*" where `star`).
Status Names(const YAML::Node& v, const std::string& path, bool star, std::vector<std::string>& out) {
  if (!v.IsSequence()) return InvalidArgument("must be a list of user names", path);
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(std::string name, config::Str(v[i], at));
    bool ok = !name.empty() && name.size() <= 64;
    for (char c : name) {
      ok &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
            c == '-';
    }
    if (!ok && !(star && name == "*")) {
      return InvalidArgument(std::string("must be a user name (1 to 64 of [A-Za-z0-9._-])") + (star ? " or \"*\"" : ""),
                             at);
    }
    out.push_back(name);
  }
  return Status::Ok();
}

}  // namespace

Status ReadAuthOptions(const YAML::Node& node, AuthOptions& out) {
  const std::string path = "server.auth";
  if (!node.IsMap()) return InvalidArgument("must be a mapping {munge, operators, rootJobs, queues}", path);
  RETURN_IF_ERROR(config::CheckKeys(node, {"munge", "operators", "rootJobs", "queues"}, path));
  if (node["munge"]) {
    ASSIGN_OR_RETURN(out.munge_socket, config::Str(node["munge"], path + ".munge"));
    if (out.munge_socket.empty() || (out.munge_socket != "none" && out.munge_socket[0] != '/')) {
      return InvalidArgument("must be munged's socket (an absolute path) or none", path + ".munge");
    }
  }
  if (node["operators"]) RETURN_IF_ERROR(Names(node["operators"], path + ".operators", false, out.operators));
  if (node["rootJobs"]) RETURN_IF_ERROR(Names(node["rootJobs"], path + ".rootJobs", false, out.root_jobs));
  if (const YAML::Node queues = node["queues"]) {
    if (!queues.IsMap()) return InvalidArgument("must map queue names to {users, admins}", path + ".queues");
    for (const auto& kv : queues) {
      ASSIGN_OR_RETURN(std::string name, config::Str(kv.first, path + ".queues"));
      const std::string at = path + ".queues." + name;
      if (!kv.second.IsMap()) return InvalidArgument("must be a mapping {users, admins}", at);
      RETURN_IF_ERROR(config::CheckKeys(kv.second, {"users", "admins"}, at));
      QueueAccess& q = out.queues[name];
      if (kv.second["users"]) RETURN_IF_ERROR(Names(kv.second["users"], at + ".users", true, q.users));
      if (kv.second["admins"]) RETURN_IF_ERROR(Names(kv.second["admins"], at + ".admins", false, q.admins));
    }
  }
  return Status::Ok();
}

}  // namespace muster::server
