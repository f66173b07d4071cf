// ReclaimWatcher: whether the cloud has given notice that it takes this
// node back (spot or preemptible capacity), and by when.
//
// The agent asks every few seconds (AgentOptions::reclaim_poll) and passes
// a notice to the server in its next sync at once; the server drains the
// node with that deadline (server/control_loop.h, Reclaim). An agent the
// server does not answer stops its tasks itself (Agent::
// StopIfReclaimedAlone).
//
// MetadataReclaimWatcher reads a cloud's instance metadata endpoint:
//   - AWS EC2 spot instance action
//     (http://169.254.169.254/latest/meta-data/spot/instance-action):
//     404 while there is no notice, then 200 with
//     {"action": "terminate", "time": "2026-11-28T08:22:00Z"} (also "stop",
//     "hibernate"); the deadline is that time. Where the instance requires
//     IMDSv2 (a 401), a session token is fetched with
//     PUT /latest/api/token and sent with every later request.
//   - Google Compute Engine preemption
//     (http://metadata.google.internal/computeMetadata/v1/instance/preempted,
//     sent with "Metadata-Flavor: Google"): "FALSE", then "TRUE"; GCE gives
//     30 seconds, so the deadline is 30 s after the first TRUE seen.
// Anything else is an error that says what came back.
//
// Thread-safety: one caller at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace muster::agent {

struct ReclaimNotice {
  Time deadline;       // on the agent's clock
  std::string source;  // what gave it, for people: "aws spot instance-action: terminate at ..."
  bool operator==(const ReclaimNotice&) const = default;
};

class ReclaimWatcher {
 public:
  virtual ~ReclaimWatcher() = default;
  // The notice, when one has been given (nullopt: none); an error when the
  // endpoint could not be read or said something unknown.
  virtual StatusOr<std::optional<ReclaimNotice>> Check() = 0;
};

// The watcher of a metadata endpoint (see above), read with `clock`.
std::unique_ptr<ReclaimWatcher> NewMetadataReclaimWatcher(const std::string& url, const Clock& clock);

// One answer of an endpoint: its HTTP `status` and `body`, read at `now`.
// `first_seen`: when a GCE-style "TRUE" was first seen (the deadline counts
// from it); nullopt: now.
StatusOr<std::optional<ReclaimNotice>> ParseReclaimAnswer(int status, std::string_view body, Time now,
                                                          std::optional<Time> first_seen = std::nullopt);

}  // namespace muster::agent
