#include "cli/hostlist.h"

#include <gtest/gtest.h>

namespace muster::cli {
namespace {

using Hosts = std::vector<std::string>;

TEST(Hostlist, ExpandsAsScontrolShowHostnames) {
  EXPECT_EQ(*ExpandHostlist("n[001-003,007],gpu-a1"), (Hosts{"n001", "n002", "n003", "n007", "gpu-a1"}));
  EXPECT_EQ(*ExpandHostlist("a1,a2"), (Hosts{"a1", "a2"}));
  EXPECT_EQ(*ExpandHostlist("rack[1-2]-n[8-9]"), (Hosts{"rack1-n8", "rack1-n9", "rack2-n8", "rack2-n9"}));
  EXPECT_EQ(*ExpandHostlist("n[9-11]"), (Hosts{"n9", "n10", "n11"}));
  EXPECT_TRUE(ExpandHostlist("")->empty());
  for (const char* bad : {"n[1-", "n[3-1]", "n[a]", "n]1"}) EXPECT_FALSE(ExpandHostlist(bad).ok()) << bad;
  EXPECT_FALSE(ExpandHostlist("n[1-2000000]", 1000).ok());
}

TEST(Hostlist, CompressesWhatExpandGives) {
  const Hosts hosts = {"n001", "n002", "n003", "n007", "gpu-a1", "n010"};
  EXPECT_EQ(CompressHostlist(hosts), "n[001-003,007,010],gpu-a1");
  EXPECT_EQ(CompressHostlist({"a1"}), "a1");
  EXPECT_EQ(CompressHostlist({"login", "a1", "a2"}), "login,a[1-2]");
  for (const std::string list : {"n[001-003,007],gpu-a1", "x[1-4],y7,z"}) {
    EXPECT_EQ(*ExpandHostlist(CompressHostlist(*ExpandHostlist(list))), *ExpandHostlist(list)) << list;
  }
}

}  // namespace
}  // namespace muster::cli
