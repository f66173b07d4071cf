// JobStory: what happened to one job, told so that the simulator and a real
// server can be compared line by line.
//
// A story holds what both can say of a job without timing: its events in
// order (type and reason), each ended attempt (how it ended and, per
// replica, its node and end), and its final state. `muster sim --stories`
// writes the simulator's; `muster_fleet_scenario` (bench/) reads the same
// from a real server's API after replaying the scenario with played agents.
// The parity test (test/sim_server_parity.sh) checks both against one
// expected file: the simulator and the server run one lifecycle.
//
// Text form, one block per job in submit order:
//   job A
//     event Started
//     event NodeLost NODE_FAIL
//     attempt 1 REQUEUED NODE_FAIL | gpu-1: lost ... | gpu-2: stopped ...
//     state COMPLETED
#pragma once

#include <string>
#include <vector>

namespace muster::sim {

struct JobStory {
  std::string job;                    // its name
  std::vector<std::string> events;    // "Started", "Retrying NODE_FAIL"
  std::vector<std::string> attempts;  // AttemptLine
  std::string state;                  // its final state ("COMPLETED")
};

// "Type" or "Type REASON".
std::string EventLine(const std::string& type, const std::string& reason);
// One ended attempt: its number, result ("REQUEUED", or the state it ended
// in), its reason, then each replica's "node: result".
std::string AttemptLine(int number, const std::string& result, const std::string& reason,
                        const std::vector<std::pair<std::string, std::string>>& replicas);
std::string FormatStories(const std::vector<JobStory>& stories);

}  // namespace muster::sim
