// Helpers for tests that start real processes.
#pragma once

#include <sys/types.h>

#include <fstream>
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

}  // namespace muster::testing
