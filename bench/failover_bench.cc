// Failover time of the control plane with default settings, on real
// processes: a PostgreSQL, three `muster server`s, two agents with fake
// GPUs (test/ha/ha_cluster.h). Each round kills the leader with SIGKILL and
// measures, from the kill:
//   - submit: until a client (retrying every 50 ms through all three
//     addresses, one idempotency key) has a submit acknowledged by the new
//     leader;
//   - start: until that job's process has started on its node (its own
//     clock reading; the same machine's clock as the kill's).
// The killed server is started again, as a standby, before the next round.
// With --pause the leader is stopped with SIGSTOP instead (a stalled VM):
// its lease must run out before another leads; it is then resumed, exits
// (lost leadership) and is started again.
//
// With --fill N, N held jobs are stored first (arrays of 1,000), so that a
// takeover restores a store of that size.
//
//   build/bench/muster_bench_failover [--kills 20] [--pause] [--fill 100000]
// Prints each round and then p50 and max of both (docs/benchmarks.md).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "ha/ha_cluster.h"

namespace muster::testing {
namespace {

int g_kills = 20;
bool g_pause = false;  // --pause: SIGSTOP instead of SIGKILL (the lease must run out)
int g_fill = 0;        // --fill N: jobs stored (held) before the first kill

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The start time the job's process recorded, or 0 until it has.
int64_t RecordedStart(const HaCluster& cluster, int64_t job) {
  for (const HaCluster::Run& r : cluster.Runs()) {
    if (r.job == job && r.start > 0) return r.start;
  }
  return 0;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()))];
}

TEST(FailoverBench, KillTheLeader) {
  std::string why;
  auto cluster = HaCluster::Create(&why);
  ASSERT_NE(cluster, nullptr) << why;
  for (int i = 0; i < 3; ++i) cluster->AddServer("", "");  // the default settings
  ASSERT_GE(cluster->WaitLeader(), 0);
  cluster->AddAgent();
  cluster->AddAgent();
  if (g_fill > 0) {
    http::FailoverClient filler(cluster->Addresses());
    for (int done = 0; done < g_fill; done += 1000) {
      auto r = filler.Post("/v1/jobs", "name: stored\nhold: true\narray: 1000\ncommand: [\"true\"]\n",
                           "application/yaml", {{"Authorization", HaCluster::AdminAuthorization()}});
      ASSERT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
    }
    std::printf("stored %d held jobs\n", g_fill);
  }
  std::vector<double> submit_s, start_s;
  for (int round = 1; round <= g_kills; ++round) {
    const int leader = cluster->WaitLeader();
    ASSERT_GE(leader, 0);
    // Every server up (the last round's killed one a standby again) and the
    // agents synced with the leader: a steady cluster before each kill.
    for (size_t i = 0; i < cluster->servers(); ++i) {
      for (int t = 0; t < 200 && !cluster->Health(i).is_object(); ++t)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    http::FailoverClient client(cluster->Addresses());
    const std::string key = "failover-" + std::to_string(round) + "-" + std::to_string(::getpid());
    const int64_t killed = NowNanos();
    if (g_pause) {
      cluster->server(leader).Pause();
    } else {
      cluster->server(leader).Kill();
    }
    int64_t id = 0, accepted = 0;
    while (id == 0 && NowNanos() - killed < int64_t{60} * 1'000'000'000) {
      auto r = client.Post("/v1/jobs", cluster->JobYaml("failover-" + std::to_string(round), 0.1), "application/yaml",
                           {{"Authorization", HaCluster::AdminAuthorization()}, {"Idempotency-Key", key}});
      if (r.ok() && (r->status == 201 || r->status == 200)) {
        accepted = NowNanos();
        id = nlohmann::json::parse(r->body).value("id", int64_t{0});
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    ASSERT_GT(id, 0) << "no submit accepted within 60 s of the kill";
    int64_t started = 0;
    for (int t = 0; t < 3000 && started == 0; ++t) {
      started = RecordedStart(*cluster, id);
      if (started == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GT(started, 0) << "job " << id << " did not start within 30 s";
    submit_s.push_back((accepted - killed) / 1e9);
    start_s.push_back((started - killed) / 1e9);
    std::printf("round %d: %s server %d; submit accepted after %.3f s, job %lld started after %.3f s\n", round,
                g_pause ? "paused" : "killed", leader + 1, submit_s.back(), static_cast<long long>(id), start_s.back());
    std::fflush(stdout);
    if (g_pause) {
      cluster->server(leader).Resume();
      int code = -1;
      for (int t = 0; t < 1000 && code < 0; ++t) {
        code = cluster->server(leader).Exited();
        if (code < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      ASSERT_EQ(code, 75) << "the resumed leader did not step down";
    }
    ASSERT_TRUE(cluster->server(leader).Start());
  }
  std::printf("failover over %d %s: submit accepted p50 %.3f s, max %.3f s; job started p50 %.3f s, max %.3f s\n",
              g_kills, g_pause ? "pauses" : "kills", Percentile(submit_s, 50),
              *std::max_element(submit_s.begin(), submit_s.end()), Percentile(start_s, 50),
              *std::max_element(start_s.begin(), start_s.end()));
  cluster->ExpectInvariants();
}

}  // namespace
}  // namespace muster::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--kills") muster::testing::g_kills = std::max(1, std::atoi(argv[i + 1]));
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--pause") muster::testing::g_pause = true;
    if (std::string(argv[i]) == "--fill" && i + 1 < argc) muster::testing::g_fill = std::max(0, std::atoi(argv[i + 1]));
  }
  return RUN_ALL_TESTS();
}
