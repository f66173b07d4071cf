#include "agent/start_delay.h"

#include <algorithm>
#include <cstdint>

#include "common/random.h"

namespace muster::agent {

namespace {

// FNV-1a of the name: a seed every node has its own of.
uint64_t NodeSeed(const std::string& node) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : node) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

Duration StartDelay(const std::string& node, Duration jitter) {
  if (jitter.millis() <= 0) return Duration::Zero();
  Random r(NodeSeed(node));
  return Duration::Millis(r.Uniform(0, jitter.millis() - 1));
}

Duration SyncRetryDelay(const std::string& node, int failures) {
  int64_t base = 1000;
  if (failures <= 3) base = int64_t{100} << std::max(1, failures);
  Random r(NodeSeed(node) + 1);
  return Duration::Millis(base + base * r.Uniform(0, 499) / 1000);
}

}  // namespace muster::agent
