#include "server/image_pulls.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

TEST(ImagePullsTest, APullIsWantedUntilItsNodeSaysItEnded) {
  ImagePulls p;
  p.Ask("n1", "nvcr.io/nvidia/pytorch:24.05", "root", 1000);
  p.Ask("n1", "ghcr.io/team/tool:1", "root", 1000);
  p.Ask("n2", "nvcr.io/nvidia/pytorch:24.05", "root", 1000);
  EXPECT_EQ(p.Wanted("n1"), (std::vector<std::string>{"ghcr.io/team/tool:1", "nvcr.io/nvidia/pytorch:24.05"}));
  EXPECT_TRUE(p.Unheard("n1", {})) << "the agent has not said a word of them";
  EXPECT_TRUE(
      p.Report("n1", {{"nvcr.io/nvidia/pytorch:24.05", "pulling", "", 0}, {"ghcr.io/team/tool:1", "waiting", "", 0}})
          .empty());
  EXPECT_FALSE(
      p.Unheard("n1", {{"nvcr.io/nvidia/pytorch:24.05", "pulling", "", 0}, {"ghcr.io/team/tool:1", "waiting", "", 0}}));
  const std::vector<ImagePull> ended = p.Report("n1", {{"nvcr.io/nvidia/pytorch:24.05", "pulled", "", 5300},
                                                       {"ghcr.io/team/tool:1", "failed", "unauthorized", 40}});
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_TRUE(p.Wanted("n1").empty());
  EXPECT_EQ(p.Wanted("n2"), std::vector<std::string>{"nvcr.io/nvidia/pytorch:24.05"}) << "each node its own";
  EXPECT_TRUE(p.Report("n1", {{"nvcr.io/nvidia/pytorch:24.05", "pulled", "", 5300}}).empty()) << "told once";
  EXPECT_TRUE(p.Report("n3", {{"x", "pulled", "", 1}}).empty()) << "never asked";
  // Asked again: wanted again.
  p.Ask("n1", "ghcr.io/team/tool:1", "ann", 2000);
  EXPECT_EQ(p.Wanted("n1"), std::vector<std::string>{"ghcr.io/team/tool:1"});
}

TEST(ImagePullsTest, TheStoredDocumentKeepsOutcomesAndAsksAgainWhatWasUnderWay) {
  ImagePulls p;
  p.Ask("n1", "a:1", "root", 1);
  p.Ask("n1", "b:1", "root", 1);
  p.Report("n1", {{"a:1", "pulled", "", 10}, {"b:1", "pulling", "", 0}});
  ImagePulls back;
  ASSERT_TRUE(back.Load(p.Dump()).ok());
  ASSERT_EQ(back.All().size(), 2u);
  EXPECT_EQ(back.All()[0].state, "pulled");
  EXPECT_EQ(back.All()[0].ms, 10);
  EXPECT_EQ(back.All()[1].state, "asked");
  EXPECT_EQ(back.Wanted("n1"), std::vector<std::string>{"b:1"});
  EXPECT_EQ(back.Load("[1]").code(), StatusCode::kDataLoss);
  // A field of the wrong type is damage, said as such (not an exception).
  EXPECT_EQ(back.Load(R"([{"node":"n1","image":"a:1","ms":"ten"}])").code(), StatusCode::kDataLoss);
  EXPECT_TRUE(back.All().empty());
}

}  // namespace
}  // namespace muster::server
