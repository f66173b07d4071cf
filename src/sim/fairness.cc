#include "sim/fairness.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>

namespace muster::sim {

Fairness TenantFairness(const std::vector<JobResult>& jobs, const std::map<std::string, double>& shares,
                        double min_owed_fraction) {
  std::vector<std::string> names;
  std::unordered_map<std::string, int32_t> index;
  auto id = [&](const std::string& name) {
    auto [it, fresh] = index.emplace(name.empty() ? "default" : name, static_cast<int32_t>(names.size()));
    if (fresh) names.push_back(it->first);
    return it->second;
  };
  const std::vector<JobEdge> ev = JobEdges(jobs);
  std::vector<int32_t> tenant_of(jobs.size(), 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].Ran()) tenant_of[i] = id(jobs[i].tenant);
  }
  const size_t n = names.size();
  std::vector<double> share(n, 1.0);
  for (size_t i = 0; i < n; ++i) {
    auto s = shares.find(names[i]);
    if (s != shares.end() && s->second > 0) share[i] = s->second;
  }
  std::vector<int64_t> pending(n, 0), pending_gpus(n, 0), held(n, 0);
  std::vector<double> fair(n, 0);
  std::vector<size_t> order;
  std::vector<double> owed(n, 0), got(n, 0);
  Fairness f;
  double contended_s = 0;
  for (size_t k = 0; k < ev.size();) {
    const int64_t now = ev[k].t;
    for (; k < ev.size() && ev[k].t == now; ++k) {
      const int32_t t = tenant_of[ev[k].job];
      pending[t] += ev[k].waiting;
      pending_gpus[t] += ev[k].waiting * jobs[ev[k].job].gpus;
      held[t] += ev[k].held;
    }
    if (k == ev.size()) break;
    const double dt = static_cast<double>(ev[k].t - now);
    double share_sum = 0, held_sum = 0;
    int backlogged = 0;
    for (size_t i = 0; i < n; ++i) {
      if (pending[i] <= 0) continue;
      ++backlogged;
      share_sum += share[i];
      held_sum += static_cast<double>(held[i]);
    }
    if (backlogged < 2 || dt <= 0) continue;
    contended_s += dt;
    // Water-filling: the GPUs B holds, split by share, no tenant owed more
    // than its demand (what it holds plus what it waits for); what a
    // tenant cannot use goes to the others.
    order.clear();
    for (size_t i = 0; i < n; ++i) {
      if (pending[i] > 0) order.push_back(i);
    }
    auto demand = [&](size_t i) { return static_cast<double>(held[i] + pending_gpus[i]); };
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return demand(a) / share[a] < demand(b) / share[b]; });
    double left = held_sum, shares_left = share_sum;
    for (size_t i : order) {
      fair[i] = std::min(demand(i), left * share[i] / shares_left);
      left -= fair[i];
      shares_left -= share[i];
    }
    for (size_t i : order) {
      owed[i] += fair[i] * dt;
      got[i] += static_cast<double>(held[i]) * dt;
    }
  }
  double total_owed = 0;
  for (double o : owed) total_owed += o;
  double sum = 0, sum_sq = 0;
  int counted = 0;
  for (size_t i = 0; i < n; ++i) {
    if (owed[i] <= 0) continue;
    const double x = got[i] / owed[i];
    f.ratio[names[i]] = x;
    if (owed[i] < min_owed_fraction * total_owed) {
      f.excluded.push_back(names[i]);
      continue;
    }
    sum += x;
    sum_sq += x * x;
    ++counted;
  }
  if (counted > 0 && sum_sq > 0) f.jain = sum * sum / (counted * sum_sq);
  f.contended_hours = contended_s / 3600.0;
  return f;
}

}  // namespace muster::sim
