// Helpers for tests that start real processes.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "agent/executor.h"

namespace muster::testing {

// True when no pid listed in `file` (one per line) is alive; a zombie
// counts as gone. False when the file lists none.
inline bool AllGone(const std::string& file) {
  std::ifstream in(file);
  pid_t p = 0;
  int n = 0;
  while (in >> p) {
    ++n;
    if (agent::ProcessStartTime(p) != 0) return false;
  }
  return n > 0;
}

// Whether a live process's command line holds `text`: an agent's state
// directory names the agent, its task launcher and its task shims (forks
// of it, which keep its command line). Zombies do not count.
inline bool AnyProcessNaming(const std::string& text) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline");
    const std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    if (cmdline.find(text) != std::string::npos && agent::ProcessStartTime(std::stoi(name)) != 0) return true;
  }
  return false;
}

// Forks a child that takes `uid` (when the test runs as root), runs
// `setup`, and then holds what it made until killed (SIGKILL, then reap
// it). Returns the child's pid once `setup` returned true; -1 when it
// returned false (the child is gone).
inline pid_t HoldAs(uid_t uid, const std::function<bool()>& setup) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    const bool ok = (::geteuid() != 0 || (::setgid(uid) == 0 && ::setuid(uid) == 0)) && setup();
    (void)!::write(ready[1], ok ? "y" : "n", 1);
    if (!ok) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char said = 'n';
  const bool ok = pid > 0 && ::read(ready[0], &said, 1) == 1 && said == 'y';
  ::close(ready[0]);
  if (!ok && pid > 0) ::waitpid(pid, nullptr, 0);
  return ok ? pid : -1;
}

}  // namespace muster::testing
