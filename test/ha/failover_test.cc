// Failover of the control plane on real processes: several servers on a
// real PostgreSQL, real agents, clients retrying with idempotency keys. Each
// test breaks the leader (or the database) one way, then checks from
// outside that every acknowledged job is there once, no job ran twice at
// once, no GPU was used twice at once, and no fenced leader wrote.
#include <gtest/gtest.h>

#include "../tcp_proxy.h"
#include "../wait_for.h"
#include "ha_cluster.h"

namespace muster::testing {
namespace {

class FailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    cluster_ = HaCluster::Create(&why);
    ASSERT_NE(cluster_, nullptr) << "PostgreSQL: " << why;
  }
  void TearDown() override {
    if ((HasFailure() || std::getenv("MUSTER_HA_LOGS")) && cluster_) std::cerr << cluster_->Logs();
  }
  // Clients submitting `per_client` jobs each, in the background.
  void StartClients(int clients, int per_client) {
    const auto give_up = Steady::now() + std::chrono::seconds(90);
    for (int i = 0; i < clients; ++i) {
      const int c = next_client_++;  // its own keys
      clients_.emplace_back(
          [this, c, per_client, give_up] { cluster_->Client(c, per_client, std::chrono::milliseconds(40), give_up); });
    }
  }
  void JoinClients() {
    for (auto& t : clients_) t.join();
    clients_.clear();
  }
  void Finish(size_t expected_jobs) {
    JoinClients();
    EXPECT_EQ(cluster_->acked().size(), expected_jobs) << "clients gave up on some submits";
    EXPECT_TRUE(cluster_->WaitAllEnded()) << "jobs did not all end";
    cluster_->ExpectInvariants();
  }

  std::unique_ptr<HaCluster> cluster_;
  std::vector<std::thread> clients_;
  int next_client_ = 0;
};

TEST_F(FailoverTest, TheLeaderKilledDuringASubmitBurst) {
  for (int i = 0; i < 3; ++i) cluster_->AddServer();
  const int leader = cluster_->WaitLeader();
  ASSERT_GE(leader, 0);
  cluster_->AddAgent();
  cluster_->AddAgent();
  StartClients(4, 15);
  // Mid-burst: some submits acknowledged, more to come.
  ASSERT_TRUE(WaitFor([&] { return cluster_->acked().size() >= 10u; }));
  cluster_->server(leader).Kill();
  const int next = cluster_->WaitLeader(20, leader);
  ASSERT_GE(next, 0) << "no standby took over";
  ASSERT_TRUE(cluster_->server(leader).Start());  // back, as a standby
  Finish(60);
  // It took over from the rows it followed as a standby, not a reload.
  EXPECT_NE(cluster_->server(next).log().find("jobs followed as a standby"), std::string::npos)
      << cluster_->server(next).log();
  EXPECT_EQ(cluster_->Health(leader).value("role", ""), "standby");
}

// A leader paused past its lease (a stalled VM, a long GC): a standby takes
// over; the old one, resumed, writes nothing and steps down.
TEST_F(FailoverTest, ThePausedLeaderStepsDownWithoutWriting) {
  cluster_->AddServer();
  cluster_->AddServer();
  const int old_leader = cluster_->WaitLeader();
  ASSERT_GE(old_leader, 0);
  cluster_->AddAgent();
  StartClients(2, 5);
  JoinClients();
  const int64_t old_epoch = cluster_->Health(old_leader).value("epoch", int64_t{0});
  cluster_->server(old_leader).Pause();
  const int new_leader = cluster_->WaitLeader(30, old_leader);
  ASSERT_GE(new_leader, 0) << "no standby took over from the paused leader";
  const int64_t new_epoch = cluster_->Health(new_leader).value("epoch", int64_t{0});
  EXPECT_GT(new_epoch, old_epoch);
  StartClients(2, 5);
  JoinClients();
  cluster_->server(old_leader).Resume();
  int code = -1;
  WaitFor([&] { return (code = cluster_->server(old_leader).Exited()) >= 0; }, std::chrono::seconds(10));
  EXPECT_EQ(code, 75) << "the resumed leader did not step down";
  EXPECT_NE(cluster_->server(old_leader).log().find("lost leadership"), std::string::npos);
  // Nothing of the old epoch after the new one's first write.
  EXPECT_EQ(
      cluster_->pg().Sql("SELECT count(*) FROM events WHERE epoch = " + std::to_string(old_epoch) +
                             " AND seq > (SELECT min(seq) FROM events WHERE epoch = " + std::to_string(new_epoch) + ")",
                         "muster"),
      "0");
  Finish(20);
}

// The leader loses the database (its connection goes silent) while agents
// and clients still reach it: it stops answering as leader before its lease
// runs out, a standby takes over, and the old one exits.
TEST_F(FailoverTest, TheLeaderCutOffFromTheDatabase) {
  TcpProxy proxy(cluster_->pg().port());
  std::string via = cluster_->store_url();
  const std::string port = ":" + std::to_string(cluster_->pg().port()) + "/";
  via.replace(via.find(port), port.size(), ":" + std::to_string(proxy.port()) + "/");
  cluster_->AddServer(via);
  ASSERT_EQ(cluster_->WaitLeader(), 0);
  cluster_->AddServer();
  cluster_->AddAgent();
  StartClients(2, 5);
  JoinClients();
  proxy.Freeze();
  StartClients(2, 10);
  const int next = cluster_->WaitLeader(30, 0);
  ASSERT_EQ(next, 1) << "the standby did not take over";
  int code = -1;
  WaitFor([&] { return (code = cluster_->server(0).Exited()) >= 0; }, std::chrono::seconds(20));
  EXPECT_EQ(code, 75) << "the cut-off leader did not step down";
  proxy.Thaw();
  Finish(30);
}

// The database's primary is lost and its streaming replica promoted: the
// servers find the new primary through their multi-host connection string
// and go on. Synchronous replication: no acknowledged commit is lost.
TEST_F(FailoverTest, TheDatabaseFailsOverToItsReplica) {
  std::string why;
  auto replica = cluster_->pg().StartReplica(&why);
  ASSERT_NE(replica, nullptr) << why;
  ASSERT_TRUE(cluster_->pg().Sql("ALTER SYSTEM SET synchronous_standby_names = 'replica'"));
  ASSERT_TRUE(cluster_->pg().Sql("SELECT pg_reload_conf()"));
  WaitFor(
      [&] { return cluster_->pg().Sql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == "1"; },
      std::chrono::seconds(10), std::chrono::milliseconds(50));
  ASSERT_EQ(cluster_->pg().Sql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"), "1");
  const std::string both = "postgresql://muster@127.0.0.1:" + std::to_string(cluster_->pg().port()) +
                           ",127.0.0.1:" + std::to_string(replica->port()) + "/muster?target_session_attrs=read-write";
  cluster_->AddServer(both);
  cluster_->AddServer(both);
  ASSERT_GE(cluster_->WaitLeader(), 0);
  cluster_->AddAgent();
  StartClients(3, 10);
  // Mid-burst: some submits acknowledged, more to come.
  ASSERT_TRUE(WaitFor([&] { return cluster_->acked().size() >= 6u; }));
  cluster_->pg().Kill();
  ASSERT_TRUE(replica->Promote());
  // A leader may ride it out (its commits are retried on the new primary)
  // or lose its lease meanwhile and exit for a supervisor to restart.
  for (int i = 0; i < 100; ++i) {
    for (const int code : cluster_->RestartExited()) EXPECT_EQ(code, 75);
    if (cluster_->WaitLeader(0.2) >= 0) break;
  }
  ASSERT_GE(cluster_->WaitLeader(30), 0) << "no leader after the database failed over";
  JoinClients();
  for (const int code : cluster_->RestartExited()) EXPECT_EQ(code, 75);
  EXPECT_TRUE(cluster_->WaitAllEnded());
  // Checked on the new primary.
  cluster_->UseDatabase(std::move(replica));
  EXPECT_EQ(cluster_->acked().size(), 30u);
  cluster_->ExpectInvariants();
}

// A queue an admin made through the API is in the shared store: the
// standby that takes over from the killed leader has it in force.
TEST_F(FailoverTest, AQueueMadeThroughTheApiOutlivesTheLeader) {
  cluster_->AddServer();
  cluster_->AddServer();
  const int old_leader = cluster_->WaitLeader();
  ASSERT_GE(old_leader, 0);
  const httplib::Headers admin = {{"Authorization", "Bearer " + cluster_->server(0).admin_token()}};
  httplib::Client leader(cluster_->server(old_leader).url());
  auto r =
      leader.Post("/v1/queues", admin, R"({"name": "vision", "limit": {"H100": 4}, "share": 2})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  cluster_->server(old_leader).Kill();
  const int new_leader = cluster_->WaitLeader(30, old_leader);
  ASSERT_GE(new_leader, 0) << "no standby took over";
  httplib::Client next(cluster_->server(new_leader).url());
  r = next.Get("/v1/queues", admin);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const nlohmann::json all = nlohmann::json::parse(r->body);
  nlohmann::json vision;
  for (const nlohmann::json& q : all["items"]) {
    if (q["name"] == "vision") vision = q;
  }
  EXPECT_EQ(vision.value("source", ""), "api") << r->body;
  EXPECT_EQ(vision["limit"], nlohmann::json({{"H100", 4}})) << r->body;
  EXPECT_EQ(vision["share"], 2) << r->body;
}

// A token written into the shared store by another process (an admin's
// `muster token create --store` on a host of their own) is honoured by the
// running leader without a restart.
TEST_F(FailoverTest, ATokenWrittenIntoTheStoreIsHonouredWhileTheLeaderRuns) {
  ServerProcess& server = cluster_->AddServer();
  ASSERT_EQ(cluster_->WaitLeader(), 0);
  const std::string token = TokenInStore(cluster_->store_url(), "zed");
  ASSERT_FALSE(token.empty());
  const std::string whoami =
      "MUSTER_TOKEN=" + token + " " + std::string(MUSTER_BINARY) + " whoami --server " + server.url();
  CommandResult r;  // honoured within a refresh (5 s)
  WaitFor([&] { return (r = RunCommand(whoami)).code == 0; }, std::chrono::seconds(20), std::chrono::milliseconds(200));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("zed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace muster::testing
