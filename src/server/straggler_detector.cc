#include "server/straggler_detector.h"

#include <algorithm>

namespace muster::server {

void StragglerDetector::Note(int64_t job, int32_t attempt, int32_t replica, int64_t step, Time now) {
  Job& j = jobs_[job];
  if (attempt < j.attempt) return;  // a late report of an attempt that ended
  if (attempt > j.attempt) j = Job{attempt, {}};
  auto& reports = j.replicas[replica].reports;
  reports.emplace_back(now, step);
  while (!reports.empty() && now - reports.front().first > options_.window) reports.pop_front();
}

std::optional<double> StragglerDetector::RateOf(const Replica& r) const {
  if (static_cast<int32_t>(r.reports.size()) < std::max(options_.min_reports, 2)) return std::nullopt;
  const auto& [t0, s0] = r.reports.front();
  const auto& [t1, s1] = r.reports.back();
  const double seconds = static_cast<double>((t1 - t0).millis()) / 1000;
  if (seconds <= 0) return std::nullopt;
  return static_cast<double>(s1 - s0) / seconds;
}

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<StragglerDetector::Change> StragglerDetector::Evaluate(int64_t job, Time now) {
  std::vector<Change> changes;
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return changes;
  Job& j = it->second;
  std::map<int32_t, double> rates;
  for (auto& [index, r] : j.replicas) {
    while (!r.reports.empty() && now - r.reports.front().first > options_.window) r.reports.pop_front();
    if (auto rate = RateOf(r)) rates[index] = *rate;
  }
  for (auto& [index, r] : j.replicas) {
    auto mine = rates.find(index);
    std::vector<double> siblings;
    for (const auto& [other, rate] : rates) {
      if (other != index) siblings.push_back(rate);
    }
    const bool known = mine != rates.end() && !siblings.empty();
    const double median = known ? Median(siblings) : 0;
    const bool slow = known && median > 0 && mine->second < options_.ratio * median;
    if (!slow) {
      r.slow_since = Time::Max();
      if (r.straggling) {
        r.straggling = false;
        changes.push_back({job, j.attempt, index, false, known ? mine->second : 0, median});
      }
      continue;
    }
    if (r.slow_since == Time::Max()) r.slow_since = now;
    if (!r.straggling && now - r.slow_since >= options_.after) {
      r.straggling = true;
      changes.push_back({job, j.attempt, index, true, mine->second, median});
    }
  }
  return changes;
}

std::vector<StragglerDetector::ReplicaRate> StragglerDetector::Rates(int64_t job, Time now) const {
  std::vector<ReplicaRate> out;
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return out;
  for (const auto& [index, r] : it->second.replicas) {
    if (r.reports.empty()) continue;
    out.push_back({index, r.reports.back().second, RateOf(r), r.straggling});
  }
  return out;
}

int64_t StragglerDetector::Straggling() const {
  int64_t n = 0;
  for (const auto& [id, j] : jobs_) {
    for (const auto& [index, r] : j.replicas) n += r.straggling ? 1 : 0;
  }
  return n;
}

void StragglerDetector::Forget(int64_t job) { jobs_.erase(job); }

}  // namespace muster::server
