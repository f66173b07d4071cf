// StartDelay: how long an agent waits before its first sync, and
// SyncRetryDelay: before the next after a sync failed.
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

// How long the watcher waits after its `failures`-th failed sync in a row
// before the next: 200 ms, 400 ms, 800 ms, then 1 s, each stretched by up to
// half again by a part fixed by the node's name. The first retry comes soon
// (a leader that died is replaced within a second: its agents should not
// sit out a full second), and agents that failed together (their server
// died under all of them) do not come back in step.
Duration SyncRetryDelay(const std::string& node, int failures);

}  // namespace muster::agent
