// ReplicaExit: how one replica of an attempt ended, as a typed value.
//
// Agents report an end on the wire (proto::TaskReport: exit code, signal,
// an OOM flag and a stop reason word); the server turns that into a
// ReplicaExit at its boundary, and the simulator and the transcript tests
// make them directly. Everything the lifecycle decides about an end (which
// job state it implies, whether a retry is spent, whether the node is to
// blame) reads this type, never the wire's strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/time.h"
#include "core/job.h"

namespace muster::lifecycle {

enum class ExitCause : uint8_t {
  kExited,          // the process ended by itself: see exit_code and signal
  kStoppedByAgent,  // it ended after its agent stopped it (it was no longer wanted)
  kOutOfMemory,     // the cgroup's OOM killer ended it
  kTimeLimit,       // its agent stopped it at the job's time limit
  kFenced,          // its agent (or the task's shim) lost the server's lease and stopped it
  kLost,            // gone with its node or agent: nobody saw it end
  kAgentShutdown,   // its agent shut down and took it along (muster dev --stop-tasks-on-exit)
  kLaunchFailed,    // the node could not start it (the job's fault: its command, its user)
  kNodeFault,       // the node could not start it for a fault of its own (a GPU it was given is gone)
  kStalled,         // it stopped reporting progress for the job's stallTimeout
  kNeverStarted,    // stopped before its node ever started it
};

// "exited", "oom", ... (transcripts print these; the parser reads them back).
const char* ExitCauseName(ExitCause c);
bool ExitCauseFromName(std::string_view name, ExitCause& out);

struct ReplicaExit {
  ExitCause cause = ExitCause::kExited;
  int32_t exit_code = 0;
  int32_t signal = 0;
  std::string message;      // the agent's words, if any (shortened where shown)
  Time end = Time::Zero();  // when it ended, as its agent saw it; Zero: unknown

  // It ran to its end and exited 0.
  bool Succeeded() const { return cause == ExitCause::kExited && exit_code == 0 && signal == 0; }
  // The infrastructure ended it (its node, its agent, the lease), not the job.
  bool NodesFault() const {
    return cause == ExitCause::kFenced || cause == ExitCause::kLost || cause == ExitCause::kAgentShutdown ||
           cause == ExitCause::kNodeFault;
  }
};

// The job state a failed replica implies and how it ended, in words
// ("exited with code 3: ..."), for events and the job's reason. A success
// gives kCompleted and "exited 0".
struct ExitMeaning {
  core::JobState state = core::JobState::kFailed;
  std::string words;
};
ExitMeaning Classify(const ReplicaExit& e);

}  // namespace muster::lifecycle
