// Fairness between tenants over a finished simulation: Jain's index of
// share-normalized usage while tenants have demand.
//
// Algorithm:
//  1. From every job that ran, its pending intervals and its running
//     intervals holding `gpus` (more than one of each when preempted).
//  2. Sweep the event times. In each interval, the backlogged tenants B are
//     those with a job waiting. When B has at least two tenants (they
//     compete), the GPUs B holds are what B is sharing, split max-min fair:
//     by share, but no tenant is owed more than its demand (the GPUs it
//     holds plus those its waiting jobs ask for), the rest going to the
//     others (water-filling). Tenant i is owed that, and holds held_i.
//  3. Over all such intervals, owed_i and held_i are integrated (GPU-
//     seconds); x_i = held_i / owed_i for every tenant owed anything.
//  4. Jain's index J = (sum x_i)^2 / (n x sum x_i^2): 1 when every competing
//     tenant got exactly its share of what the competitors held, 1/n when
//     one tenant got it all. Tenants owed less than `min_owed_fraction` of
//     all that was owed (a handful of jobs that waited minutes, whose ratio
//     says more about one job's wait than about shares) are reported but
//     left out of the index.
//
// Example: tenants A and B, equal shares, both with a 1-GPU job waiting for
// an hour while A holds 6 GPUs and B 2: owed 4 and 4 (both demand more),
// x = 1.5 and 0.5, J = (2)^2 / (2 x 2.5) = 0.8. Had B demanded only 3 GPUs
// in all, it would be owed 3 and A 5: x = 1.2 and 0.67, J = 0.92.
//
// Tenants that wait alone are not compared (nobody to be unfair to); usage
// by tenants with nothing waiting is not counted (they are not competing).
//
// Thread-safety: a pure function.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/simulator.h"

namespace muster::sim {

struct Fairness {
  double jain = 1.0;                    // 1.0 when there was no contention
  double contended_hours = 0;           // time with two or more tenants waiting
  std::map<std::string, double> ratio;  // x_i: held / owed while competing
  std::vector<std::string> excluded;    // owed too little to count in `jain`
};

// `shares`: tenant -> share; a tenant not listed has share 1.
Fairness TenantFairness(const std::vector<JobResult>& jobs, const std::map<std::string, double>& shares = {},
                        double min_owed_fraction = 0.005);

}  // namespace muster::sim
