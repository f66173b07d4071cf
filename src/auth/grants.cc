#include "auth/grants.h"

#include <charconv>

#include "auth/token.h"

namespace muster::auth {
namespace {

constexpr std::string_view kJobPrefix = "msj_";

std::string JobClaimText(int64_t job, int32_t attempt) {
  return "muster-job/1 " + std::to_string(job) + " " + std::to_string(attempt);
}

std::string LogClaimText(std::string_view task, int64_t expires_ms) {
  return "muster-log/1 " + std::string(task) + " " + std::to_string(expires_ms);
}

// A decimal without sign or leading zero, in [1, max].
template <typename Int>
bool ParsePositive(std::string_view s, Int max, Int& out) {
  if (s.empty() || s.size() > 19 || s[0] == '0') return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 1 && out <= max;
}

}  // namespace

std::string SignJobToken(std::string_view key, int64_t job, int32_t attempt) {
  return std::string(kJobPrefix) + std::to_string(job) + "_" + std::to_string(attempt) + "_" +
         HmacSha256Hex(key, JobClaimText(job, attempt));
}

bool IsJobToken(std::string_view text) { return text.substr(0, kJobPrefix.size()) == kJobPrefix; }

StatusOr<JobClaim> VerifyJobToken(std::string_view key, std::string_view token) {
  if (!IsJobToken(token) || token.size() > 128) return Unauthenticated("job token: malformed");
  std::string_view rest = token.substr(kJobPrefix.size());
  const size_t a = rest.find('_');
  const size_t b = a == std::string_view::npos ? a : rest.find('_', a + 1);
  JobClaim c;
  if (b == std::string_view::npos || !ParsePositive<int64_t>(rest.substr(0, a), INT64_MAX / 2, c.job) ||
      !ParsePositive<int32_t>(rest.substr(a + 1, b - a - 1), 1'000'000, c.attempt)) {
    return Unauthenticated("job token: malformed");
  }
  if (!ConstantTimeEquals(rest.substr(b + 1), HmacSha256Hex(key, JobClaimText(c.job, c.attempt)))) {
    return Unauthenticated("job token: not signed by this cluster");
  }
  return c;
}

std::string SignLogGrant(std::string_view key, std::string_view task, int64_t expires_ms) {
  return std::to_string(expires_ms) + "." + HmacSha256Hex(key, LogClaimText(task, expires_ms));
}

Status VerifyLogGrant(std::string_view key, std::string_view task, std::string_view grant, int64_t now_ms) {
  const size_t dot = grant.find('.');
  int64_t expires = 0;
  if (dot == std::string_view::npos || !ParsePositive<int64_t>(grant.substr(0, dot), INT64_MAX, expires)) {
    return Unauthenticated("log grant: malformed");
  }
  if (!ConstantTimeEquals(grant.substr(dot + 1), HmacSha256Hex(key, LogClaimText(task, expires)))) {
    return Unauthenticated("log grant: not from this node's server, or for another task");
  }
  if (now_ms > expires) return Unauthenticated("log grant: expired");
  return Status::Ok();
}

}  // namespace muster::auth
