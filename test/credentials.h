// Credentials for tests that run a real server: an admin token written
// into the store before the server starts (as `muster token create
// --store` does on a real cluster), node tokens for agents, and an
// environment for the CLI that uses nothing of the machine's own (no
// system munged, no token file in $HOME).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "run_binary.h"

namespace muster::testing {

// The CLI in this process and its children: no munged, no token file.
inline void IsolateCredentials() {
  ::setenv("MUSTER_MUNGE_SOCKET", "none", 1);
  ::setenv("MUSTER_TOKEN_FILE", "/nonexistent/muster-token", 1);
}

// The last line of a command's output (a token printed alone on stdout).
inline std::string LastLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  const size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

// A token for `user` written into the store at `store` (no server may run
// on a SQLite store meanwhile); "" on failure.
inline std::string TokenInStore(const std::string& store, const std::string& user) {
  const CommandResult r = RunCommand(std::string(MUSTER_BINARY) + " token create --store '" + store + "' --user " +
                                     user + " --expires never 2>/dev/null");
  return r.code == 0 ? LastLine(r.out) : "";
}

// A token for `user` or node `node`, created by an admin through the API.
inline std::string TokenFromServer(const std::string& server, const std::string& admin_token, const std::string& flag,
                                   const std::string& name) {
  const CommandResult r = RunCommand("MUSTER_TOKEN=" + admin_token + " " + std::string(MUSTER_BINARY) +
                                     " token create --server '" + server + "' " + flag + " " + name + " 2>/dev/null");
  return r.code == 0 ? LastLine(r.out) : "";
}

// Writes `token` to `path`, readable by its owner only.
inline bool WriteTokenFile(const std::string& path, const std::string& token) {
  { std::ofstream(path, std::ios::trunc) << token << "\n"; }
  return ::chmod(path.c_str(), 0600) == 0 && !token.empty();
}

}  // namespace muster::testing
