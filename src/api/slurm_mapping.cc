#include "api/slurm_mapping.h"

#include <string_view>

namespace muster::api {
namespace {

template <typename Map>
std::string Known(const Map& m) {
  std::string out;
  for (const auto& [name, _] : m) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

std::string SlurmRunLengths(const std::vector<int32_t>& counts) {
  std::string out;
  for (size_t i = 0; i < counts.size();) {
    size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(counts[i]) + (j - i > 1 ? "(x" + std::to_string(j - i) + ")" : "");
    i = j;
  }
  return out;
}

bool SlurmNodeOrderLess(const std::string& a, const std::string& b) {
  // Each name as (text, whether a number follows, its value, the name):
  // compared in that order, a strict weak order however names mix.
  struct Key {
    std::string_view text, digits;  // digits: the number without leading zeros
    bool numbered;
  };
  auto key = [](std::string_view s) {
    const size_t d = s.find_last_not_of("0123456789") + 1;
    std::string_view digits = s.substr(d);
    const size_t z = digits.find_first_not_of('0');
    return Key{s.substr(0, d), z == std::string_view::npos ? std::string_view() : digits.substr(z), d < s.size()};
  };
  const Key ka = key(a), kb = key(b);
  if (ka.text != kb.text) return ka.text < kb.text;
  if (ka.numbered != kb.numbered) return !ka.numbered;
  if (ka.digits.size() != kb.digits.size()) return ka.digits.size() < kb.digits.size();
  if (ka.digits != kb.digits) return ka.digits < kb.digits;
  return a < b;
}

StatusOr<SlurmPlacement> MapSlurmNames(const SlurmSpec& names, const SlurmMapping& mapping, const std::string& path) {
  SlurmPlacement out;
  if (names.qos) {
    if (mapping.qos.empty()) {
      return InvalidArgument("QOS \"" + names.qos->substr(0, 64) +
                                 "\" cannot be honoured: no QOS is configured here (the server's slurm.qos maps QOS "
                                 "names onto priority classes); name a priority class instead",
                             path + ".qos");
    }
    auto it = mapping.qos.find(*names.qos);
    if (it == mapping.qos.end()) {
      return InvalidArgument("unknown QOS \"" + names.qos->substr(0, 64) + "\" (known: " + Known(mapping.qos) + ")",
                             path + ".qos");
    }
    out.priority = it->second;
  }
  if (names.partition) {
    if (mapping.partitions.empty()) {
      out.queue = *names.partition;
    } else {
      auto it = mapping.partitions.find(*names.partition);
      if (it == mapping.partitions.end()) {
        return InvalidArgument(
            "unknown partition \"" + names.partition->substr(0, 64) + "\" (known: " + Known(mapping.partitions) + ")",
            path + ".partition");
      }
      out.queue = it->second.queue;
      out.features = it->second.features;
    }
  }
  if (names.account && !mapping.accounts.empty()) {
    auto it = mapping.accounts.find(*names.account);
    if (it == mapping.accounts.end()) {
      return InvalidArgument(
          "unknown account \"" + names.account->substr(0, 64) + "\" (known: " + Known(mapping.accounts) + ")",
          path + ".account");
    }
    out.queue = it->second;
  }
  return out;
}

}  // namespace muster::api
