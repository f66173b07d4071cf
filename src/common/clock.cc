#include "common/clock.h"

#include <chrono>

namespace muster {

Time SystemClock::Now() const {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return Time::FromMillis(std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count());
}

}  // namespace muster
