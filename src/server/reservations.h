// Admin reservations (Slurm's `scontrol create reservation`): an admin
// reserves nodes for a time window and for named users or queues. The jobs
// that name the reservation (the spec's `reservation`, sbatch's
// --reservation) run only on its nodes and within its window; other jobs
// may use those nodes only to end, by their limits, before it opens
// (scheduler: core::AdminReservation).
//
// A reservation as the API takes it:
//   {"name": "maint-dec",            # 1..128 of [A-Za-z0-9._-]
//    "nodes": ["gpu1", "gpu2"],       # 1..4096 nodes the cluster knows, each once
//    "start": "2026-12-01T08:00:00Z", # RFC 3339, or "now" (default)
//    "end": "2026-12-01T20:00:00Z",   # or "duration": "12h" (one of them)
//    "users": ["ann"], "queues": ["research"]}   # who may use it: at least one name
// Refused, naming the field: a window that has ended or lasts more than a
// year, an unknown node, a name taken, and a node already in another
// reservation whose window overlaps this one's.
//
// All of them are one meta document in the store ("reservations"). One
// whose window has ended is removed by the control loop; jobs that still
// name it wait, saying so.
//
// Thread-safety: none; the control loop owns it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "common/time.h"
#include "core/snapshot.h"

namespace muster::server {

struct ReservationEntry {
  core::AdminReservation window;
  std::vector<std::string> users, queues;
  std::string created_by;
};

// The reservation a request body describes, at `now`; InvalidArgument
// naming the field. `node_known` says whether the cluster has a node.
StatusOr<ReservationEntry> ReservationFromJson(const nlohmann::json& body, Time now,
                                               const std::function<bool(const std::string&)>& node_known);
nlohmann::json ReservationJson(const ReservationEntry& r);

class Reservations {
 public:
  static constexpr const char* kMetaKey = "reservations";

  // Loads the store's document ("" or absent: none). DataLoss when damaged.
  Status Load(const std::string& text);
  std::string Dump() const;

  // Adds `r`; AlreadyExists for a name taken, FailedPrecondition ("nodes")
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
