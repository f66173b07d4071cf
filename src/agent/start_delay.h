// StartDelay: how long an agent waits before its first sync.
//
// Many agents started at once (a rack powering up, a restart pushed to a
// tenth of the fleet) would reach the server in one burst, each with its
// registration and every task it adopts; a burst of thousands is queued
// behind itself. So each agent first waits a part of `jitter` fixed by its
// node's name: agents started together reach the server spread evenly
// over `jitter`, and one agent restarted twice waits the same. The fleet
// benchmark's played agents wait the same (bench/fleet_agents.cc).
#pragma once

#include <string>

#include "common/time.h"

namespace muster::agent {

// In [0, jitter); zero when jitter is zero.
Duration StartDelay(const std::string& node, Duration jitter);

}  // namespace muster::agent
