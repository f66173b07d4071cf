// libFuzzer target for the agent protocol codec (src/proto/agent_protocol.h).
//
// The server parses every agent's sync request and the agent every answer;
// neither may trust the other's bytes. Checks the codec's promises, aborting
// (a reported crash) when one breaks:
//   1. parsing never crashes, throws or hangs (libFuzzer and the sanitizers
//      catch those);
//   2. an error is InvalidArgument with a field and a message without raw
//      control characters;
//   3. what parses round-trips: its own JSON parses again, to the same JSON
//      (the encoding is a fixed point).
// Each input is read as a request, a response and a list of resume
// candidates. See README.md for building and running it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_checks.h"
#include "proto/agent_protocol.h"

namespace {

namespace proto = muster::proto;
using muster::fuzz::Fail;

void CheckError(const char* kind, const muster::Status& s) {
  muster::fuzz::CheckInputError(s);
  if (s.field().empty()) Fail(kind, "error without a field: " + s.ToString());
}

template <typename T, typename Parse>
void Check(const char* kind, const std::string& input, Parse parse) {
  const muster::StatusOr<T> first = parse(input);
  if (!first.ok()) return CheckError(kind, first.status());
  const std::string json = proto::ToJson(*first);
  const muster::StatusOr<T> again = parse(json);
  if (!again.ok()) Fail(kind, "its own JSON does not parse: " + again.status().ToString() + "\n" + json);
  if (proto::ToJson(*again) != json) Fail(kind, "its own JSON parses to something else:\n" + json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  Check<proto::SyncRequest>("request", input, proto::ParseSyncRequest);
  Check<proto::SyncResponse>("response", input, proto::ParseSyncResponse);
  Check<std::vector<proto::ResumeCandidate>>("resume candidates", input, proto::ParseResumeCandidates);
  return 0;
}
