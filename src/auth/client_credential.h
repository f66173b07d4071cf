// ClientCredential: how the CLI, the agent and a job's helpers prove who
// they are to `muster server`, as the Authorization header of each request.
//
//   Authorization: MUNGE <credential>   a fresh MUNGE credential per request,
//                                       bound to it (request_binding.h)
//   Authorization: Bearer mst_...       a token (token.h)
//   Authorization: Bearer msj_...       a job token (grants.h), inside a job
//
// FindCredential looks, in order, for:
//   0. a job token in $MUSTER_TOKEN: inside a job (the agent sets it) its
//      helpers act as the job, whatever the user's home holds;
//   1. munged's socket ($MUSTER_MUNGE_SOCKET, default /run/munge/munge.socket.2;
//      "none" skips it): on a Slurm-style cluster `muster` just works as the
//      logged-in Unix user;
//   2. a token file, $MUSTER_TOKEN_FILE, else $XDG_CONFIG_HOME/muster/token
//      (default ~/.config/muster/token): lines "TOKEN" or "SERVER TOKEN",
//      '#' comments; the line naming the server in use wins over a bare one.
//      It must not be readable by group or others (as ssh keys);
//   3. $MUSTER_TOKEN.
// With none, requests go without one and the server's 401 says so; Describe()
// then says where the CLI looked.
//
// Thread-safety: one request at a time per credential.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::auth {

class ClientCredential {
 public:
  virtual ~ClientCredential() = default;
  // The Authorization header for this request ("" for none).
  virtual StatusOr<std::string> Authorization(std::string_view method, std::string_view target,
                                              std::string_view body) = 0;
  // What it is, for messages ("MUNGE via /run/munge/munge.socket.2",
  // "token 3f2a... from ~/.config/muster/token"); never the secret.
  virtual std::string Describe() const = 0;
};

std::unique_ptr<ClientCredential> TokenCredential(std::string token, std::string source);
std::unique_ptr<ClientCredential> MungeClientCredential(std::string socket);
// No credential; Describe() is `where_looked`.
std::unique_ptr<ClientCredential> NoCredential(std::string where_looked);

struct CredentialSources {
  std::string munge_socket;  // "" or "none": do not use MUNGE
  std::string token_file;
  std::string env_token;
};
// The places the environment names (see above).
CredentialSources DefaultCredentialSources();
// The first credential found for `servers` (the comma-separated server
// list in use). A token file that exists but is unsafe or unreadable, or
// holds no usable line, is an error naming it.
StatusOr<std::unique_ptr<ClientCredential>> FindCredential(const CredentialSources& sources, std::string_view servers);

// Reads a token file as FindCredential does: the token for `servers`.
StatusOr<std::string> ReadTokenFile(const std::string& path, std::string_view servers);
// The token for `servers` in a token file's text (`path` names it in
// errors): kNotFound when no line serves, kInvalidArgument when a line is
// malformed.
StatusOr<std::string> TokenFromText(std::string_view text, std::string_view servers, const std::string& path);

}  // namespace muster::auth
