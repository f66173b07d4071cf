// MUNGE credentials, through the local munged (Debian's libmunge).
//
// A client asks its node's munged to encode a payload: the credential
// carries the caller's uid and gid, as the kernel told munged, sealed with
// the cluster's shared key. The server asks its own munged to decode it.
// munged refuses a credential older than its TTL (default 300 s), one from
// the future, and one it has decoded before (its replay cache): each
// credential is good for one request.
//
// Muster binds each credential to its request: the payload is
// RequestDigest(method, target, body) (request_binding.h), and the server
// checks it against the request it came with, so a credential seen on the
// wire cannot carry another request, and cannot be used twice.
//
// Thread-safety: plain functions; each call opens its own context.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::auth {

// munged's socket on Debian (and most distributions).
inline constexpr const char* kDefaultMungeSocket = "/run/munge/munge.socket.2";

// Encodes `payload` (kUnavailable when munged cannot be reached).
StatusOr<std::string> MungeEncode(const std::string& socket, std::string_view payload);

struct MungeCredential {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string payload;
  int64_t encoded_at_s = 0;  // munged's clock when encoded (Unix seconds)
};
// Decodes `credential`. Expired, replayed, rewound (from the future) and
// invalid credentials are kUnauthenticated saying which; a munged that
// cannot be reached is kUnavailable.
StatusOr<MungeCredential> MungeDecode(const std::string& socket, std::string_view credential);

}  // namespace muster::auth
