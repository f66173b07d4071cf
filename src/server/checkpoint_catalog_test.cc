#include "server/checkpoint_catalog.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

CheckpointCatalog::Commit At(const std::string& location, int64_t step, const std::string& sha = "s",
                             int32_t attempt = 1) {
  return {7, attempt, step, location, sha + location, 3, 1 << 20};
}

TEST(CheckpointCatalogTest, CommitsAreNumberedAndRetentionKeepsTheNewest) {
  CheckpointCatalog cat;
  const Time now = Time::FromSeconds(100);
  for (int i = 1; i <= 3; ++i) {
    store::WriteBatch b;
    auto c = cat.Add(At("/ckpt/s" + std::to_string(i), i * 10), "/ckpt", /*keep=*/2, now, b);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->entry.seq, i);
    EXPECT_FALSE(c->repeated);
    ASSERT_EQ(b.events.size(), 1u);
    EXPECT_EQ(b.events[0].type, "CheckpointCommitted");
    EXPECT_NE(b.events[0].message.find("checkpoint " + std::to_string(i) + " (step " + std::to_string(i * 10) + ")"),
              std::string::npos);
    if (i == 3) {  // the first drops out
      ASSERT_EQ(c->dropped.size(), 1u);
      EXPECT_EQ(c->dropped[0].first, "/ckpt/s1");
      ASSERT_EQ(b.checkpoints.size(), 2u);
      EXPECT_EQ(b.checkpoints[1].state, "REMOVED");
    }
  }
  const std::vector<proto::ResumeCandidate> offered = cat.ResumeCandidates(7);
  ASSERT_EQ(offered.size(), 2u);
  EXPECT_EQ(offered[0].seq, 3);  // newest first
  EXPECT_EQ(offered[1].seq, 2);
}

TEST(CheckpointCatalogTest, ARetriedCommitIsAnsweredWithTheFirstAndAnotherManifestIsRefused) {
  CheckpointCatalog cat;
  store::WriteBatch b;
  ASSERT_TRUE(cat.Add(At("/ckpt/a", 5), "/ckpt", 3, Time::Zero(), b).ok());
  store::WriteBatch again;
  auto same = cat.Add(At("/ckpt/a", 5), "/ckpt", 3, Time::Zero(), again);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->repeated);
  EXPECT_EQ(same->entry.seq, 1);
  EXPECT_TRUE(again.empty());
  auto other = cat.Add(At("/ckpt/a", 5, "other"), "/ckpt", 3, Time::Zero(), again);
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  auto outside = cat.Add(At("/elsewhere/a", 5), "/ckpt", 3, Time::Zero(), again);
  EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(outside.status().field(), "location");
  EXPECT_TRUE(again.empty());
}

TEST(CheckpointCatalogTest, ADamagedCheckpointIsMarkedOnceAndNeverOfferedAgain) {
  CheckpointCatalog cat;
  store::WriteBatch b;
  ASSERT_TRUE(cat.Add(At("/ckpt/a", 5), "/ckpt", 3, Time::Zero(), b).ok());
  ASSERT_TRUE(cat.Add(At("/ckpt/b", 9), "/ckpt", 3, Time::Zero(), b).ok());
  store::WriteBatch marked;
  cat.MarkCorrupt(7, 1, {{2, "sha256 mismatch: model.pt"}}, Time::Zero(), marked);
  ASSERT_EQ(marked.checkpoints.size(), 1u);
  EXPECT_EQ(marked.checkpoints[0].state, "CORRUPT");
  EXPECT_EQ(marked.events[0].reason, "VerificationFailed");
  store::WriteBatch twice;
  cat.MarkCorrupt(7, 0, {{2, "sha256 mismatch: model.pt"}}, Time::Zero(), twice);
  EXPECT_TRUE(twice.empty()) << "another replica reported it first";
  ASSERT_EQ(cat.ResumeCandidates(7).size(), 1u);
  EXPECT_EQ(cat.ResumeCandidates(7)[0].seq, 1);
  ASSERT_NE(cat.Find(7, 2), nullptr);
  EXPECT_EQ(cat.Find(7, 2)->state, "CORRUPT");
  cat.Forget(7);
  EXPECT_EQ(cat.Find(7, 1), nullptr);
  EXPECT_TRUE(cat.ResumeCandidates(7).empty());
}

}  // namespace
}  // namespace muster::server
