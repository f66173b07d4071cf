// ControlLoop: admin reservations (server/reservations.h). The loop keeps
// them, writes them to the store as one meta document, and gives their
// windows to the cluster state, where the scheduler reads them.
#include <nlohmann/json.hpp>

#include "common/rfc3339.h"
#include "server/control_loop.h"

namespace muster::server {

void ControlLoop::CreateReservation(nlohmann::json body, const Identity& who, store::AuditRow audit,
                                    Done<StatusOr<ReservationEntry>> done) {
  using R = StatusOr<ReservationEntry>;
  loop_.Async<R>(
      [this, body = std::move(body), user = who.Describe(),
       audit = std::move(audit)](const std::function<void(R)>& reply) mutable {
        const Time now = clock_.Now();
        std::vector<std::string> names;
        for (const core::Node& n : state_.nodes()) {
          if (!agents_.Removed(n.spec.name)) names.push_back(n.spec.name);
        }
        auto r = ReservationFromJson(body, now, names);
        if (!r.ok()) return reply(r.status());
        if (!r->Has("IGNORE_JOBS")) {
          if (Status busy = JobsRunIntoWindow(r->window); !busy.ok()) return reply(busy);
        }
        r->created_by = user;
        if (Status added = admin_reservations_.Add(*r); !added.ok()) return reply(added);
        state_.SetReservations(admin_reservations_.Windows());
        pacer_.Changed();
        store::WriteBatch b;
        b.meta.emplace_back(Reservations::kMetaKey, admin_reservations_.Dump());
        std::string nodes;
        for (const std::string& n : r->window.nodes) nodes += (nodes.empty() ? "" : ",") + n;
        b.events.push_back(Event(0, "ReservationCreated", "",
                                 r->window.name + ": " + nodes + " from " + FormatRfc3339Utc(r->window.start) + " to " +
                                     FormatRfc3339Utc(r->window.end) + ", by " + user));
        audit.detail = nodes;
        b.audit.push_back(std::move(audit));
        Persist(std::move(b), [reply, entry = *r](const Status& s) { s.ok() ? reply(entry) : reply(s); });
      },
      std::move(done), ShuttingDown());
}

Status ControlLoop::JobsRunIntoWindow(const core::AdminReservation& window) const {
  for (const std::string& name : window.nodes) {
    const std::optional<core::NodeIndex> node = state_.FindNode(name);
    if (!node) continue;
    for (const auto& [id, job] : state_.running()) {
      if (job.expected_end <= window.start) continue;
      for (const core::Allocation& a : job.allocations) {
        if (a.node != *node) continue;
        return Status(StatusCode::kFailedPrecondition,
                      "node " + name + " runs job " + std::to_string(id) +
                          (job.expected_end.is_max() ? " with no time limit"
                                                     : ", whose limit ends at " + FormatRfc3339Utc(job.expected_end)) +
                          ", after the window starts; wait for it, cancel it, or give flags IGNORE_JOBS",
                      "nodes");
      }
    }
  }
  return Status::Ok();
}

void ControlLoop::DeleteReservation(const std::string& name, store::AuditRow audit, Done<StatusOr<bool>> done) {
  using R = StatusOr<bool>;
  loop_.Async<R>(
      [this, name, audit = std::move(audit)](const std::function<void(R)>& reply) mutable {
        if (!admin_reservations_.Remove(name)) return reply(false);
        state_.SetReservations(admin_reservations_.Windows());
        pacer_.Changed();
        store::WriteBatch b;
        b.meta.emplace_back(Reservations::kMetaKey, admin_reservations_.Dump());
        b.events.push_back(Event(0, "ReservationDeleted", "", name + ", by " + audit.actor));
        b.audit.push_back(std::move(audit));
        Persist(std::move(b), [reply](const Status& s) { s.ok() ? reply(true) : reply(s); });
      },
      std::move(done), ShuttingDown());
}

void ControlLoop::ReservationList(Done<StatusOr<std::vector<ReservationEntry>>> done) {
  using R = StatusOr<std::vector<ReservationEntry>>;
  loop_.Async<R>([this](const std::function<void(R)>& reply) { reply(admin_reservations_.all()); }, std::move(done),
                 ShuttingDown());
}

void ControlLoop::EndReservations(Time now, store::WriteBatch& b) {
  const std::vector<std::string> ended = admin_reservations_.RemoveEnded(now);
  if (ended.empty()) return;
  state_.SetReservations(admin_reservations_.Windows());
  b.meta.emplace_back(Reservations::kMetaKey, admin_reservations_.Dump());
  for (const std::string& name : ended) b.events.push_back(Event(0, "ReservationEnded", "", name));
}

}  // namespace muster::server
