#include "server/job_row_filter.h"

#include <gtest/gtest.h>

#include "store/label_selector.h"

namespace muster::server {
namespace {

store::JobRow Row() {
  store::JobRow r;
  r.id = 3;
  r.name = "train";
  r.user = "ann";
  r.queue = "research";
  r.state = "RUNNING";
  r.submit_ms = 1'000;
  r.spec_json = R"({"name":"train","labels":{"team":"vision","tier":"gold"}})";
  return r;
}

bool Passes(const std::string& selector) {
  store::JobFilter f;
  f.labels = *store::ParseLabelSelector(selector, "l");
  return RowPasses(f, Row());
}

TEST(RowPasses, StatesQueueUserNameAndWindowAsAListFilters) {
  store::JobFilter f;
  EXPECT_TRUE(RowPasses(f, Row()));
  f.states = {"PENDING", "RUNNING"};
  EXPECT_TRUE(RowPasses(f, Row()));
  f.states = {"PENDING"};
  EXPECT_FALSE(RowPasses(f, Row()));
  f = {};
  f.queue = "other";
  EXPECT_FALSE(RowPasses(f, Row()));
  f = {};
  f.user = "bob";
  EXPECT_FALSE(RowPasses(f, Row()));
  f = {};
  f.name = "train";
  EXPECT_TRUE(RowPasses(f, Row()));
  f = {};
  f.submitted_before_ms = 1'000;
  EXPECT_FALSE(RowPasses(f, Row()));
}

TEST(RowPasses, LabelRequirementsAsTheStoresReadThem) {
  EXPECT_TRUE(Passes("team=vision"));
  EXPECT_TRUE(Passes("team=vision,tier"));
  EXPECT_FALSE(Passes("team=nlp"));
  EXPECT_TRUE(Passes("team!=nlp"));
  EXPECT_TRUE(Passes("owner!=x"));  // no such label: not equal
  EXPECT_FALSE(Passes("team!=vision"));
  EXPECT_FALSE(Passes("!tier"));
  EXPECT_TRUE(Passes("!owner"));
  EXPECT_FALSE(Passes("owner"));
}

}  // namespace
}  // namespace muster::server
