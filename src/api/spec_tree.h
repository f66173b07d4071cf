// SpecTree: the neutral document tree that JSON and YAML input both load into.
//
// The API accepts the same documents as JSON and as YAML. Each format has its
// own loader (spec_tree_json.cc, spec_tree_yaml.cc) that turns text into this
// small tree; the schema (job_spec_schema.cc) then validates the tree once,
// whatever format it came from.
//
// Scalars keep the text they were written as, so error messages can echo it
// ("1e12", not 1000000000000.0) and so the schema can decide how to read a
// YAML plain (unquoted) scalar:
//
//   JSON             kind                   plain
//   "8"              kString                false
//   8 / 1.5 / 1e12   kInt / kDouble         false
//   YAML
//   8                kInt                   true   an integer field takes it; a
//                                                  string field takes "8"
//   "8"  '8'         kString                false  never an integer
//   yes  on  no      kString                true   booleans are true/false only
//   true false       kBool                  true
//   ~  null  (empty) kNull                  true
//
// An integer that does not fit int64 is a kDouble (its text is kept).
//
// Limits, checked by both loaders (the error field is "spec"): input larger
// than kMaxDocumentBytes; nesting deeper than kMaxDepth (the top-level object
// is depth 1); more than kMaxNodes values; YAML anchors and aliases are shared, never copied, and a
// document whose aliases would expand it by more than kMaxDocumentBytes is
// rejected (so "billion laughs" fails fast instead of exploding). Every string
// in a tree may still hold any bytes (YAML does not check UTF-8); the schema
// checks UTF-8 where it reads a string.
//
// Thread-safety: trees are immutable once loaded; share them freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/message_text.h"
#include "common/status.h"

namespace muster::api {

inline constexpr size_t kMaxDocumentBytes = size_t{4} << 20;  // 4 MiB
inline constexpr int kMaxDepth = 32;
// Values (scalars, lists, objects; an alias counts once) in one document. The
// largest valid spec has about 11,000; the limit keeps a 4 MiB document of
// tiny values ("[0,0,0,...]") from costing hundreds of MiB as a tree.
inline constexpr size_t kMaxNodes = 100'000;

struct TreeNode;
using TreePtr = std::shared_ptr<const TreeNode>;

struct TreeNode {
  enum class Kind : uint8_t { kNull, kBool, kInt, kDouble, kString, kList, kMap };

  Kind kind = Kind::kNull;
  // YAML plain (unquoted) scalar: see the table above.
  bool plain = false;
  bool boolean = false;  // kBool
  int64_t integer = 0;   // kInt
  // Scalars: the string, or the number as written. Empty for null/list/map.
  std::string text;
  std::vector<TreePtr> items;                           // kList
  std::vector<std::pair<std::string, TreePtr>> fields;  // kMap, in document order

  // Filled by FinishNode(): how many levels of lists and objects this node
  // holds (a scalar 0, a list of scalars 1) and about how many bytes it would
  // take if aliases were copied out.
  int height = 0;
  size_t weight = 1;

  bool is_scalar() const { return kind != Kind::kList && kind != Kind::kMap; }
};

// Computes height and weight from the children (saturating). Loaders call it
// once a node is complete.
void FinishNode(TreeNode& node);

// Loaders. Errors: InvalidArgument with field "spec" and a message that says
// what is wrong and, for syntax errors, where ("line 3, column 7").
StatusOr<TreePtr> LoadJsonTree(std::string_view text);
StatusOr<TreePtr> LoadYamlTree(std::string_view text);

// The InvalidArgument for an input over kMaxDocumentBytes, or OK.
Status CheckDocumentSize(std::string_view text);

// ---- Text for messages and field paths -------------------------------------
// (SanitizeForMessage and QuoteForMessage: common/message_text.h.)

// How a node is echoed after "got ": "eight" quoted for strings, 1e12 for
// numbers, true, null, "an object with 2 fields", "a list of 3 items".
std::string Describe(const TreeNode& node);

// (ChildPath: common/message_text.h.)
// "spec.command" + 2 -> "spec.command[2]".
std::string IndexPath(const std::string& parent, size_t index);

bool IsValidUtf8(std::string_view text);

}  // namespace muster::api
