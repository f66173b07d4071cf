#include "server/job_table.h"

#include <algorithm>

namespace muster::server {

namespace {

bool Waiting(const std::string& state) { return state == "PENDING" || state == "HELD"; }

}  // namespace

void JobTable::CountWaiting(const store::JobRow& row, int64_t delta) {
  if (!Waiting(row.state)) return;
  auto it = waiting_by_user_.try_emplace(row.user, 0).first;
  if ((it->second += delta) <= 0) waiting_by_user_.erase(it);
}

int64_t JobTable::WaitingOf(const std::string& user) const {
  auto it = waiting_by_user_.find(user);
  return it == waiting_by_user_.end() ? 0 : it->second;
}

void JobTable::Restore(store::JobRow row) {
  const int64_t id = row.id;
  if (auto old = rows_.find(id); old != rows_.end()) CountWaiting(old->second, -1);
  CountWaiting(row, +1);
  rows_[id] = std::move(row);
}

const store::JobRow& JobTable::Add(store::JobRow row, core::JobState state, store::WriteBatch& b) {
  const int64_t id = row.id;
  row.state = core::JobStateName(state);
  if (auto old = rows_.find(id); old != rows_.end()) CountWaiting(old->second, -1);
  CountWaiting(row, +1);
  rows_[id] = std::move(row);
  state_before_[id] = "";
  Write(id, b);
  return rows_.at(id);
}

Status JobTable::Apply(int64_t job, const Change& c, Time now) {
  store::JobRow& row = rows_.at(job);
  Status refused;
  const std::optional<core::JobState> from = core::JobStateFromName(row.state);
  if (c.state) {
    if (from && *from != *c.state && !core::IsValidTransition(*from, *c.state)) {
      refused = Internal("job " + std::to_string(job) + ": " + row.state + " to " + core::JobStateName(*c.state) +
                         " is not an allowed transition; its state stays " + row.state);
    } else {
      if (row.state != core::JobStateName(*c.state)) state_before_.try_emplace(job, row.state);
      CountWaiting(row, -1);
      row.state = core::JobStateName(*c.state);
      CountWaiting(row, +1);
    }
  }
  if (c.reason) row.reason = *c.reason;
  if (c.started) {
    if (metrics_ != nullptr && row.attempts == 0) {
      metrics_->ObserveStart(row.queue, std::max<double>(0, (now.millis() - row.submit_ms) / 1000.0));
    }
    row.start_ms = now.millis();
    row.attempts += 1;
  }
  if (c.back_to_pending) row.start_ms.reset();
  if (c.end && refused.ok()) {
    row.end_ms = c.end->millis();
    // Counted once, as it becomes terminal.
    if (metrics_ != nullptr && !(from && core::IsTerminal(*from))) metrics_->CountEnd(row.queue, row.state);
  }
  return refused;
}

void JobTable::Write(int64_t job, store::WriteBatch& b) {
  store::JobRow& row = rows_.at(job);
  row.status_json = status_of_(job);
  b.jobs.push_back(row);
}

Status JobTable::Update(int64_t job, const Change& c, Time now, store::WriteBatch& b) {
  Status s = Apply(job, c, now);
  Write(job, b);
  return s;
}

void JobTable::WriteReason(int64_t job, const std::string& code, store::WriteBatch& b) {
  store::JobRow& row = rows_.at(job);
  if (row.reason == code) return;
  row.reason = code;
  b.reasons.emplace_back(job, code);
}

std::vector<JobWatch::Change> JobTable::Changes(const store::WriteBatch& b, bool keep) {
  std::vector<JobWatch::Change> changes;
  std::unordered_map<int64_t, size_t> at;  // job -> its change
  auto change_of = [&](int64_t id) -> JobWatch::Change* {
    if (!keep) return nullptr;
    auto [it, fresh] = at.try_emplace(id, changes.size());
    if (fresh) changes.emplace_back();
    return &changes[it->second];
  };
  for (const store::JobRow& row : b.jobs) {
    std::optional<std::string> before;
    if (auto it = state_before_.find(row.id); it != state_before_.end()) {
      before = std::move(it->second);
      state_before_.erase(it);
    }
    if (JobWatch::Change* c = change_of(row.id)) {
      if (!c->state_before) c->state_before = std::move(before);
      c->row = row;
    }
  }
  for (const auto& [id, reason] : b.reasons) {  // applied after the rows, as the store does
    if (JobWatch::Change* c = change_of(id)) {
      if (c->row.id == 0) c->row = rows_.at(id);
      c->row.reason = reason;
    }
  }
  return changes;
}

const store::JobRow* JobTable::Find(int64_t job) const {
  auto it = rows_.find(job);
  return it == rows_.end() ? nullptr : &it->second;
}

}  // namespace muster::server
