// The one way tests wait: for a condition, never for a fixed time.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace muster::testing {

// Asks `done` until it holds or `timeout` has passed (asking once more at
// the end); whether it held. Between asks it waits a moment (`poll`), so a
// condition that holds soon is seen soon.
inline bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                    std::chrono::milliseconds poll = std::chrono::milliseconds(10)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

}  // namespace muster::testing
