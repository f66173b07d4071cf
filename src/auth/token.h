// Bearer tokens: the credential of a user or an agent that has no MUNGE
// (remote use, the REST API, a node's agent).
//
//   mst_<id>_<secret>
//     id:     16 lower-case hex digits, public: it names the token in
//             `muster token list` and revocation, and finds its record
//     secret: 43 characters of base64url, 256 bits from the OS's CSPRNG
//
// The server keeps only SHA-256(secret) (a secret of 256 random bits needs
// no slow hash: nobody can guess it), and compares digests in constant
// time. A token's user, node, expiry and revocation are in its record
// (store::TokenRow), not in the token: revoking one takes effect at once.
//
// Thread-safety: plain functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::auth {

struct Token {
  std::string id;      // 16 hex digits
  std::string secret;  // 43 base64url characters
};

// A new token from the OS's random source (getrandom). Secrets never come
// from the injectable, seeded muster::Random.
Token NewToken();
std::string FormatToken(const Token& t);
// Reads "mst_<id>_<secret>" (surrounding white space allowed); an error says
// what is wrong with it without echoing the secret.
StatusOr<Token> ParseToken(std::string_view text);

// SHA-256 of `data` as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view data);
// HMAC-SHA-256 of `data` under `key`, as 64 lower-case hex digits.
std::string HmacSha256Hex(std::string_view key, std::string_view data);
// Equal strings, compared in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);
// `n` random bytes from the OS, as 2n hex digits (keys, nonces).
std::string RandomHex(size_t n);

}  // namespace muster::auth
