// Admin reservations (server/reservations.h): nodes held for a time window
// and for named users or queues, whose jobs name the reservation (the
// spec's reservation, sbatch --reservation).
//
//   muster reservation create NAME --nodes N1,N2 [--start T] (--end T | --duration D)
//                             [--users U1,U2] [--queues Q1]
//                                  admins; T is RFC 3339 or "now" (the default
//                                  start), D such as 12h or 1-00:00:00
//   muster reservation list [-o json]
//   muster reservation delete NAME  admins
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace muster::cli {

struct ReservationCommands;
std::shared_ptr<ReservationCommands> AddReservationCommands(CLI::App& app);
// The exit code of whichever command was parsed, or -1 if none was.
int RunReservationCommands(ReservationCommands& commands);

}  // namespace muster::cli
