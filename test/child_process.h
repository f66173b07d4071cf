// Stopping a child process in tests: send a signal and reap it, never
// hanging on a child that does not exit.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace muster::testing {

// Sends `sig` (and SIGCONT, in case the child is paused), waits up to 30 s
// for it to exit, then SIGKILLs it. Returns its exit code, or 128 + the
// signal that ended it.
inline int SignalAndReap(pid_t pid, int sig, const char* what) {
  ::kill(pid, sig);
  ::kill(pid, SIGCONT);
  int status = 0;
  bool done = false;
  for (int i = 0; i < 3000 && !done; ++i) {
    done = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!done) ::usleep(10'000);
  }
  if (!done) {
    std::fprintf(stderr, "%s did not exit after signal %d; killing it\n", what, sig);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace muster::testing
