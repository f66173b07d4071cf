#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/conformance_test.h"
#include "store/open_store.h"

namespace muster::store {
namespace {

StatusOr<std::unique_ptr<Store>> OpenSqlite(const std::string& dir) {
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> s, SqliteStore::Open(dir + "/muster.db"));
  return std::unique_ptr<Store>(std::move(s));
}

INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance, ::testing::Values(StoreBackend{"sqlite", &OpenSqlite}),
                         [](const auto& p) { return p.param.name; });

std::string TempPath(const std::string& name) {
  const std::string p = ::testing::TempDir() + "/" + name + std::to_string(::getpid());
  std::filesystem::remove(p);
  std::filesystem::remove(p + "-wal");
  std::filesystem::remove(p + "-shm");
  std::filesystem::remove(p + "-hwm");
  return p;
}

Status CommitJobs(Store& s, int64_t first, int64_t last) {
  WriteBatch b;
  for (int64_t id = first; id <= last; ++id) b.jobs.push_back(TestJob(id));
  return s.Commit({&b});
}

// Deleting the -wal of a store whose server was killed lost the jobs
// committed since the last checkpoint, silently, and the server handed
// their ids out again. The store now refuses to open, naming both files.
TEST(SqliteStore, AStoreThatLostAcknowledgedJobsIsRefused) {
  const std::string path = TempPath("lost"), copy = TempPath("lostcopy");
  namespace fs = std::filesystem;
  {
    auto s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE(CommitJobs(**s, 1, 2).ok());
  }  // closed: jobs 1 and 2 are checkpointed into the file
  auto s = SqliteStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(CommitJobs(**s, 3, 5).ok());  // in the -wal only
  // The files as a kill -9 leaves them, then the -wal "cleaned up".
  fs::copy_file(path, copy);
  fs::copy_file(path + "-hwm", copy + "-hwm");
  auto lost = SqliteStore::Open(copy);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(
      lost.status().message().find("store " + copy + " holds jobs up to 2, but job 5 was acknowledged (recorded in " +
                                   copy + "-hwm): its write-ahead log " + copy + "-wal is missing"),
      std::string::npos)
      << lost.status().ToString();
  // With its -wal it opens whole.
  fs::remove(copy + "-shm");
  fs::copy_file(path + "-wal", copy + "-wal");
  auto whole = SqliteStore::Open(copy);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(*(*whole)->MaxJobId(), 5);
  whole->reset();
  // Removing the record accepts the loss, as the message says.
  for (const char* f : {"", "-wal", "-shm"}) fs::remove(copy + f);
  fs::copy_file(path, copy);
  fs::remove(copy + "-hwm");
  auto accepted = SqliteStore::Open(copy);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_EQ(*(*accepted)->MaxJobId(), 2);
  accepted->reset();
  // A store file deleted outright, next to its record, is refused too.
  for (const char* f : {"", "-wal", "-shm"}) fs::remove(copy + f);
  fs::copy_file(path + "-hwm", copy + "-hwm", fs::copy_options::overwrite_existing);
  EXPECT_EQ(SqliteStore::Open(copy).status().code(), StatusCode::kDataLoss);
  // A record zeroed by a crash of the machine counts as none.
  std::ofstream(copy + "-hwm", std::ios::trunc) << std::string(21, '\0');
  EXPECT_TRUE(SqliteStore::Open(copy).ok());
}

TEST(SqliteStore, ForeignFileIsDataLossNamingTheFile) {
  const std::string path = TempPath("not_a_db");
  std::ofstream(path) << "this is not a database, it is a text file that someone put here\n";
  auto s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss) << s.status().ToString();
  EXPECT_NE(s.status().message().find(path), std::string::npos) << s.status().ToString();
}

TEST(SqliteStore, DamagedFileIsDataLoss) {
  const std::string path = TempPath("damaged");
  {
    auto s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok());
    WriteBatch b;
    for (int64_t id = 1; id <= 2000; ++id) {
      JobRow j;
      j.id = id;
      j.name = "job";
      j.state = "PENDING";
      j.spec_json = std::string(200, 'x');
      b.jobs.push_back(j);
    }
    ASSERT_TRUE((*s)->Commit({&b}).ok());
  }
  // Checkpointed into the main file on close; now overwrite pages in the middle.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8192);
    const std::string junk(16384, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok()) << "a damaged store must not open";
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss) << s.status().ToString();
  EXPECT_NE(s.status().message().find(path), std::string::npos);
}

TEST(SqliteStore, OneProcessAtATime) {
  const std::string path = TempPath("locked");
  auto first = SqliteStore::Open(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = SqliteStore::Open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.status().message(), "store " + path + " is in use by another process (pid " +
                                           std::to_string(::getpid()) + "): one muster server at a time on a store");
  first->reset();
  EXPECT_TRUE(SqliteStore::Open(path).ok());
}

TEST(SqliteStore, AnotherProgramsDatabaseIsRefusedAndLeftAlone) {
  const std::string path = TempPath("foreign");
  {
    auto db = Db::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("CREATE TABLE photos (id INTEGER PRIMARY KEY); CREATE TABLE albums (id INTEGER)").ok());
  }
  auto s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("store " + path + " is not a Muster store (its tables: albums, photos)"),
            std::string::npos)
      << s.status().ToString();
  auto db = Db::Open(path);
  auto q = db->Prepare("SELECT COUNT(*) FROM sqlite_master");
  ASSERT_TRUE(q.ok() && *q->Step());
  EXPECT_EQ(q->Int(0), 2) << "nothing may be added to another program's file";
}

TEST(SqliteStore, AnEmptyFileIsDataLoss) {
  const std::string path = TempPath("empty");
  std::ofstream(path).flush();
  auto s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find("store " + path + " is an empty file"), std::string::npos)
      << s.status().ToString();
}

TEST(SqliteStore, NewerSchemaIsRefused) {
  const std::string path = TempPath("newer");
  {
    auto s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok());
  }
  {
    auto db = Db::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO schema_migrations(version) VALUES (999)").ok());
  }
  auto s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("schema version 999"), std::string::npos) << s.status().ToString();
}

TEST(SqliteStore, MigrationsAreIdempotent) {
  const std::string path = TempPath("migrate");
  for (int i = 0; i < 3; ++i) {
    auto s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  auto db = Db::Open(path);
  auto q = db->Prepare("SELECT COUNT(*), MAX(version) FROM schema_migrations");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(*q->Step());
  EXPECT_EQ(q->Int(0), SqliteStore::LatestSchemaVersion());
  EXPECT_EQ(q->Int(1), SqliteStore::LatestSchemaVersion());
}

// --store takes a file, sqlite:FILE or sqlite://FILE, all one backend
// without an election; an empty name is refused by name.
TEST(OpenStore, SqliteByPathOrUrl) {
  const std::string path = TempPath("byurl");
  for (const std::string& url : {path, "sqlite:" + path, "sqlite://" + path}) {
    auto s = OpenStore(url);
    ASSERT_TRUE(s.ok()) << url << ": " << s.status().ToString();
    EXPECT_EQ(s->lease, nullptr);
    EXPECT_EQ(s->description, path);
    ASSERT_TRUE(CommitJobs(*s->store, 1, 1).ok());
  }
  auto reopened = SqliteStore::Open(path);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->CountJobs(), 1);
  auto empty = OpenStore("sqlite:");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().field(), "store");
  EXPECT_FALSE(IsPostgresUrl(path));
  EXPECT_TRUE(IsPostgresUrl("postgresql://h/db"));
  EXPECT_TRUE(IsPostgresUrl("postgres:host=h dbname=db"));
}

}  // namespace
}  // namespace muster::store
