// Admin reservations (Slurm's `scontrol create reservation`): an admin
// reserves nodes for a time window and for named users or queues. The jobs
// that name the reservation (the spec's `reservation`, sbatch's
// --reservation) run only on its nodes and within its window; other jobs
// may use those nodes only to end, by their limits, before it opens
// (scheduler: core::AdminReservation).
//
// A reservation as the API takes it:
//   {"name": "maint-dec",            # 1..128 of [A-Za-z0-9._-]
//    "nodes": ["gpu1", "gpu2"],       # 1..4096 nodes the cluster knows, each once;
//                                     # or "ALL": every node it knows now
//    "start": "2026-12-01T08:00:00Z", # RFC 3339, or "now" (default)
//    "end": "2026-12-01T20:00:00Z",   # or "duration": "12h" (one of them)
//    "users": ["ann"], "queues": ["research"],   # who may use it: at least one name
//    "flags": ["MAINT", "IGNORE_JOBS"]}          # Slurm's, those that apply here:
// IGNORE_JOBS   create it even where running jobs would, by their limits,
//               run into the window (they run on; the nodes take nothing new)
// OVERLAP       its nodes may also be in another reservation whose window
//               overlaps (each one's jobs may use them)
// MAINT         a maintenance window: may overlap as OVERLAP, and is shown so
// Refused, naming the field: a window that has ended or lasts more than a
// year, an unknown node or flag, a name taken, a node already in another
// reservation whose window overlaps this one's (without OVERLAP or MAINT),
// and (without IGNORE_JOBS) a node whose running job would still run, by
// its limit, when the window opens.
//
// All of them are one meta document in the store ("reservations"). One
// whose window has ended is removed by the control loop; jobs that still
// name it wait, saying so.
//
// Thread-safety: none; the control loop owns it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "common/time.h"
#include "core/snapshot.h"

namespace muster::server {

struct ReservationEntry {
  core::AdminReservation window;
  std::vector<std::string> users, queues;
  std::vector<std::string> flags;  // as written above, upper case, each once, in Slurm's order
  bool all_nodes = false;          // made with nodes "ALL" (Slurm's flag ALL_NODES)
  std::string created_by;
  bool Has(std::string_view flag) const;
};

// The reservation a request body describes, at `now`; InvalidArgument
// naming the field. `cluster_nodes`: the names of the nodes the cluster
// has (for "ALL"); a node not among them is refused, unless `any_node`
// (reloading what was accepted already).
StatusOr<ReservationEntry> ReservationFromJson(const nlohmann::json& body, Time now,
                                               const std::vector<std::string>& cluster_nodes, bool any_node = false);
nlohmann::json ReservationJson(const ReservationEntry& r);

class Reservations {
 public:
  static constexpr const char* kMetaKey = "reservations";

  // Loads the store's document ("" or absent: none). DataLoss when damaged.
  Status Load(const std::string& text);
  std::string Dump() const;

  // Adds `r`; FailedPrecondition for a name taken ("name") and ("nodes")
  // for a node already reserved in an overlapping window.
  Status Add(ReservationEntry r);
  // Removes it; false when there was none.
  bool Remove(const std::string& name);
  // Removes those whose window has ended by `now`; their names.
  std::vector<std::string> RemoveEnded(Time now);
  const ReservationEntry* Find(const std::string& name) const;
  // Whether a job of `user` in `queue` may name reservation `name`:
  // InvalidArgument ("reservation") saying why not.
  Status MayUse(const std::string& name, const std::string& user, const std::string& queue) const;

  const std::vector<ReservationEntry>& all() const { return entries_; }
  std::vector<core::AdminReservation> Windows() const;

 private:
  std::vector<ReservationEntry> entries_;  // by start, then name
};

}  // namespace muster::server
