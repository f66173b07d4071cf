// libFuzzer target for the server's configuration file
// (src/server/options.h, ParseServerOptions).
//
// An operator writes it, but a typo must still be an error that names the
// key, never a crash at start. Checks, aborting (a reported crash) when one
// breaks:
//   1. parsing never crashes, throws or hangs (libFuzzer and the sanitizers
//      catch those);
//   2. an error of parsing, or of Validate() (what the server runs next,
//      after its flags), is InvalidArgument with a message without raw
//      control characters.
// See README.md for building and running it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/options.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "server_options_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckError(const muster::Status& s) {
  if (s.ok()) return;
  if (s.code() != muster::StatusCode::kInvalidArgument) Fail("error is not InvalidArgument", s.ToString());
  for (unsigned char c : s.ToString()) {
    if (c < 0x20 || c == 0x7F) Fail("raw control character in error", s.ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto o = muster::server::ParseServerOptions(input, "server.yaml");
  if (!o.ok()) {
    CheckError(o.status());
    return 0;
  }
  CheckError(o->Validate());
  return 0;
}
