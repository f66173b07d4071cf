// libFuzzer target for the HTTP client's answer reader (ReadResponse in
// src/http/client.h).
//
// The server reads answers from node agents (their logs), and the CLI and
// the agents read the server's; a compromised or broken peer can send
// anything. Checks the reader's promises, aborting (a reported crash) when
// one breaks:
//   1. reading never crashes, throws or hangs, however the bytes are split
//      into arrivals (the first input byte picks the split);
//   2. an error is kUnavailable with a message without raw control
//      characters;
//   3. an answer stays within its input: status 100 to 999 and not 1xx,
//      body and leftover no longer than the input, header names non-empty;
//   4. the split does not matter: the bytes given at once and given in
//      pieces give the same status, body and leftover.
// See README.md for building and running it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_checks.h"
#include "http/client.h"

namespace {

using muster::Status;
using muster::StatusCode;
using muster::StatusOr;
using muster::fuzz::Fail;
using namespace muster::http;

struct Outcome {
  StatusOr<ClientResponse> response = Status(StatusCode::kInternal, "not read");
  std::string leftover;
  bool keep_alive = false;
};

// Reads `data`, handed over `piece` bytes at a time (everything at once
// when 0), then end of stream.
Outcome Read(std::string_view data, size_t piece, bool head_only) {
  size_t given = 0;
  const MoreBytes more = [&](std::string& buf) -> StatusOr<bool> {
    if (given >= data.size()) return false;
    const size_t n = piece == 0 ? data.size() - given : std::min(piece, data.size() - given);
    buf.append(data.substr(given, n));
    given += n;
    return true;
  };
  Outcome out;
  std::string buf;
  out.response = ReadResponse(buf, more, head_only, out.keep_alive);
  out.leftover = buf + std::string(data.substr(given));
  return out;
}

void CheckOne(const Outcome& o, std::string_view data) {
  if (!o.response.ok()) {
    const Status& s = o.response.status();
    if (s.code() != StatusCode::kUnavailable) Fail("error is not kUnavailable", s.ToString());
    for (unsigned char c : s.message()) {
      if (c < 0x20 || c == 0x7F) Fail("raw control character in error", s.message());
    }
    return;
  }
  const ClientResponse& r = *o.response;
  if (r.status < 100 || r.status > 999 || (r.status >= 100 && r.status < 200)) {
    Fail("status out of range", std::to_string(r.status));
  }
  if (r.body.size() > data.size()) Fail("body longer than the input", std::to_string(r.body.size()));
  if (o.leftover.size() > data.size()) Fail("leftover longer than the input", std::to_string(o.leftover.size()));
  for (const auto& [k, v] : r.headers) {
    if (k.empty()) Fail("empty header name", v);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  const size_t piece = bytes[0] % 17;  // 0: all at once
  const bool head_only = bytes[0] & 0x80;
  const std::string_view data(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  const Outcome whole = Read(data, 0, head_only);
  CheckOne(whole, data);
  if (piece == 0) return 0;
  const Outcome split = Read(data, piece, head_only);
  CheckOne(split, data);
  if (whole.response.ok() != split.response.ok()) Fail("the split changes success", std::string(data));
  if (whole.response.ok()) {
    if (whole.response->status != split.response->status || whole.response->body != split.response->body) {
      Fail("the split changes the answer", std::string(data));
    }
    // Read to the end of the stream: until-close bodies take it all, and
    // otherwise the leftover is whatever followed the answer.
    if (whole.leftover != split.leftover) Fail("the split changes the leftover", std::string(data));
  }
  return 0;
}
