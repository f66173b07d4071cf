// The PostgreSQL store against a real PostgreSQL server (test/pg_instance.h):
// the conformance suite, migrations, fencing and the leader lease.
#include "store/pg/pg_store.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "pg_instance.h"
#include "store/conformance_test.h"
#include "store/open_store.h"
#include "store/pg/pg_lease.h"
#include "tcp_proxy.h"
#include "wait_for.h"

namespace muster::store {
namespace {

using muster::testing::WaitFor;

using muster::testing::PgInstance;
using muster::testing::TcpProxy;

// One server for the whole test process; each test its own database.
PgInstance& Server() {
  static std::unique_ptr<PgInstance> pg = [] {
    std::string why;
    auto started = PgInstance::Start(&why);
    if (!started) {
      std::fprintf(stderr, "cannot start PostgreSQL for the tests: %s\n", why.c_str());
      std::abort();
    }
    return started;
  }();
  return *pg;
}

// A database named after `key` (created the first time), its URL.
std::string Database(const std::string& key) {
  const std::string name = "t" + std::to_string(std::hash<std::string>{}(key) % 1000000007);
  Server().Sql("CREATE DATABASE " + name);  // fails harmlessly when it exists
  return Server().Url(name);
}

StatusOr<std::unique_ptr<Store>> OpenPostgres(const std::string& dir) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgStore> s, PgStore::Open(Database(dir)));
  return std::unique_ptr<Store>(std::move(s));
}

INSTANTIATE_TEST_SUITE_P(Postgres, StoreConformance, ::testing::Values(StoreBackend{"postgres", &OpenPostgres}),
                         [](const auto& p) { return p.param.name; });

std::string FreshDatabase() {
  static int n = 0;
  return Database(std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + std::to_string(n++));
}

TEST(PgStore, OpensByUrlAndMigratesOnce) {
  const std::string url = FreshDatabase();
  auto first = OpenStore(url);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_NE(first->lease, nullptr);
  EXPECT_NE(first->description.find("127.0.0.1:" + std::to_string(Server().port())), std::string::npos)
      << first->description;
  // A second server on the same database finds it migrated.
  auto second = OpenStore(url);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const std::string db = url.substr(url.rfind('/') + 1);
  EXPECT_EQ(Server().Sql("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations", db),
            "1,2,3,4");
  // The key=value form, behind "postgres:".
  auto kv = OpenStore("postgres:host=127.0.0.1 port=" + std::to_string(Server().port()) + " user=muster dbname=" + db);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
}

TEST(PgStore, ServersStartingTogetherMigrateOnce) {
  const std::string url = FreshDatabase();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (PgStore::Open(url).ok()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
}

TEST(PgStore, RefusesANewerSchemaAndAForeignDatabase) {
  const std::string url = FreshDatabase();
  const std::string db = url.substr(url.rfind('/') + 1);
  ASSERT_TRUE(PgStore::Open(url).ok());
  ASSERT_TRUE(Server().Sql("INSERT INTO schema_migrations VALUES (99)", db));
  auto newer = PgStore::Open(url);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(newer.status().message().find("schema version 99"), std::string::npos) << newer.status().ToString();

  const std::string foreign = FreshDatabase();
  const std::string fdb = foreign.substr(foreign.rfind('/') + 1);
  ASSERT_TRUE(Server().Sql("CREATE TABLE invoices (id INT)", fdb));
  auto refused = PgStore::Open(foreign);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not a Muster store (its tables: invoices)"), std::string::npos)
      << refused.status().ToString();
}

TEST(PgStore, AnUnreachableServerIsUnavailableWithoutThePassword) {
  auto s = OpenStore("postgresql://muster:s3cret@127.0.0.1:1/muster?connect_timeout=2");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("127.0.0.1:1/muster"), std::string::npos) << s.status().ToString();
  EXPECT_EQ(s.status().message().find("s3cret"), std::string::npos) << s.status().ToString();
}

// Later rows of one key win inside a group commit, as when its batches are
// applied one by one, and a reason after a row changes that row.
TEST(PgStore, AGroupCommitAppliesItsBatchesInOrder) {
  auto s = PgStore::Open(FreshDatabase());
  ASSERT_TRUE(s.ok());
  WriteBatch a, b, c;
  a.jobs.push_back(TestJob(1));
  a.reasons.emplace_back(1, "Priority");
  b.jobs.push_back(TestJob(2));
  JobRow running = TestJob(1);
  running.state = "RUNNING";
  b.jobs.push_back(running);
  b.reasons.emplace_back(1, "Started");
  c.reasons.emplace_back(2, "Resources");
  a.nodes.push_back({"n1", "{}", "READY", 1});
  b.removed_nodes.push_back("n1");
  c.nodes.push_back({"n2", "{}", "READY", 2});
  ASSERT_TRUE((*s)->Commit({&a, &b, &c}).ok());
  auto one = (*s)->GetJob(1);
  EXPECT_EQ((*one)->state, "RUNNING");
  EXPECT_EQ((*one)->reason, "Started");
  EXPECT_EQ((*(*s)->GetJob(2))->reason, "Resources");
  auto nodes = (*s)->ListNodes();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].name, "n2");
}

// The change feed a standby follows: every row once, then only the rows
// changed since, in the order they changed, in pages.
TEST(PgStore, JobsChangedSinceFollowsEveryChange) {
  auto s = PgStore::Open(FreshDatabase());
  ASSERT_TRUE(s.ok());
  WriteBatch b;
  for (int64_t id = 1; id <= 5; ++id) b.jobs.push_back(TestJob(id));
  ASSERT_TRUE((*s)->Commit({&b}).ok());
  auto all = (*s)->JobsChangedSince(0, 3);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->rows.size(), 3u);
  auto rest = (*s)->JobsChangedSince(all->rev, 3);
  ASSERT_EQ(rest->rows.size(), 2u);
  EXPECT_TRUE((*s)->JobsChangedSince(rest->rev, 3)->rows.empty());
  WriteBatch c, d;
  JobRow running = TestJob(4);
  running.state = "RUNNING";
  c.jobs.push_back(running);
  d.reasons.emplace_back(2, "Priority");
  ASSERT_TRUE((*s)->Commit({&c}).ok());
  ASSERT_TRUE((*s)->Commit({&d}).ok());
  auto changed = (*s)->JobsChangedSince(rest->rev, 10);
  ASSERT_EQ(changed->rows.size(), 2u);
  EXPECT_EQ(changed->rows[0].id, 4);
  EXPECT_EQ(changed->rows[0].state, "RUNNING");
  EXPECT_EQ(changed->rows[1].id, 2);
  EXPECT_EQ(changed->rows[1].reason, "Priority");
}

TEST(PgLease, OneHolderAtATimeAndItsSessionEndingFreesIt) {
  const std::string url = FreshDatabase();
  ASSERT_TRUE(PgStore::Open(url).ok());
  auto a = PgLease::Open(url);
  auto b = PgLease::Open(url);
  ASSERT_TRUE(a.ok() && b.ok());
  auto ea = (*a)->TryAcquire("a", "http://a", Duration::Seconds(30));
  ASSERT_TRUE(ea.ok()) << ea.status().ToString();
  ASSERT_TRUE(ea->has_value());
  EXPECT_EQ(**ea, 1);
  auto eb = (*b)->TryAcquire("b", "http://b", Duration::Seconds(30));
  ASSERT_TRUE(eb.ok());
  EXPECT_FALSE(eb->has_value()) << "two holders at once";
  auto who = (*b)->Current();
  ASSERT_TRUE(who.ok());
  EXPECT_TRUE(who->valid);
  EXPECT_EQ(who->id, "a");
  EXPECT_EQ(who->address, "http://a");
  EXPECT_GT(who->remaining.millis(), 20'000);
  EXPECT_TRUE((*a)->Renew(1, Duration::Seconds(30)).ok());
  // The holder's session ends (its server died): the lease is void at once,
  // long before it would expire.
  a->reset();
  WaitFor([&] { return !(*b)->Current()->valid; }, std::chrono::seconds(2));
  eb = (*b)->TryAcquire("b", "http://b", Duration::Seconds(30));
  ASSERT_TRUE(eb.ok() && eb->has_value());
  EXPECT_EQ(**eb, 2);
  // Given up at a clean stop: the next takes it at once.
  ASSERT_TRUE((*b)->Release(2).ok());
  auto c = PgLease::Open(url);
  auto ec = (*c)->TryAcquire("c", "http://c", Duration::Seconds(30));
  ASSERT_TRUE(ec.ok() && ec->has_value());
  EXPECT_EQ(**ec, 3);
  const Status stale = (*b)->Renew(2, Duration::Seconds(30));
  EXPECT_TRUE(IsFenced(stale)) << stale.ToString();
}

TEST(PgLease, AnExpiredLeaseIsTakenWhileItsHolderStillRuns) {
  const std::string url = FreshDatabase();
  ASSERT_TRUE(PgStore::Open(url).ok());
  auto a = PgLease::Open(url);
  auto b = PgLease::Open(url);
  ASSERT_TRUE((*a)->TryAcquire("a", "", Duration::Millis(300))->has_value());
  EXPECT_FALSE((*b)->TryAcquire("b", "", Duration::Millis(300))->has_value());
  // a is paused past its lease: b takes it once it expires.
  StatusOr<std::optional<int64_t>> eb = std::optional<int64_t>();
  WaitFor([&] { return (eb = (*b)->TryAcquire("b", "", Duration::Seconds(30))).ok() && eb->has_value(); },
          std::chrono::seconds(5), std::chrono::milliseconds(50));
  ASSERT_TRUE(eb.ok() && eb->has_value());
  EXPECT_EQ(**eb, 2);
  EXPECT_TRUE(IsFenced((*a)->Renew(1, Duration::Seconds(30))));
}

// The write of a leader whose lease was taken is refused by the database,
// whole, and the new leader's writes go on.
TEST(PgStore, AFencedLeaderCannotWrite) {
  const std::string url = FreshDatabase();
  auto old_store = PgStore::Open(url);
  auto new_store = PgStore::Open(url);
  ASSERT_TRUE(old_store.ok() && new_store.ok());
  auto a = PgLease::Open(url);
  auto b = PgLease::Open(url);
  const int64_t old_epoch = **(*a)->TryAcquire("a", "", Duration::Millis(200));
  (*old_store)->FenceWrites(old_epoch);
  WriteBatch before;
  before.jobs.push_back(TestJob(1));
  before.events.push_back({0, 1, 1, "Submitted", "", ""});
  ASSERT_TRUE((*old_store)->Commit({&before}).ok());

  StatusOr<std::optional<int64_t>> taken = std::optional<int64_t>();
  ASSERT_TRUE(
      WaitFor([&] { return (taken = (*b)->TryAcquire("b", "", Duration::Seconds(30))).ok() && taken->has_value(); },
              std::chrono::seconds(5), std::chrono::milliseconds(50)));
  const int64_t new_epoch = **taken;
  (*new_store)->FenceWrites(new_epoch);

  WriteBatch late;
  JobRow changed = TestJob(1);
  changed.state = "CANCELLED";
  late.jobs.push_back(changed);
  late.jobs.push_back(TestJob(2));
  late.events.push_back({0, 1, 2, "Cancelled", "", "by a paused leader"});
  const Status refused = (*old_store)->Commit({&late});
  EXPECT_TRUE(IsFenced(refused)) << refused.ToString();
  EXPECT_NE(refused.message().find("epoch " + std::to_string(new_epoch) + " holds the lease"), std::string::npos)
      << refused.ToString();
  EXPECT_EQ((*(*new_store)->GetJob(1))->state, "PENDING");
  EXPECT_FALSE((*new_store)->GetJob(2)->has_value());
  EXPECT_EQ((*new_store)->ListEvents(1, 0, 10)->size(), 1u);

  WriteBatch next;
  next.jobs.push_back(TestJob(3));
  next.events.push_back({0, 3, 3, "Submitted", "", ""});
  ASSERT_TRUE((*new_store)->Commit({&next}).ok());
  // Every row says which epoch wrote it.
  const std::string db = url.substr(url.rfind('/') + 1);
  EXPECT_EQ(Server().Sql("SELECT string_agg(id || ':' || epoch, ',' ORDER BY id) FROM jobs", db),
            "1:" + std::to_string(old_epoch) + ",3:" + std::to_string(new_epoch));
  EXPECT_EQ(Server().Sql("SELECT string_agg(epoch::text, ',' ORDER BY seq) FROM events", db),
            std::to_string(old_epoch) + "," + std::to_string(new_epoch));
}

// A commit of a leader's that is in flight when another server takes over
// either lands before the takeover or is refused: never after it.
TEST(PgStore, ATakeoverWaitsForACommitInFlight) {
  const std::string url = FreshDatabase();
  auto store = PgStore::Open(url);
  auto a = PgLease::Open(url);
  auto b = PgLease::Open(url);
  const int64_t epoch = **(*a)->TryAcquire("a", "", Duration::Millis(100));
  (*store)->FenceWrites(epoch);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // expired, not yet taken
  const std::string db = url.substr(url.rfind('/') + 1);
  // Hold the fence's row lock the way a commit in flight does; the takeover
  // starts once the holder's transaction is past the fence (in its sleep),
  // however slowly psql got there on a loaded machine.
  std::atomic<bool> taken{false};
  std::thread holder([&] {
    Server().Sql("BEGIN; SELECT muster_fence(" + std::to_string(epoch) + "); SELECT pg_sleep(1); COMMIT;", db);
  });
  WaitFor(
      [&] {
        const auto sleeping = Server().Sql(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(1)%' AND pid <> pg_backend_pid()", db);
        return sleeping && *sleeping != "0";
      },
      std::chrono::seconds(5));
  // (The lease's statements give up after 2 s: the holder's second is within it.)
  std::thread taker([&] {
    auto r = (*b)->TryAcquire("b", "", Duration::Seconds(30));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    taken = r.ok() && r->has_value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(taken.load()) << "a takeover went past a commit in flight";
  holder.join();
  taker.join();
  EXPECT_TRUE(taken.load());
}

// The same database through a proxy that can cut the connection.
std::string Through(const TcpProxy& proxy, const std::string& url) {
  const std::string port = ":" + std::to_string(Server().port()) + "/";
  std::string via = url;
  via.replace(via.find(port), port.size(), ":" + std::to_string(proxy.port()) + "/");
  return via;
}

// The connection breaks after the commit reached the database and before
// its answer came back: the store reconnects, finds the commit done (its
// writer_progress row) and does not apply it twice.
TEST(PgStore, ACommitWhoseAnswerWasLostIsNotAppliedTwice) {
  const std::string url = FreshDatabase();
  TcpProxy proxy(Server().port());
  auto s = PgStore::Open(Through(proxy, url));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  WriteBatch first;
  first.jobs.push_back(TestJob(1));
  ASSERT_TRUE((*s)->Commit({&first}).ok());

  proxy.FreezeAnswers();
  Status committed = Internal("not yet");
  std::thread commit([&] {
    WriteBatch b;
    b.jobs.push_back(TestJob(2));
    b.events.push_back({0, 2, 5, "Submitted", "", ""});
    b.idempotency.push_back({"alice", "k2", "fp", 2, 5});
    committed = (*s)->Commit({&b});
  });
  const std::string db = url.substr(url.rfind('/') + 1);
  WaitFor([&] { return Server().Sql("SELECT count(*) FROM jobs WHERE id = 2", db) == "1"; }, std::chrono::seconds(2));
  ASSERT_EQ(Server().Sql("SELECT count(*) FROM jobs WHERE id = 2", db), "1") << "the commit never reached the database";
  proxy.Cut();
  proxy.Thaw();
  commit.join();
  EXPECT_TRUE(committed.ok()) << committed.ToString();
  EXPECT_EQ((*s)->ListEvents(2, 0, 10)->size(), 1u);
  // And the store goes on.
  WriteBatch third;
  third.jobs.push_back(TestJob(3));
  EXPECT_TRUE((*s)->Commit({&third}).ok());
  EXPECT_EQ(*(*s)->CountJobs(), 3);
}

// A connection the database ended (a restart, an administrator, a failover)
// costs a commit nothing: it is sent again on a new one.
TEST(PgStore, ACommitOutlivesItsConnection) {
  const std::string url = FreshDatabase();
  const std::string db = url.substr(url.rfind('/') + 1);
  auto s = PgStore::Open(url);
  ASSERT_TRUE(s.ok());
  WriteBatch first;
  first.jobs.push_back(TestJob(1));
  ASSERT_TRUE((*s)->Commit({&first}).ok());
  ASSERT_TRUE(Server().Sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" + db +
                           "' AND pid <> pg_backend_pid()"));
  WriteBatch second;
  second.jobs.push_back(TestJob(2));
  const Status st = (*s)->Commit({&second});
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(*(*s)->CountJobs(), 2);
}

// A database that went silent (a partition: the connection stays open, no
// answer comes) does not hold a lease renewal beyond its bound.
TEST(PgLease, ASilentDatabaseFailsARenewalInTime) {
  const std::string url = FreshDatabase();
  ASSERT_TRUE(PgStore::Open(url).ok());
  TcpProxy proxy(Server().port());
  auto lease = PgLease::Open(Through(proxy, url));
  ASSERT_TRUE(lease.ok());
  const int64_t epoch = **(*lease)->TryAcquire("a", "", Duration::Seconds(6));
  proxy.Freeze();
  const auto began = std::chrono::steady_clock::now();
  const Status s = (*lease)->Renew(epoch, Duration::Seconds(6));
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_LT(took, std::chrono::seconds(5));
  proxy.Thaw();
  EXPECT_TRUE((*lease)->Renew(epoch, Duration::Seconds(6)).ok());
}

}  // namespace
}  // namespace muster::store
