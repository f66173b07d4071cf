// Output templates as kubectl's: `-o jsonpath=TEMPLATE` and
// `-o custom-columns=HEADER:PATH,...`.
//
// A template is text with {EXPRESSION}s:
//   {.items[*].id}        a path from the current object: .name or ['name']
//                         for a field, [N] for an element (negative: from the
//                         end), [*] or .* for every element or field
//   {range .items[*]}...{end}   the text between, once for each value, with
//                         that value as the current object
//   {"\n"}                literal text (\n, \t, \" and \\ escapes)
// A path's values print separated by spaces: strings as they are, others as
// JSON; a missing one prints nothing, as kubectl does.
//
// Custom columns: a header and a path per column ("ID:.id,STATE:.state";
// the path may be written in braces); each item is a row, "<none>" where
// its path has no value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace muster::cli {

// `root` rendered by `tmpl`; InvalidArgument naming "-o jsonpath" and what
// cannot be read (an unclosed brace, a {range} without {end}, a bad path).
StatusOr<std::string> RenderJsonPath(const nlohmann::json& root, std::string_view tmpl);

// The rows for `items` (a JSON array), the headers first; InvalidArgument
// naming "-o custom-columns" for a column that is not HEADER:PATH.
StatusOr<std::vector<std::vector<std::string>>> CustomColumns(const nlohmann::json& items, std::string_view spec);

}  // namespace muster::cli
