// Identity commands:
//
//   muster whoami                            who the server says you are, and how
//   muster token create [--user U | --node N] [--expires 30d|never] [--description D]
//                       [--store URL]        a token, printed once; with --store
//                                            (the servers stopped) it is written
//                                            into the store directly: the first
//                                            admin's token on a cluster without MUNGE
//   muster token list                        yours (admins: every token)
//   muster token revoke ID...                yours (admins: any)
//   muster audit [--actor U] [--object job/12] [--limit N]
//                                            the audit log (users: their own entries)
//   muster login [--token T]                 saves a token (from stdin without
//                                            --token) in the token file for the server
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

namespace CLI {
class App;
}

namespace muster::cli {

struct AuthCommands;
std::shared_ptr<AuthCommands> AddAuthCommands(CLI::App& app);
// The exit code of whichever command was parsed, or -1 if none was.
int RunAuthCommands(AuthCommands& commands);

// Creates a token in the store at `store_url` directly (no server may run
// on it); returns the token's text. For `muster token create --store` and
// `muster dev`.
struct OfflineToken {
  std::string user;
  std::string node;
  std::string expires;  // a duration or "never"; "": 30d, a node's 365d
  std::string description;
};
StatusOr<std::string> CreateTokenInStore(const std::string& store_url, const OfflineToken& t);
// Writes `token` for `server` into the token file `path` (mode 0600),
// replacing that server's line and keeping the others ("" server: the
// bare line, for any server).
Status SaveToken(const std::string& path, const std::string& server, const std::string& token);

}  // namespace muster::cli
