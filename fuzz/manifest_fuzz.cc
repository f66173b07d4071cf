// libFuzzer target for the checkpoint manifest codec (src/checkpoint/manifest.h).
//
// A manifest is written by the job (untrusted) and read by the agent and the
// server before a job resumes from it. Checks the codec's promises, aborting
// (a reported crash) when one breaks:
//   1. parsing never crashes, throws or hangs (libFuzzer and the sanitizers
//      catch those);
//   2. an error is InvalidArgument with a field and a message without raw
//      control characters;
//   3. a parsed manifest never points outside its directory: every path is
//      relative, non-empty, uses '/', and has no empty, "." or ".." part;
//      no path is listed twice; each file has a SHA-256 and a size >= 0;
//   4. a parsed manifest round-trips: ParseManifest(ManifestToJson(m)) gives
//      the same manifest again.
// See README.md for building and running it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "checkpoint/manifest.h"
#include "fuzz_checks.h"

namespace {

using muster::checkpoint::Manifest;
using muster::fuzz::Fail;

bool SafePath(const std::string& p) {
  if (p.empty() || p.front() == '/' || p.find('\0') != std::string::npos) {
    return false;
  }
  size_t start = 0;
  while (true) {
    const size_t slash = p.find('/', start);
    const std::string part = p.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

bool Same(const Manifest& a, const Manifest& b) {
  if (a.job != b.job || a.attempt != b.attempt || a.step != b.step || a.created_ms != b.created_ms ||
      a.files.size() != b.files.size()) {
    return false;
  }
  for (size_t i = 0; i < a.files.size(); ++i) {
    if (a.files[i].path != b.files[i].path || a.files[i].size != b.files[i].size ||
        a.files[i].sha256 != b.files[i].sha256) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const muster::StatusOr<Manifest> m = muster::checkpoint::ParseManifest(input);
  if (!m.ok()) {
    muster::fuzz::CheckInputError(m.status());
    return 0;
  }
  for (size_t i = 0; i < m->files.size(); ++i) {
    const auto& f = m->files[i];
    if (!SafePath(f.path)) Fail("a path that could leave the directory", f.path);
    if (f.size < 0) Fail("a negative size", f.path);
    if (!muster::checkpoint::IsSha256Hex(f.sha256)) Fail("a file without a SHA-256", f.path + " " + f.sha256);
    for (size_t k = 0; k < i; ++k) {
      if (m->files[k].path == f.path) Fail("a path listed twice", f.path);
    }
  }
  const std::string json = muster::checkpoint::ManifestToJson(*m);
  const muster::StatusOr<Manifest> back = muster::checkpoint::ParseManifest(json);
  if (!back.ok()) Fail("its own JSON does not parse", back.status().ToString() + "\n" + json);
  if (!Same(*back, *m)) Fail("its own JSON parses to a different manifest", json);
  return 0;
}
