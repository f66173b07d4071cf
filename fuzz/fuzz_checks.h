// What every fuzz target here checks of an error, and how it reports a
// broken promise: a message on stderr, then abort(), which libFuzzer records
// as a crash with its input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/status.h"

namespace muster::fuzz {

[[noreturn]] inline void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s\n%s\n", what, detail.c_str());
  std::abort();
}

// An error from parsing outside input: InvalidArgument, and a message
// without raw control characters (it reaches logs and terminals).
inline void CheckInputError(const Status& s) {
  if (s.code() != StatusCode::kInvalidArgument) Fail("error is not InvalidArgument", s.ToString());
  for (unsigned char c : s.ToString()) {
    if (c < 0x20 || c == 0x7F) Fail("raw control character in error", s.ToString());
  }
}

}  // namespace muster::fuzz
