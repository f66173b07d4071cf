#include "store/sqlite/coalescing_vfs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace muster::store {
namespace {

std::string TempDb(const std::string& name) {
  const std::string p = ::testing::TempDir() + "/" + name + std::to_string(::getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p + suffix);
  return p;
}

sqlite3* Open(const std::string& path, const char* vfs) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs), SQLITE_OK);
  return db;
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << " in " << sql;
}

int64_t Count(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

std::string IntegrityCheck(sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr);
  std::string verdict = sqlite3_step(st) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
  sqlite3_finalize(st);
  return verdict;
}

// Transactions from one row to over 4 MiB (several buffer flushes, each in
// pieces under the platform's 128 KiB write limit) read back whole, from a
// second connection while the first is open, and from the platform VFS.
TEST(CoalescingVfs, TransactionsOfAnySizeReadBackWhole) {
  ASSERT_EQ(RegisterCoalescingVfs(), SQLITE_OK);
  const std::string path = TempDb("coalescing");
  sqlite3* db = Open(path, kCoalescingVfs);
  Exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL");
  Exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL)");
  int64_t rows = 0, bytes = 0;
  for (const auto& [count, size] :
       std::vector<std::pair<int, int>>{{1, 10}, {3, 5000}, {300, 20000}, {1, 200000}, {50, 100}}) {
    Exec(db, "BEGIN");
    for (int i = 0; i < count; ++i) {
      Exec(db,
           "INSERT INTO t (size, data) VALUES (" + std::to_string(size) + ", zeroblob(" + std::to_string(size) + "))");
      ++rows;
      bytes += size;
    }
    Exec(db, "COMMIT");
    sqlite3* reader = Open(path, kCoalescingVfs);
    EXPECT_EQ(Count(reader, "SELECT count(*) FROM t"), rows);
    EXPECT_EQ(Count(reader, "SELECT sum(length(data)) FROM t"), bytes);
    EXPECT_EQ(Count(reader, "SELECT count(*) FROM t WHERE length(data) != size"), 0);
    sqlite3_close(reader);
  }
  EXPECT_EQ(IntegrityCheck(db), "ok");
  sqlite3_close(db);
  // The files are plain SQLite: the platform's VFS reads them as written.
  sqlite3* plain = Open(path, nullptr);
  EXPECT_EQ(Count(plain, "SELECT count(*) FROM t"), rows);
  EXPECT_EQ(Count(plain, "SELECT sum(length(data)) FROM t"), bytes);
  EXPECT_EQ(IntegrityCheck(plain), "ok");
  sqlite3_close(plain);
}

// What a commit acknowledged is in the files when the process dies at once:
// buffered frames must reach the WAL before the commit returns. A child
// commits row after row, saying so on a pipe after each COMMIT returns, and
// is killed with SIGKILL in the middle of its work.
TEST(CoalescingVfs, EveryCommitThatReturnedSurvivesKill9) {
  ASSERT_EQ(RegisterCoalescingVfs(), SQLITE_OK);
  const std::string path = TempDb("coalescing_kill");
  {
    sqlite3* db = Open(path, kCoalescingVfs);
    Exec(db, "PRAGMA journal_mode = WAL");
    Exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)");
    sqlite3_close(db);
  }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, kCoalescingVfs) != SQLITE_OK) ::_exit(1);
    sqlite3_exec(db, "PRAGMA synchronous = FULL", nullptr, nullptr, nullptr);
    for (int64_t i = 1;; ++i) {
      // Several pages a commit, the last one under way when the kill comes.
      const std::string sql =
          "BEGIN; INSERT INTO t (id, data) VALUES (" + std::to_string(i) + ", randomblob(30000)); COMMIT";
      if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) ::_exit(1);
      if (::write(fds[1], &i, sizeof i) != sizeof i) ::_exit(1);
    }
  }
  ::close(fds[1]);
  int64_t acknowledged = 0, id = 0;
  while (acknowledged < 200 && ::read(fds[0], &id, sizeof id) == sizeof id) acknowledged = id;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // Whatever the child said after we stopped reading counts too.
  while (::read(fds[0], &id, sizeof id) == sizeof id) acknowledged = id;
  ::close(fds[0]);
  ASSERT_GE(acknowledged, 200);
  sqlite3* db = Open(path, kCoalescingVfs);
  EXPECT_GE(Count(db, "SELECT count(*) FROM t"), acknowledged);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM t WHERE id <= " + std::to_string(acknowledged)), acknowledged);
  EXPECT_EQ(IntegrityCheck(db), "ok");
  sqlite3_close(db);
}

}  // namespace
}  // namespace muster::store
