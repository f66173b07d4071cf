#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/random.h"
#include "core/cluster_state.h"
#include "scheduler/test_util.h"

namespace muster::scheduler {
namespace {

using core::ClusterState;
using core::JobId;
using testing::AddNodes;
using testing::Apply;
using testing::Gpus;

std::unique_ptr<Scheduler> Make(const std::string& policy = "muster") {
  SchedulerOptions o;
  o.policy = policy;
  return testing::MakeScheduler(o);
}

TEST(Scheduler, UnknownPolicyIsAnErrorListingTheKnownOnes) {
  SchedulerOptions o;
  o.policy = "lottery";
  auto s = Scheduler::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().field(), "scheduler.policy");
  EXPECT_NE(s.status().message().find("fifo-skip"), std::string::npos);
}

TEST(Scheduler, NegativeReservationsRejected) {
  SchedulerOptions o;
  o.max_reservations = -1;
  EXPECT_EQ(Scheduler::Create(o).status().field(), "scheduler.maxReservations");
}

// Random clusters and queues: decisions are deterministic, every binding is
// a whole gang, and applying them keeps the state's invariants.
TEST(Scheduler, RandomizedCyclesAreWholeAndDeterministic) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    Random rng(seed);
    ClusterState state;
    AddNodes(state, static_cast<int>(rng.Uniform(2, 40)), 8, static_cast<int>(rng.Uniform(1, 8)));
    Time now = Time::Zero();
    for (int step = 0; step < 40; ++step) {
      for (int k = rng.Uniform(0, 6); k > 0; --k) {
        const int64_t g = std::vector<int64_t>{1, 1, 1, 2, 4, 8, 16, 32}[rng.Uniform(0, 7)];
        const int32_t replicas = g > 8 ? static_cast<int32_t>(g / 8) : 1;
        const std::string cls = std::vector<std::string>{"low", "normal", "high"}[rng.Uniform(0, 2)];
        auto id = state.Submit(
            Gpus(replicas, static_cast<int>(g / replicas), Duration::Minutes(rng.Uniform(5, 300)), cls), now);
        ASSERT_TRUE(id.ok());
      }
      const core::Decisions a = Make()->Cycle(state.Snapshot(now));
      const core::Decisions b = Make()->Cycle(state.Snapshot(now));
      ASSERT_EQ(a.bindings.size(), b.bindings.size());
      for (size_t i = 0; i < a.bindings.size(); ++i) {
        ASSERT_EQ(a.bindings[i].job, b.bindings[i].job);
        ASSERT_EQ(a.bindings[i].allocations, b.bindings[i].allocations);
      }
      // Every pending job that did not start has exactly one reason.
      std::map<JobId, int> reasons;
      for (const auto& r : a.reasons) ++reasons[r.job];
      for (const auto& bnd : a.bindings) ASSERT_EQ(reasons.count(bnd.job), 0u);
      ASSERT_EQ(reasons.size() + a.bindings.size(), state.pending_count()) << "seed " << seed;
      for (const auto& [job, n] : reasons) ASSERT_EQ(n, 1);
      Apply(state, a, now);
      ASSERT_TRUE(state.CheckInvariants().ok()) << state.CheckInvariants().ToString();
      // Some jobs end.
      now = now + Duration::Minutes(rng.Uniform(1, 60));
      std::vector<JobId> ending;
      for (const auto& [id, r] : state.running()) {
        if (r.expected_end <= now || rng.Bernoulli(0.2)) ending.push_back(id);
      }
      std::sort(ending.begin(), ending.end());
      for (JobId id : ending) ASSERT_TRUE(state.Finish(id, core::JobState::kCompleted, now).ok());
    }
  }
}

// Within one cycle: at each reservation's start, with every running job
// (including those just started) holding its GPUs until its time limit and
// every earlier reservation holding its own, the reservation's GPUs are free.
TEST(Scheduler, BackfillNeverDelaysAReservationWithinACycle) {
  int64_t reservations = 0, backfilled = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Random rng(seed);
    ClusterState state;
    AddNodes(state, static_cast<int>(rng.Uniform(2, 12)), 8, static_cast<int>(rng.Uniform(1, 4)));
    Time now = Time::Zero();
    // Fill the cluster partly, then queue a mix.
    for (int round = 0; round < 3; ++round) {
      for (int k = 0; k < 12; ++k) {
        const int64_t g = std::vector<int64_t>{1, 2, 4, 8, 16}[rng.Uniform(0, 4)];
        const int32_t replicas = g > 8 ? 2 : 1;
        ASSERT_TRUE(
            state.Submit(Gpus(replicas, static_cast<int>(g / replicas), Duration::Minutes(rng.Uniform(10, 600))), now)
                .ok());
      }
      const core::Decisions d = Make()->Cycle(state.Snapshot(now));
      Apply(state, d, now);
      now = now + Duration::Minutes(rng.Uniform(1, 30));
    }
    // Some jobs end before their limits, leaving holes.
    std::vector<JobId> ending;
    for (const auto& [id, r] : state.running()) {
      if (rng.Bernoulli(0.4)) ending.push_back(id);
    }
    std::sort(ending.begin(), ending.end());
    for (JobId id : ending) ASSERT_TRUE(state.Finish(id, core::JobState::kCompleted, now).ok());
    // Small jobs of all lengths arrive behind the blocked ones: candidates to backfill.
    for (int k = 0; k < 10; ++k) {
      ASSERT_TRUE(
          state.Submit(Gpus(1, static_cast<int>(rng.Uniform(1, 4)), Duration::Minutes(rng.Uniform(5, 900)), "low"), now)
              .ok());
    }
    const core::ClusterSnapshot snap = state.Snapshot(now);
    const core::Decisions d = Make()->Cycle(snap);
    Apply(state, d, now);
    reservations += static_cast<int64_t>(d.reservations.size());
    backfilled += d.stats.backfilled;

    struct Hold {
      Time from, until;
      std::vector<core::Allocation> allocs;
    };
    std::vector<Hold> holds;
    for (const auto& [id, r] : state.running()) holds.push_back({r.start, r.expected_end, r.allocations});
    for (const core::Reservation& res : d.reservations) {
      std::vector<int64_t> used(state.nodes().size(), 0);
      for (const Hold& h : holds) {
        if (h.from <= res.start && res.start < h.until) {
          for (const auto& a : h.allocs) used[a.node] += a.resources.gpus;
        }
      }
      for (const auto& a : res.allocations) {
        ASSERT_LE(used[a.node] + a.resources.gpus, state.nodes()[a.node].spec.capacity.gpus)
            << "seed " << seed << ": reservation of job " << res.job << " at " << res.start.seconds()
            << "s overbooks node " << a.node;
      }
      const core::JobRecord* rec = state.Find(res.job);
      holds.push_back({res.start, res.start + rec->spec.time_limit, res.allocations});
    }
  }
  // The property was exercised, not vacuous.
  EXPECT_GT(reservations, 60);
  EXPECT_GT(backfilled, 10);
}

// Must-show 3: a 64-GPU job behind a continuous stream of 1-GPU jobs starts
// no later than the start its first reservation promised; under fifo-skip,
// the same stream starves it.
struct StreamResult {
  Time first_planned = Time::Max();
  Time started = Time::Max();
  bool planned_start_grew = false;
};

StreamResult RunStream(const std::string& policy, uint64_t seed) {
  Random rng(seed);
  ClusterState state;
  AddNodes(state, 8, 8, 8);  // 64 GPUs, one leaf
  auto sched = Make(policy);
  Time now = Time::Zero();
  const Time horizon = Time::Zero() + Duration::Hours(12);
  // Jobs end between 25% and 100% of their limit.
  std::map<JobId, Time> ends;
  JobId big = 0;
  StreamResult out;
  Time last_planned = Time::Max();
  while (now < horizon && out.started.is_max()) {
    // A steady stream of 1-GPU jobs, one a minute with limits of 30 min .. 4 h:
    // about 84 GPUs of demand on 64, so the queue never drains.
    auto id = state.Submit(Gpus(1, 1, Duration::Minutes(rng.Uniform(30, 240))), now);
    EXPECT_TRUE(id.ok());
    if (now == Time::Zero() + Duration::Minutes(10)) {
      big = *state.Submit(Gpus(8, 8, Duration::Hours(2)), now);
    }
    const core::Decisions d = sched->Cycle(state.Snapshot(now));
    for (const auto& r : d.reservations) {
      if (r.job != big) continue;
      if (out.first_planned.is_max()) out.first_planned = r.start;
      if (!last_planned.is_max() && r.start > last_planned) out.planned_start_grew = true;
      last_planned = r.start;
    }
    for (const auto& b : d.bindings) {
      EXPECT_TRUE(state.Bind(b, now).ok());
      const core::RunningJob& r = state.running().at(b.job);
      const Duration limit = r.expected_end - r.start;
      ends[b.job] = now + Duration::Millis(limit.millis() * rng.Uniform(25, 100) / 100);
      if (b.job == big) out.started = now;
    }
    now = now + Duration::Minutes(1);
    for (auto it = ends.begin(); it != ends.end();) {
      if (it->second <= now) {
        EXPECT_TRUE(state.Finish(it->first, core::JobState::kCompleted, now).ok());
        it = ends.erase(it);
      } else {
        ++it;
      }
    }
  }
  return out;
}

TEST(Scheduler, BigGangNeverStarvesBehindAStreamOfSmallJobs) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const StreamResult muster = RunStream("muster", seed);
    ASSERT_FALSE(muster.first_planned.is_max()) << "the big job never got a reservation";
    ASSERT_FALSE(muster.started.is_max()) << "the big job never started (seed " << seed << ")";
    EXPECT_LE(muster.started, muster.first_planned) << "seed " << seed;
    EXPECT_FALSE(muster.planned_start_grew) << "backfill delayed the reservation, seed " << seed;
    // The promise is bounded by the longest limit of the jobs in its way (4 h).
    EXPECT_LE(muster.first_planned - (Time::Zero() + Duration::Minutes(10)), Duration::Hours(4));

    const StreamResult greedy = RunStream("fifo-skip", seed);
    EXPECT_TRUE(greedy.started.is_max()) << "fifo-skip should starve the gang in this stream";
  }
}

TEST(Scheduler, StarvingJobGetsAReservationBeyondTheLimit) {
  ClusterState state;
  AddNodes(state, 1, 8, 0);
  SchedulerOptions o;
  o.max_reservations = 1;
  o.starvation_threshold = Duration::Hours(1);
  auto created = Scheduler::Create(o);
  ASSERT_TRUE(created.ok());
  std::unique_ptr<Scheduler> sched = std::move(created).value();
  ASSERT_TRUE(state.Submit(Gpus(1, 8, Duration::Hours(10)), Time::Zero()).ok());  // runs
  Apply(state, sched->Cycle(state.Snapshot(Time::Zero())), Time::Zero());
  // Job 2 (high) takes the one ordinary reservation; job 3 (low) has waited 2 h.
  ASSERT_TRUE(state.Submit(Gpus(1, 4, Duration::Hours(1), "low"), Time::Zero()).ok());
  const Time now = Time::Zero() + Duration::Hours(2);
  ASSERT_TRUE(state.Submit(Gpus(1, 8, Duration::Hours(1), "high"), now).ok());
  const core::Decisions d = sched->Cycle(state.Snapshot(now));
  ASSERT_EQ(d.reservations.size(), 2u);
  EXPECT_EQ(d.reservations[0].job, 3);  // high first
  EXPECT_EQ(d.reservations[1].job, 2);  // the starving low job too
}

TEST(Scheduler, SjfOrdersByKnownDuration) {
  ClusterState state;
  AddNodes(state, 1, 1, 0);
  for (int64_t minutes : {50, 10, 30}) {
    core::JobSpec s = Gpus(1, 1, Duration::Hours(2));
    s.known_duration = Duration::Minutes(minutes);
    ASSERT_TRUE(state.Submit(s, Time::Zero()).ok());
  }
  const core::Decisions d = Make("sjf")->Cycle(state.Snapshot(Time::Zero()));
  ASSERT_EQ(d.bindings.size(), 1u);
  EXPECT_EQ(d.bindings[0].job, 2);  // the 10-minute job
  EXPECT_TRUE(d.reservations.empty());
}

}  // namespace
}  // namespace muster::scheduler

namespace muster::scheduler {
namespace {

// Slurm's --array=...%2: at most two tasks of the array run at once, in
// this cycle and the next; other jobs are not held back by it.
TEST(Scheduler, AnArraysLimitBoundsItsTasksRunningAtOnce) {
  ClusterState state;
  testing::AddNodes(state, 4, 8, 0);
  std::vector<JobId> tasks;
  const JobId first = state.NextId();
  for (int i = 0; i < 4; ++i) {
    core::JobSpec spec = testing::Gpus(1, 1, Duration::Hours(1));
    spec.run_group = first;
    spec.run_group_limit = 2;
    auto id = state.Submit(spec, Time::Zero());
    ASSERT_TRUE(id.ok());
    tasks.push_back(*id);
  }
  auto other = state.Submit(testing::Gpus(1, 1, Duration::Hours(1)), Time::Zero());
  ASSERT_TRUE(other.ok());
  auto sched = Scheduler::Create(SchedulerOptions{});
  ASSERT_TRUE(sched.ok());
  for (int cycle = 0; cycle < 2; ++cycle) {
    const core::Decisions d = (*sched)->Cycle(state.Snapshot(Time::Zero()));
    std::set<JobId> started;
    for (const auto& b : d.bindings) started.insert(b.job);
    EXPECT_EQ(started.count(*other), cycle == 0 ? 1u : 0u);
    int limited = 0;
    for (const auto& r : d.reasons) {
      if (r.code == core::ReasonCode::kArrayTaskLimit) {
        ++limited;
        EXPECT_EQ(r.queue_limit, 2);
      }
    }
    EXPECT_EQ(limited, 2) << "cycle " << cycle;
    Apply(state, d, Time::Zero());
  }
  int running = 0;
  for (JobId t : tasks) running += state.Snapshot(Time::Zero()).running->count(t) > 0;
  EXPECT_EQ(running, 2);
}

}  // namespace
}  // namespace muster::scheduler

namespace muster::scheduler {
namespace {

// Slurm's --exclusive: a whole idle node each, and nothing else beside it.
TEST(Scheduler, AnExclusiveJobTakesWholeIdleNodes) {
  ClusterState state;
  testing::AddNodes(state, 3, 8, 0);
  auto small = state.Submit(testing::Gpus(1, 1, Duration::Hours(1)), Time::Zero());
  ASSERT_TRUE(small.ok());
  auto sched = Scheduler::Create(SchedulerOptions{});
  ASSERT_TRUE(sched.ok());
  Apply(state, (*sched)->Cycle(state.Snapshot(Time::Zero())), Time::Zero());
  core::JobSpec whole = testing::Gpus(2, 1, Duration::Hours(1));
  whole.exclusive = true;
  auto big = state.Submit(whole, Time::Zero());
  auto after = state.Submit(testing::Gpus(1, 1, Duration::Hours(1)), Time::Zero());
  ASSERT_TRUE(big.ok() && after.ok());
  const core::Decisions d = (*sched)->Cycle(state.Snapshot(Time::Zero()));
  Apply(state, d, Time::Zero());
  const auto& running = *state.Snapshot(Time::Zero()).running;
  ASSERT_TRUE(running.count(*big)) << "two of the three nodes are idle";
  std::set<NodeIndex> nodes;
  for (const auto& a : running.at(*big).allocations) {
    EXPECT_EQ(a.resources.gpus, 8) << "the whole node";
    nodes.insert(a.node);
  }
  EXPECT_EQ(nodes.size(), 2u);
  ASSERT_TRUE(running.count(*after));
  EXPECT_EQ(nodes.count(running.at(*after).allocations[0].node), 0u) << "nothing beside an exclusive job";
}

}  // namespace
}  // namespace muster::scheduler
