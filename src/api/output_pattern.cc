#include "api/output_pattern.h"

#include <algorithm>

namespace muster::api {

namespace {
constexpr std::string_view kSymbols = "jaAxtuNn%";
constexpr const char* kKnown =
    "%j (job id), %a (array index), %A (array's first job), %x (job name), %t (replica), %u (user), %N (node), %n "
    "(node number), %%";
}  // namespace

Status CheckOutputPattern(std::string_view pattern, const std::string& field) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (i + 1 == pattern.size()) return InvalidArgument(std::string("ends with a lone '%'; use ") + kKnown, field);
    const char c = pattern[++i];
    if (kSymbols.find(c) == std::string_view::npos) {
      return InvalidArgument("has an unknown symbol %" + std::string(1, c) + "; use " + kKnown, field);
    }
  }
  return Status::Ok();
}

std::string ExpandOutputPattern(std::string_view pattern, const OutputNames& n) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (pattern[++i]) {
      case 'j':
        out += std::to_string(n.job);
        break;
      case 'a':
        out += std::to_string(std::max(n.array_index, 0));
        break;
      case 'A':
        out += std::to_string(n.array_first > 0 ? n.array_first : n.job);
        break;
      case 'x':
        out += n.name;
        break;
      case 't':
        out += std::to_string(n.replica);
        break;
      case 'u':
        out += n.user;
        break;
      case 'N':
        out += n.node;
        break;
      case 'n':
        out += std::to_string(n.node_number);
        break;
      case '%':
        out += '%';
        break;
      default:
        out += '%';
        out += pattern[i];
        break;
    }
  }
  return out;
}

}  // namespace muster::api
