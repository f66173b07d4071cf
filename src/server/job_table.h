// JobTable: every job's row as the store keeps it, and the one place the
// server writes those rows.
//
// The control loop keeps each job's store::JobRow here: what a submit fixed
// (name, owner, queue, spec, submit time) and what changes (state, reason,
// start and end times, attempts, status). Nothing else changes a row or
// puts one in a WriteBatch. A step says what changed as typed values (a
// core::JobState, never its name: the name is written here), the table
// applies it, and Write appends the row, its status column rebuilt by the
// owner's `status_of` (allocations, the running attempt, history), to the
// batch that makes the step durable. Several changes of one step are
// applied first, then the row is written once. Every change of state is
// checked here against core::IsValidTransition (the one table of allowed
// transitions): one that is not allowed (a terminal state changing, HELD to
// RUNNING) is a defect of the server; the state is left as it was, the
// rest of the change applies, and Apply says so. A pending job's reason
// from a scheduling cycle is written alone (WriteReason), as the store
// updates that one column.
//
// Thread-safety: none; the control loop's thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/status.h"
#include "common/time.h"
#include "core/job.h"
#include "server/job_watch.h"
#include "server/server_metrics.h"
#include "store/store.h"

namespace muster::server {

class JobTable {
 public:
  using StatusOf = std::function<std::string(int64_t job)>;
  explicit JobTable(StatusOf status_of) : status_of_(std::move(status_of)) {}
  // Counts first starts (their wait since submit) and ends (by final state)
  // in `metrics`, which outlives the table; null: none.
  void SetMetrics(ServerMetrics* metrics) { metrics_ = metrics; }

  // A job as the store had it (a restart).
  void Restore(store::JobRow row);
  // A job just submitted, in `state`: its row is written to `b`.
  const store::JobRow& Add(store::JobRow row, core::JobState state, store::WriteBatch& b);

  struct Change {
    std::optional<core::JobState> state;
    std::optional<std::string> reason;
    bool started = false;          // a new attempt starts now: start time, attempts + 1
    bool back_to_pending = false;  // its start time is cleared
    std::optional<Time> end;       // it ended

    // To `state`, with `reason`.
    static Change To(core::JobState state, std::string reason) {
      Change c;
      c.state = state;
      c.reason = std::move(reason);
      return c;
    }
    // Ended at `end` in `state`.
    static Change Ended(core::JobState state, std::string reason, Time end) {
      Change c = To(state, std::move(reason));
      c.end = end;
      return c;
    }
  };
  // Applies `c` to the row in memory (`now`: a start's time). Internal
  // error, naming both states, when its state change is not allowed.
  Status Apply(int64_t job, const Change& c, Time now);
  // Appends the job's row, its status rebuilt, to `b`.
  void Write(int64_t job, store::WriteBatch& b);
  // Apply, then Write.
  Status Update(int64_t job, const Change& c, Time now, store::WriteBatch& b);
  // A pending job's reason code from a cycle, written alone when it changed.
  void WriteReason(int64_t job, const std::string& code, store::WriteBatch& b);

  // What `b` (being persisted) writes of jobs, for watches (JobWatch):
  // each job once, as the batch leaves it, with its state before the
  // batch. The states before are taken (forgotten here) in any case; the
  // changes are made only when `keep`.
  std::vector<JobWatch::Change> Changes(const store::WriteBatch& b, bool keep);

  const store::JobRow* Find(int64_t job) const;
  // The job's row; the job must exist.
  const store::JobRow& at(int64_t job) const { return rows_.at(job); }
  const std::unordered_map<int64_t, store::JobRow>& rows() const { return rows_; }
  // How many of `user`'s jobs wait to start (PENDING or HELD): kept as
  // rows change, for the per-user limit at submit.
  int64_t WaitingOf(const std::string& user) const;

 private:
  void CountWaiting(const store::JobRow& row, int64_t delta);
  StatusOf status_of_;
  ServerMetrics* metrics_ = nullptr;
  std::unordered_map<int64_t, store::JobRow> rows_;
  // A job's state when its row was last persisted, while changes applied
  // since are not ("" for a job added since).
  std::unordered_map<int64_t, std::string> state_before_;
  std::unordered_map<std::string, int64_t> waiting_by_user_;
};

}  // namespace muster::server
