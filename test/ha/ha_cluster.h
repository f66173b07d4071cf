// A highly available cluster for tests and the failover benchmark: a real
// PostgreSQL (test/pg_instance.h), several real `muster server` processes
// on it, real agents with fake GPUs, and clients that submit with
// idempotency keys through every server's address.
//
// The invariants a failover must keep are checked from outside: from the
// database, and from what the jobs' own processes wrote (each appends its
// start and end, its node and GPUs, to a shared file).
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../agent/agent_process.h"
#include "../pg_instance.h"
#include "../server/server_process.h"
#include "http/failover_client.h"

namespace muster::testing {

using Steady = std::chrono::steady_clock;

class HaCluster {
 public:
  // Starts PostgreSQL (nullptr from Create, with the reason, when it cannot).
  static std::unique_ptr<HaCluster> Create(std::string* why) {
    auto c = std::unique_ptr<HaCluster>(new HaCluster());
    c->pg_ = PgInstance::Start(why);
    if (!c->pg_ || !c->pg_->CreateDatabase("muster")) return nullptr;
    c->work_ = ::testing::TempDir() + "/muster_ha_" + std::to_string(::getpid()) + "_" + std::to_string(Counter()++);
    std::filesystem::remove_all(c->work_);
    std::filesystem::create_directories(c->work_ + "/runs");
    ::chmod((c->work_ + "/runs").c_str(), 0777);
    return c;
  }
  ~HaCluster() {
    for (auto& a : agents_) a->Stop();
    for (auto& s : servers_) s->Kill();
    agents_.clear();  // their state directories are under work_
    if (!work_.empty()) std::filesystem::remove_all(work_);
  }

  PgInstance& pg() { return *pg_; }
  // From now on the database is `pg` (a promoted replica); the old one is
  // kept until the end.
  void UseDatabase(std::unique_ptr<PgInstance> pg) {
    retired_.push_back(std::move(pg_));
    pg_ = std::move(pg);
  }
  std::string store_url() const { return pg_->Url("muster"); }

  // Starts a server on `store` (default: the database), as the n-th; the
  // server becomes the leader if none leads.
  // The first writes the admin token (MUSTER_TOKEN) into the store; the
  // others share it.
  ServerProcess& AddServer(const std::string& store = "", const std::string& config = kConfig) {
    servers_.push_back(std::make_unique<ServerProcess>(config, store.empty() ? store_url() : store, servers_.empty()));
    EXPECT_TRUE(servers_.back()->Start()) << servers_.back()->log();
    return *servers_.back();
  }
  ServerProcess& server(size_t i) { return *servers_[i]; }
  size_t servers() const { return servers_.size(); }
  // Every server's address, comma-separated, in order.
  std::string Addresses() const {
    std::string out;
    for (const auto& s : servers_) out += (out.empty() ? "" : ",") + s->url();
    return out;
  }

  AgentProcess& AddAgent(const std::string& gpus = "4xH100") {
    const int i = static_cast<int>(agents_.size());
    agents_.push_back(std::make_unique<AgentProcess>(Addresses(),
                                                     "ha" + std::to_string(::getpid()) + "-" + std::to_string(i),
                                                     work_ + "/agent" + std::to_string(i)));
    agents_.back()->flags = {"--fake-gpus", gpus, "--stop-tasks-on-exit"};
    agents_.back()->Start();
    return *agents_.back();
  }

  // {"role": ..., "epoch": ...} of server i, or null when it does not answer.
  nlohmann::json Health(size_t i) {
    httplib::Client c(servers_[i]->url());
    c.set_connection_timeout(0, 300'000);
    c.set_read_timeout(1, 0);
    auto r = c.Get("/healthz");
    if (!r || r->status != 200) return nullptr;
    return nlohmann::json::parse(r->body, nullptr, false);
  }
  // The server that leads, waiting up to `seconds`; -1 if none.
  int WaitLeader(double seconds = 20, int other_than = -1) {
    const auto until = Steady::now() + std::chrono::duration<double>(seconds);
    while (Steady::now() < until) {
      for (size_t i = 0; i < servers_.size(); ++i) {
        if (static_cast<int>(i) == other_than || !servers_[i]->running()) continue;
        const nlohmann::json h = Health(i);
        if (h.is_object() && h.value("role", "") == "leader") return static_cast<int>(i);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  // A supervisor's work: a server that exited by itself is started again
  // (as a standby); returns the exit codes seen.
  std::vector<int> RestartExited() {
    std::vector<int> codes;
    for (auto& s : servers_) {
      if (const int code = s->Exited(); code >= 0) {
        codes.push_back(code);
        EXPECT_TRUE(s->Start()) << s->log();
      }
    }
    return codes;
  }

  // A job of `seconds` on one GPU whose process appends "ID ATTEMPT NODE
  // GPUS start|end NANOS" lines to the shared record.
  std::string JobYaml(const std::string& name, double seconds = 0.5) const {
    const std::string rec = work_ + "/runs/record";
    const std::string line = "$MUSTER_JOB_ID $MUSTER_ATTEMPT $MUSTER_NODE $CUDA_VISIBLE_DEVICES";
    return "name: " + name + "\nresources: {gpus: 1}\nretry: {limit: 0}\ncommand: [/bin/sh, -c, 'echo \"" + line +
           " start $(date +%s%N)\" >> " + rec + "; sleep " + std::to_string(seconds) + "; echo \"" + line +
           " end $(date +%s%N)\" >> " + rec + "']\n";
  }

  // One client: submits `count` jobs, each with its own idempotency key,
  // sending each again (same key) until it is acknowledged or `give_up`.
  struct Acked {
    std::string key;
    int64_t id = 0;
    Steady::time_point at;
  };
  void Client(int client, int count, std::chrono::milliseconds pace, Steady::time_point give_up) {
    http::FailoverClient c(Addresses());
    std::mt19937_64 rng(static_cast<uint64_t>(client) * 7919 + ::getpid());
    for (int i = 0; i < count; ++i) {
      const std::string key = "c" + std::to_string(client) + "-" + std::to_string(i) + "-" + std::to_string(rng());
      const std::string body = JobYaml("c" + std::to_string(client) + "-" + std::to_string(i));
      while (Steady::now() < give_up) {
        auto r = c.Post("/v1/jobs", body, "application/yaml",
                        {{"Authorization", AdminAuthorization()}, {"Idempotency-Key", key}});
        if (r.ok() && (r->status == 201 || r->status == 200)) {
          const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
          std::lock_guard<std::mutex> lock(mu_);
          acked_.push_back({key, j.value("id", int64_t{0}), Steady::now()});
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      std::this_thread::sleep_for(pace);
    }
  }
  // The admin token every ServerProcess wrote into the shared store.
  static std::string AdminAuthorization() {
    const char* t = std::getenv("MUSTER_TOKEN");
    return std::string("Bearer ") + (t ? t : "");
  }
  std::vector<Acked> acked() {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }

  // A GET through whichever server leads.
  nlohmann::json Get(const std::string& path) {
    http::FailoverClient c(Addresses());
    for (int i = 0; i < 100; ++i) {
      auto r = c.Get(path, {{"Authorization", AdminAuthorization()}});
      if (r.ok() && r->status == 200) return nlohmann::json::parse(r->body, nullptr, false);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return nullptr;
  }
  // Waits until no job is pending or running; false after `seconds`.
  bool WaitAllEnded(int seconds = 90) {
    for (int i = 0; i < seconds * 5; ++i) {
      const nlohmann::json page = Get("/v1/jobs?state=PENDING,RUNNING,COMPLETING&limit=1");
      if (page.is_object() && page["items"].empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  // ---- The invariants ----

  // Every acknowledged job is in the store once, under the id it was
  // acknowledged with, and no key made two jobs; every one completed.
  void ExpectAckedJobsOnce() {
    const auto rows = pg_->Sql(
        "SELECT status::json->>'idempotencyKey', count(*), min(id), min(state) FROM jobs GROUP BY 1", "muster");
    ASSERT_TRUE(rows.has_value());
    std::map<std::string, std::tuple<int, int64_t, std::string>> by_key;
    std::istringstream in(*rows);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> f;
      std::istringstream fs(line);
      for (std::string x; std::getline(fs, x, '|');) f.push_back(x);
      if (f.size() != 4 || f[0].empty()) continue;
      by_key[f[0]] = {std::stoi(f[1]), std::stoll(f[2]), f[3]};
      EXPECT_EQ(std::stoi(f[1]), 1) << "key " << f[0] << " made " << f[1] << " jobs";
    }
    const std::vector<Acked> acks = acked();
    for (const Acked& a : acks) {
      auto it = by_key.find(a.key);
      ASSERT_NE(it, by_key.end()) << "acknowledged job " << a.id << " (key " << a.key << ") is not in the store";
      EXPECT_EQ(std::get<1>(it->second), a.id) << "key " << a.key;
      EXPECT_EQ(std::get<2>(it->second), "COMPLETED") << "job " << a.id;
    }
  }
  // What the jobs' processes recorded: no two runs of one job at once, no
  // GPU of a node used by two jobs at once.
  // A run of a job as its process recorded it (end INT64_MAX while it runs).
  struct Run {
    int64_t job = 0;
    int64_t attempt = 0;
    std::string node, gpus;
    int64_t start = 0, end = INT64_MAX;  // ns since the Unix epoch
  };
  std::vector<Run> Runs() const {
    std::map<std::pair<int64_t, int64_t>, Run> runs;  // by job and attempt
    std::ifstream in(work_ + "/runs/record");
    for (std::string line; std::getline(in, line);) {
      std::istringstream ls(line);
      int64_t job = 0, attempt = 0, at = 0;
      std::string node, gpus, what;
      if (!(ls >> job >> attempt >> node >> gpus >> what >> at)) continue;
      Run& r = runs[{job, attempt}];
      r.job = job;
      r.attempt = attempt;
      r.node = node;
      r.gpus = gpus;
      (what == "start" ? r.start : r.end) = at;
    }
    std::vector<Run> all;
    for (auto& [_, r] : runs) all.push_back(r);
    return all;
  }
  void ExpectNoOverlaps() {
    const std::vector<Run> all = Runs();
    EXPECT_GE(all.size(), acked().size()) << "some acknowledged jobs never ran";
    for (size_t i = 0; i < all.size(); ++i) {
      for (size_t j = i + 1; j < all.size(); ++j) {
        const Run &a = all[i], &b = all[j];
        const bool overlap = a.start < b.end && b.start < a.end;
        if (!overlap) continue;
        EXPECT_NE(a.job, b.job) << "job " << a.job << " ran twice at once";
        if (a.node != b.node) continue;
        std::set<std::string> ga;
        std::istringstream sa(a.gpus), sb(b.gpus);
        for (std::string g; std::getline(sa, g, ',');) ga.insert(g);
        for (std::string g; std::getline(sb, g, ',');) {
          EXPECT_FALSE(ga.count(g)) << "GPU " << g << " of " << a.node << " used by jobs " << a.job << " and " << b.job
                                    << " at once";
        }
      }
    }
  }
  // No write of an epoch after a later epoch's first: the events, appended
  // in commit order, never go back to an older leader.
  void ExpectNoFencedWrite() {
    EXPECT_EQ(pg_->Sql("SELECT count(*) FROM (SELECT epoch, max(epoch) OVER (ORDER BY seq ROWS BETWEEN UNBOUNDED "
                       "PRECEDING AND 1 PRECEDING) AS before FROM events) e WHERE epoch < before",
                       "muster"),
              "0")
        << "an older leader wrote after a newer one";
  }
  void ExpectInvariants() {
    ExpectAckedJobsOnce();
    ExpectNoOverlaps();
    ExpectNoFencedWrite();
  }
  std::string Logs() {
    std::string out;
    for (auto& s : servers_) out += "--- server " + s->url() + "\n" + s->log();
    for (auto& a : agents_) out += "--- agent " + a->name() + "\n" + a->log();
    out += "--- events\n" +
           pg_->Sql(
                  "SELECT seq, job_id, time_ms % 1000000, type, reason, message, epoch FROM events "
                  "ORDER BY seq",
                  "muster")
               .value_or("(the database does not answer)") +
           "\n";
    return out;
  }

  static constexpr const char* kConfig = "rateLimit: {perSecond: 100000, burst: 100000}\nagents: {defaultGrace: 1s}\n";

 private:
  HaCluster() = default;
  static int& Counter() {
    static int n = 0;
    return n;
  }

  std::unique_ptr<PgInstance> pg_;
  std::vector<std::unique_ptr<PgInstance>> retired_;
  std::string work_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::vector<std::unique_ptr<AgentProcess>> agents_;
  std::mutex mu_;
  std::vector<Acked> acked_;  // guarded by mu_
};

}  // namespace muster::testing
