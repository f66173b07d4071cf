// ReclaimState: what an agent knows of its node being reclaimed, one
// concern of Agent: the cloud's notice (agent/reclaim_watcher.h) and when
// it was first seen, and the server's deadline for the node (each answer's
// reclaim_in_ms).
//
// Stops are cut to the earlier of the two deadlines (CutGrace). A notice
// reaches the server with the next sync; should no answer acknowledge it
// within a quarter of the notice (at most 10 s), the agent is alone with
// it and stops every task itself, once (StopAlone).
//
// Thread-safety: every method from any thread; its lock is a leaf.
#pragma once

#include <cstdint>
#include <optional>

#include "agent/reclaim_watcher.h"
#include "common/mutex.h"
#include "common/time.h"

namespace muster::agent {

class ReclaimState {
 public:
  // The cloud's notice, checked at `now`: true when it is the first, or
  // moves the deadline earlier (the server is to hear it at once).
  bool NoteCloud(const ReclaimNotice& notice, Time now);
  std::optional<ReclaimNotice> cloud() const;
  // The server's deadline from its last answer (none: it knows of no reclaim).
  void NoteServer(std::optional<Time> at);
  // `grace_ms` cut to the time left before the earlier deadline, never
  // below 0.
  int64_t CutGrace(int64_t grace_ms, Time now) const;
  // Whether a notice waits for the server's acknowledgment (the agent
  // then gives up a sync sooner, to see in time that it is alone).
  bool AwaitingServer() const;
  // True once, when the agent must stop its tasks itself (see above); the
  // notice it acts on in `notice` and when it was first seen in `seen`.
  bool StopAlone(Time now, ReclaimNotice* notice, Time* seen);

 private:
  mutable Mutex mu_;
  std::optional<ReclaimNotice> cloud_ GUARDED_BY(mu_);
  Time seen_ GUARDED_BY(mu_);  // when cloud_ was first given
  std::optional<Time> server_at_ GUARDED_BY(mu_);
  bool stopped_alone_ GUARDED_BY(mu_) = false;
};

}  // namespace muster::agent
