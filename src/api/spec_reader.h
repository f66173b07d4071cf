// Typed readers over a SpecTree: the building blocks of the job spec schema.
//
// Each reader takes a node and its full path ("spec.resources.gpus") and
// returns the typed value or an InvalidArgument with that path as field and a
// message "must be <what was expected>, got <what was there>":
//
//   ReadInt(node "eight", "spec.resources.gpus", 0, 1024)
//     -> spec.resources.gpus: must be an integer from 0 to 1024, got "eight"
//
// The readers apply the scalar rules of spec_tree.h: integers must be
// integer tokens (YAML plain or JSON numbers, never quoted, never 1.0); a
// string reader also takes a YAML plain scalar as written; booleans are
// true/false. Absent and null fields never reach a reader: ObjectReader::Find
// returns nullptr for both, so callers keep their defaults.
//
// Thread-safety: stateless functions and a read-only view; safe anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/spec_tree.h"
#include "common/status.h"
#include "common/time.h"

namespace muster::api {

// "must be <expected>, got <Describe(node)>" at `path`.
Status Expected(const TreeNode& node, const std::string& path, std::string_view expected);

// An object whose keys are checked against the schema's names.
class ObjectReader {
 public:
  // Fails if `node` is not an object ("must be <expected>, got a list"), or if
  // a key is unknown ("unknown field; did you mean \"gpus\"?", with the key's
  // path as field) or repeated ("duplicate field"). Keys are checked in
  // document order, so the first offending key is reported.
  static StatusOr<ObjectReader> Open(const TreeNode& node, std::string path, const std::vector<std::string>& known,
                                     std::string_view expected = "an object");

  // The value of `key`, or nullptr when it is absent or null.
  const TreeNode* Find(std::string_view key) const;
  std::string Path(std::string_view key) const { return ChildPath(path_, key); }
  const std::string& path() const { return path_; }

  // If `key` is present and not null, reads it with read(node, path, args...)
  // into `out`; otherwise leaves `out` alone.
  template <typename T, typename ReadFn, typename... Args>
  Status Read(std::string_view key, T& out, ReadFn read, const Args&... args) const {
    const TreeNode* node = Find(key);
    if (node == nullptr) return Status::Ok();
    auto value = read(*node, Path(key), args...);
    if (!value.ok()) return value.status();
    out = static_cast<T>(std::move(value).value());
    return Status::Ok();
  }

 private:
  ObjectReader(const TreeNode& node, std::string path) : node_(&node), path_(std::move(path)) {}
  const TreeNode* node_;
  std::string path_;
};

// ---- Strings ----------------------------------------------------------------

enum class Charset : uint8_t {
  kText,       // anything but NUL (command items, scripts)
  kLine,       // anything but NUL, CR or LF (env values: an env file's line, a root exec's boundary)
  kPrintable,  // no ASCII control characters (image, labels)
  kName,       // [A-Za-z0-9._-], starting with a letter or digit
  kEnvName,    // [A-Za-z_][A-Za-z0-9_]*
  kAbsPath,    // starts with '/', no control characters
};

struct StringRule {
  size_t min_bytes;
  size_t max_bytes;
  Charset charset;
  const char* expected;  // "1 to 128 characters of [A-Za-z0-9._-]"
};

// A string that is valid UTF-8 and satisfies `rule`.
StatusOr<std::string> ReadString(const TreeNode& node, const std::string& path, const StringRule& rule);

// ---- Numbers and booleans ---------------------------------------------------

// An integer token in [min, max]. `expected` defaults to "an integer from
// <min> to <max>".
StatusOr<int64_t> ReadInt(const TreeNode& node, const std::string& path, int64_t min, int64_t max,
                          std::string_view expected = {});
StatusOr<bool> ReadBool(const TreeNode& node, const std::string& path);

// CPUs: an integer or decimal number of cores (2, 2.5) or a string ("2.5",
// "500m"), as milli-cores, at most `max_milli`.
StatusOr<int64_t> ReadCpuMilli(const TreeNode& node, const std::string& path, int64_t max_milli);
// Memory: an integer number of bytes or a string ("512Gi", "16G", "1.5Gi",
// "1073741824"), at most `max_bytes`. Fractions need a unit: 1.5 and "1.5"
// are refused.
StatusOr<int64_t> ReadMemoryBytes(const TreeNode& node, const std::string& path, int64_t max_bytes);

// ---- Durations --------------------------------------------------------------

struct DurationRule {
  bool allow_zero;
  bool allow_unlimited;             // "unlimited", "inf" -> Duration::Infinite()
  Duration max;                     // for finite values
  const char* max_text;             // "365 days"
  Duration min = Duration::Zero();  // finite values below it are refused
  const char* min_text = nullptr;   // "1s"; with min
};

// A duration string accepted by ParseDuration that has a unit or colons
// ("90s", "2h30m", "1-02:00:00"), or an integer number of seconds.
StatusOr<Duration> ReadDuration(const TreeNode& node, const std::string& path, const DurationRule& rule);

// ---- Lists --------------------------------------------------------------------

// The items of a list with between min and max items; `expected` describes
// the whole list ("a list of 1 to 4096 strings").
StatusOr<std::vector<TreePtr>> ReadList(const TreeNode& node, const std::string& path, size_t min_items,
                                        size_t max_items, std::string_view expected);

}  // namespace muster::api
