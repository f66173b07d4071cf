// Effects: what one lifecycle step changed, for its owner to carry out.
//
// The lifecycle does no I/O. Each step appends here what must be persisted
// (job changes, events, ended attempts) and which nodes' desired states
// changed (their agents are to hear of it). The server turns these into
// store rows and agent nudges in one place; the simulator applies them to
// its simulated agents; the transcript tests print them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "core/job.h"
#include "core/node.h"
#include "lifecycle/attempt.h"

namespace muster::lifecycle {

enum class EventType : uint8_t {
  kReplicaFailed,  // a replica of a running attempt failed; the others are stopped
  kRequeued,       // back to PENDING without spending a retry (requeue, drain, preemption)
  kRetrying,       // back to PENDING after a failure (a retry, or free after a node's failure)
  kCompleted,
  kCancelled,
  kFailed,            // any other terminal state
  kStalled,           // no progress for the job's stallTimeout: treated as hung
  kNodeLost,          // silent for lostAfter, or declared lost: its replicas end
  kManyNodesSilent,   // a burst of silence held back (assumed the server's fault)
  kSilenceHoldEnded,  // the hold gave way: the burst's nodes are lost after all
  kGrown,             // an elastic job's running attempt gained replicas
  kShrinking,         // an elastic job gives back replicas (its newest are stopping)
  kShrunk,            // the replicas it gave back have stopped
};
// The store's event type ("ReplicaFailed").
const char* EventTypeName(EventType t);

struct LifecycleEvent {
  core::JobId job = 0;  // 0: a node's event
  EventType type = EventType::kFailed;
  std::string reason;  // a short code ("NODE_FAIL", "Silent"), may be empty
  std::string message;
};

// A job whose shown state or reason changed (or whose attempt did: its
// status is to be written again).
struct JobChange {
  core::JobId job = 0;
  core::JobState state = core::JobState::kRunning;  // what it shows now
  std::optional<std::string> reason;                // its new reason, when that changed
  bool back_to_pending = false;                     // its start time is cleared
  std::optional<Time> end;                          // it ended (terminal state)
};

// An attempt that ended, with what became of its job.
struct AttemptEnd {
  core::JobId job = 0;
  AttemptRecord record;
  bool terminal = false;  // the job ended; else it is PENDING again
};

struct Effects {
  std::vector<LifecycleEvent> events;
  std::vector<JobChange> jobs;
  std::vector<AttemptEnd> ended;
  std::vector<core::NodeIndex> touched;  // desired state changed (may repeat)
  bool resources_freed = false;          // a scheduling cycle may place more

  bool empty() const { return events.empty() && jobs.empty() && ended.empty() && touched.empty(); }
};

}  // namespace muster::lifecycle
