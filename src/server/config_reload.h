// Config reload: what SIGHUP applies to a running server, from its
// configuration file read again.
//
// Applied at once, nothing running disturbed: `queues` (quotas and shares:
// the next scheduling cycle uses them), `priorityClasses` (the classes
// there are keep their place, since jobs hold them; their weights and
// flags may change, new classes follow them), `defaultPriorityClass`,
// `fairShare`, `prices`, `pools` and `slurm` (the name mappings). Every other key
// takes a restart: a change to one is reported and not applied. A file
// that does not parse or validate, or that removes or reorders classes, is
// refused whole, naming the field, and the configuration in force stays.
//
//   kill -HUP $(pidof muster)     # or: systemctl reload muster-server
//   ... info  reloaded /etc/muster/server.yaml: queues.research: {name: research, limit: 32}
//             -> {name: research, limit: 16}
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace muster::server {

class ControlLoop;

struct ReloadPlan {
  std::vector<std::string> applied;  // "queues.research: OLD -> NEW", "prices: OLD -> NEW"
  std::vector<std::string> restart;  // top-level keys changed that only a restart applies
  // The configuration in force once applied: the old text's keys, with the
  // reloadable ones as the new text has them.
  std::string in_force;
};

// What changes from the configuration text in force to `next_yaml`, both
// YAML mappings (their values compared as YAML, not as text).
StatusOr<ReloadPlan> PlanReload(const std::string& in_force_yaml, const std::string& next_yaml);

// Reads `path` again and, when it is good, applies what a reload may to
// `loop` and makes it the text in force. Logs what changed, what needs a
// restart, or why the file was refused (the configuration then stays).
// Returns the status the log line says.
Status ReloadConfig(const std::string& path, std::string& in_force_yaml, ControlLoop& loop);

}  // namespace muster::server
