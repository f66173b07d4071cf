#include "auth/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>

namespace muster::auth {
namespace {

constexpr std::string_view kPrefix = "mst_";
constexpr size_t kIdHex = 16;
constexpr size_t kSecretChars = 43;  // 32 bytes in unpadded base64url

void OsRandom(unsigned char* out, size_t n) {
  // RAND_bytes reads the kernel's CSPRNG; failing to get randomness is
  // not something to recover from with a weaker secret.
  if (RAND_bytes(out, static_cast<int>(n)) != 1) {
    std::fprintf(stderr, "muster: the OS random source failed\n");
    std::abort();
  }
}

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kHex[p[i] >> 4];
    out += kHex[p[i] & 15];
  }
  return out;
}

std::string Base64Url(const unsigned char* p, size_t n) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    acc = (acc << 8) | p[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

bool IsHexLower(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool IsBase64Url(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

}  // namespace

Token NewToken() {
  unsigned char id[kIdHex / 2], secret[32];
  OsRandom(id, sizeof id);
  OsRandom(secret, sizeof secret);
  return {Hex(id, sizeof id), Base64Url(secret, sizeof secret)};
}

std::string FormatToken(const Token& t) { return std::string(kPrefix) + t.id + "_" + t.secret; }

StatusOr<Token> ParseToken(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  const size_t want = kPrefix.size() + kIdHex + 1 + kSecretChars;
  if (text.substr(0, kPrefix.size()) != kPrefix) {
    return Unauthenticated("token: not a Muster token (they start with \"mst_\")");
  }
  if (text.size() != want || text[kPrefix.size() + kIdHex] != '_') {
    return Unauthenticated("token: malformed (mst_, 16 hex digits, _, 43 base64url characters)");
  }
  Token t{std::string(text.substr(kPrefix.size(), kIdHex)), std::string(text.substr(kPrefix.size() + kIdHex + 1))};
  for (char c : t.id) {
    if (!IsHexLower(c)) return Unauthenticated("token: malformed id (16 lower-case hex digits)");
  }
  for (char c : t.secret) {
    if (!IsBase64Url(c)) return Unauthenticated("token: malformed secret (43 base64url characters)");
  }
  return t;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  return Hex(digest, len);
}

std::string HmacSha256Hex(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), digest, &len);
  return Hex(digest, len);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string RandomHex(size_t n) {
  std::string bytes(n, '\0');
  OsRandom(reinterpret_cast<unsigned char*>(bytes.data()), n);
  return Hex(reinterpret_cast<const unsigned char*>(bytes.data()), n);
}

}  // namespace muster::auth
