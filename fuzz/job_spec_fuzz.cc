// libFuzzer target for the API job spec codec (src/api/job_spec.h).
//
// Feeds each input to ParseJobSpec as JSON, as YAML and sniffed. Checks the
// codec's promises, aborting (a reported crash) when one breaks:
//   1. parsing never crashes, throws or hangs (libFuzzer and the sanitizers
//      catch those);
//   2. an error is InvalidArgument with a field path starting with "spec" and
//      a message without raw control characters;
//   3. a spec that parses round-trips: ParseJobSpecJson(JobSpecToJson(s)) == s.
// See README.md for building and running it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/job_spec.h"
#include "fuzz_checks.h"

namespace {

using muster::fuzz::Fail;

void Check(std::string_view input, std::string_view content_type) {
  using muster::api::JobSpec;
  const muster::StatusOr<JobSpec> r = muster::api::ParseJobSpec(input, content_type);
  if (!r.ok()) {
    const muster::Status& s = r.status();
    muster::fuzz::CheckInputError(s);
    if (s.field().rfind("spec", 0) != 0) Fail("error field does not start with \"spec\"", s.ToString());
    return;
  }
  const std::string json = muster::api::JobSpecToJson(*r);
  const muster::StatusOr<JobSpec> back = muster::api::ParseJobSpecJson(json);
  if (!back.ok()) Fail("canonical JSON does not parse", back.status().ToString() + "\n" + json);
  if (!(*back == *r)) Fail("canonical JSON parses to a different spec", json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input, "application/json");
  Check(input, "application/yaml");
  Check(input, "");
  return 0;
}
