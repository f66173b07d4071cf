#include "agent/start_delay.h"

#include <cstdint>

#include "common/random.h"

namespace muster::agent {

Duration StartDelay(const std::string& node, Duration jitter) {
  if (jitter.millis() <= 0) return Duration::Zero();
  uint64_t h = 1469598103934665603ULL;  // FNV-1a of the name: a seed every node has its own of
  for (unsigned char c : node) h = (h ^ c) * 1099511628211ULL;
  Random r(h);
  return Duration::Millis(r.Uniform(0, jitter.millis() - 1));
}

}  // namespace muster::agent
