// Text from outside (a spec, a node name, a library's error) echoed in an
// error message: control characters, invalid UTF-8, line separators and
// bidi overrides escaped, so a message never carries them raw into a log or
// a terminal.
//
// Thread-safety: free functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace muster {

// `text` with C0/C1 controls, DEL, U+2028/2029 and the bidi overrides
// escaped (\n, \u0007, \xff, \u202e), cut to about `max_bytes` with "..."
// when longer. Never contains a raw control character.
std::string SanitizeForMessage(std::string_view text, size_t max_bytes = 200);

// `text` quoted and sanitized for echoing a value: "\"eight\"", or
// "\"aaaa...\" (70000 bytes)" when cut.
std::string QuoteForMessage(std::string_view text, size_t max_bytes = 64);

// The field path of a child: "spec.resources" + "gpus" ->
// "spec.resources.gpus"; keys that are not identifiers (letters, digits,
// '_') are quoted and escaped: spec.env["1BAD"], cluster["nod\u0011e"].
std::string ChildPath(const std::string& parent, std::string_view key);

// Length of the valid UTF-8 sequence at s[i] (its code point in *cp), or 0
// when the bytes there are not valid UTF-8 (overlong forms and surrogates
// included).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp);

}  // namespace muster
