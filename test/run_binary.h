// Runs a command line in a shell for tests and returns its exit code and
// combined output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace muster::testing {

struct CommandResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

inline CommandResult RunCommand(const std::string& command_line) {
  CommandResult r;
  FILE* p = popen((command_line + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace muster::testing
