#include "core/resources.h"

#include <algorithm>

namespace muster::core {

int64_t Resources::CopiesOf(const Resources& u, int64_t cap) const {
  int64_t n = cap;
  if (u.gpus > 0) n = std::min(n, gpus / u.gpus);
  if (u.cpu_milli > 0) n = std::min(n, cpu_milli / u.cpu_milli);
  if (u.memory_bytes > 0) n = std::min(n, memory_bytes / u.memory_bytes);
  return std::max<int64_t>(n, 0);
}

Resources Resources::Min(const Resources& a, const Resources& b) {
  return {std::min(a.gpus, b.gpus), std::min(a.cpu_milli, b.cpu_milli), std::min(a.memory_bytes, b.memory_bytes)};
}

std::string Resources::ToString() const {
  std::string out = std::to_string(gpus) + " GPU";
  if (cpu_milli) {
    out += ", ";
    out += cpu_milli % 1000 == 0 ? std::to_string(cpu_milli / 1000) : std::to_string(cpu_milli) + "m";
    out += " CPU";
  }
  if (memory_bytes) {
    constexpr int64_t kGi = int64_t{1} << 30, kMi = int64_t{1} << 20;
    out += ", ";
    out +=
        memory_bytes % kGi == 0 ? std::to_string(memory_bytes / kGi) + "Gi" : std::to_string(memory_bytes / kMi) + "Mi";
  }
  return out;
}

}  // namespace muster::core
