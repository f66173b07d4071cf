// Registry credentials for container jobs (server/registry_credentials.h):
//
//   muster registry login REGISTRY --username U [--queue Q | --user U]
//                                  the password (or token) is read from stdin,
//                                  never from the command line; yours unless
//                                  an admin names a queue or another user
//   muster registry list           yours (admins: every one); never a password
//   muster registry logout REGISTRY [--queue Q | --user U]
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace muster::cli {

struct RegistryCommands;
std::shared_ptr<RegistryCommands> AddRegistryCommands(CLI::App& app);
// The exit code of whichever command was parsed, or -1 if none was.
int RunRegistryCommands(RegistryCommands& commands);

}  // namespace muster::cli
