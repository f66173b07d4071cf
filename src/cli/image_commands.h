// Container images: registry logins (server/registry_credentials.h) and
// pre-pulls (server/image_pulls.h).
//
//   muster registry login REGISTRY --username U [--queue Q | --user U]
//                                  the password (or token) is read from stdin,
//                                  never from the command line; yours unless
//                                  an admin names a queue or another user
//   muster registry list           yours (admins: every one); never a password
//   muster registry logout REGISTRY [--queue Q | --user U]
//   muster image pull IMAGE [--nodes N1,N2] [--wait 10m]
//                                  admins: nodes (default every node) pull it
//                                  now, ahead of the jobs that will use it;
//                                  --wait prints each node's outcome
//   muster image list              every pull asked, with its outcome
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace muster::cli {

struct ImageCommands;
std::shared_ptr<ImageCommands> AddImageCommands(CLI::App& app);
// The exit code of whichever command was parsed, or -1 if none was.
int RunImageCommands(ImageCommands& commands);

}  // namespace muster::cli
