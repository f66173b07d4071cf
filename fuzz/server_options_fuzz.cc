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
#include <string>

#include "fuzz_checks.h"
#include "server/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto o = muster::server::ParseServerOptions(input, "server.yaml");
  if (!o.ok()) {
    muster::fuzz::CheckInputError(o.status());
    return 0;
  }
  if (const muster::Status v = o->Validate(); !v.ok()) muster::fuzz::CheckInputError(v);
  return 0;
}
