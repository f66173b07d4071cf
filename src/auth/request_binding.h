// What a MUNGE credential vouches for: one request. The client puts
// RequestDigest(method, target, body) in the credential's payload; the
// server recomputes it from the request the credential came with and
// refuses a mismatch, so a credential covers its whole request (method,
// path, query and body, the body by its SHA-256) and nothing else.
#pragma once

#include <string>
#include <string_view>

namespace muster::auth {

// "muster-request/1 <METHOD> <target> <sha256(body) hex>": `target` is the
// request target as sent (path and query, still percent-encoded).
std::string RequestDigest(std::string_view method, std::string_view target, std::string_view body);

}  // namespace muster::auth
