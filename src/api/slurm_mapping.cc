#include "api/slurm_mapping.h"

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
        return InvalidArgument("unknown partition \"" + names.partition->substr(0, 64) + "\" (known: " +
                                   Known(mapping.partitions) + ")",
                               path + ".partition");
      }
      out.queue = it->second.queue;
      out.features = it->second.features;
    }
  }
  if (names.account && !mapping.accounts.empty()) {
    auto it = mapping.accounts.find(*names.account);
    if (it == mapping.accounts.end()) {
      return InvalidArgument("unknown account \"" + names.account->substr(0, 64) + "\" (known: " +
                                 Known(mapping.accounts) + ")",
                             path + ".account");
    }
    out.queue = it->second;
  }
  return out;
}

}  // namespace muster::api
