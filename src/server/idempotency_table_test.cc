#include "server/idempotency_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include "store/sqlite/sqlite_store.h"

namespace muster::server {
namespace {

class IdempotencyTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/idempotency_" + std::to_string(::getpid()) + ".db";
    std::filesystem::remove(path_);
    auto opened = store::SqliteStore::Open(path_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);
    writer_ = std::make_unique<store::StoreWriter>(*store_);
  }
  void TearDown() override {
    writer_.reset();
    store_.reset();
    std::filesystem::remove(path_);
  }
  // A ticket the writer has committed.
  uint64_t CommittedTicket() {
    std::promise<void> done;
    const uint64_t ticket = writer_->Submit({}, [&](const Status&) { done.set_value(); });
    done.get_future().wait();
    return ticket;
  }

  std::string path_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::StoreWriter> writer_;
  IdempotencyTable table_;
};

TEST_F(IdempotencyTableTest, ASameRequestReplaysAndAnotherConflicts) {
  using Outcome = IdempotencyTable::Outcome;
  const Time now = Time::FromSeconds(1'000'000);
  EXPECT_EQ(table_.Find("ann", "k", "fp", *writer_).outcome, Outcome::kNew);
  table_.Add("ann", "k", "fp", 7, CommittedTicket(), now);
  EXPECT_EQ(table_.Find("ann", "k", "fp", *writer_).outcome, Outcome::kReplay);
  EXPECT_EQ(table_.Find("ann", "k", "fp", *writer_).job, 7);
  const IdempotencyTable::Found other = table_.Find("ann", "k", "another", *writer_);
  EXPECT_EQ(other.outcome, Outcome::kConflict);
  EXPECT_EQ(other.job, 7);
  EXPECT_EQ(table_.Find("bob", "k", "fp", *writer_).outcome, Outcome::kNew);  // keys are per user
  // A key whose batch the writer has not committed yet is in flight (a
  // ticket far past the last one handed out).
  table_.Add("ann", "pending", "fp", 8, /*ticket=*/writer_->Submit({}, [](const Status&) {}) + 1'000'000, now);
  EXPECT_EQ(table_.Find("ann", "pending", "fp", *writer_).outcome, Outcome::kInFlight);
}

TEST_F(IdempotencyTableTest, KeysAreForgottenADayLaterOnlyOnceDurable) {
  using Outcome = IdempotencyTable::Outcome;
  const Time now = Time::FromSeconds(10'000'000);
  table_.Restore({{"ann", "old", "fp", 1, (now - Duration::Hours(25)).millis()},
                  {"ann", "recent", "fp", 2, (now - Duration::Hours(23)).millis()}});
  table_.Add("ann", "unwritten", "fp", 3, writer_->Submit({}, [](const Status&) {}) + 1'000'000,
             now - Duration::Hours(48));
  table_.Prune(now, *writer_);
  EXPECT_EQ(table_.Find("ann", "old", "fp", *writer_).outcome, Outcome::kNew);
  EXPECT_EQ(table_.Find("ann", "recent", "fp", *writer_).outcome, Outcome::kReplay);
  EXPECT_EQ(table_.Find("ann", "unwritten", "fp", *writer_).outcome, Outcome::kInFlight);
}

TEST_F(IdempotencyTableTest, RemembersEachJobsKey) {
  EXPECT_EQ(table_.KeyOf(4), nullptr);
  table_.SetKeyOf(4, "k-4");
  ASSERT_NE(table_.KeyOf(4), nullptr);
  EXPECT_EQ(*table_.KeyOf(4), "k-4");
}

}  // namespace
}  // namespace muster::server
