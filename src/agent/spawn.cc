#include "agent/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

#include <cstring>

extern char** environ;

namespace muster::agent {

StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const std::string& output, bool new_session) {
  if (argv.empty()) return InvalidArgument("nothing to run");
  if (argv[0].empty() || argv[0][0] != '/') return InvalidArgument("cannot run " + argv[0] + ": not an absolute path");
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::vector<std::string> vars = env;
  std::vector<char*> cenv;
  for (std::string& v : vars) cenv.push_back(v.data());
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output.empty() ? "/dev/null" : output.c_str(),
                                   O_WRONLY | (output.empty() ? 0 : O_CREAT | O_APPEND), 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (new_session ? POSIX_SPAWN_SETSID : 0));
  pid_t pid = 0;
  const int err = ::posix_spawn(&pid, cargs[0], &actions, &attr, cargs.data(), env.empty() ? environ : cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) return Internal("cannot run " + argv[0] + ": " + std::strerror(err));
  return pid;
}

}  // namespace muster::agent
