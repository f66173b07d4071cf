#include "auth/request_binding.h"

#include "auth/token.h"

namespace muster::auth {

std::string RequestDigest(std::string_view method, std::string_view target, std::string_view body) {
  std::string out = "muster-request/1 ";
  out += method;
  out += ' ';
  out += target;
  out += ' ';
  out += Sha256Hex(body);
  return out;
}

}  // namespace muster::auth
