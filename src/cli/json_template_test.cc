#include "cli/json_template.h"

#include <gtest/gtest.h>

namespace muster::cli {
namespace {

using nlohmann::json;

const json kList = json::parse(R"({"items": [
  {"id": 1, "name": "a", "state": "RUNNING", "labels": {"team": "vision"}, "allocations": [{"node": "n1"}, {"node": "n2"}]},
  {"id": 2, "name": "b", "state": "PENDING", "labels": {}, "allocations": []}]})");

std::string Render(const std::string& t) {
  auto r = RenderJsonPath(kList, t);
  return r.ok() ? *r : "error: " + r.status().message();
}

TEST(JsonPath, PathsRangesAndLiterals) {
  EXPECT_EQ(Render("{.items[*].id}"), "1 2");
  EXPECT_EQ(Render("{.items[0].name} {.items[-1].state}"), "a PENDING");
  EXPECT_EQ(Render("{range .items[*]}{.id}{\"\\t\"}{.state}{\"\\n\"}{end}"), "1\tRUNNING\n2\tPENDING\n");
  EXPECT_EQ(Render("{.items[0].allocations[*].node}"), "n1 n2");
  EXPECT_EQ(Render("{.items[0].labels['team']}|{.items[1].labels.team}|"), "vision||") << "missing: nothing";
  EXPECT_EQ(Render("{.items[0].labels}"), R"({"team":"vision"})");
  EXPECT_EQ(Render("ids: {range .items[*]}[{@.id}]{end}"), "ids: [1][2]");
}

TEST(JsonPath, WhatCannotBeReadIsNamed) {
  EXPECT_EQ(Render("{.items"), "error: a { without its }");
  EXPECT_EQ(Render("{range .items[*]}{.id}"), "error: {range} without {end}");
  EXPECT_EQ(Render("{end}"), "error: {end} without {range}");
  EXPECT_EQ(Render("{.items[x]}"), "error: [x] is neither [N], [*] nor ['name'] in path \".items[x]\"");
  EXPECT_EQ(Render("{items}"), "error: expected . or [ at \"items\" in path \"items\"");
  EXPECT_EQ(Render("{.items..id}"), "error: a field name must follow . in path \".items..id\"");
  EXPECT_EQ(RenderJsonPath(kList, "{.items..id}").status().field(), "-o jsonpath");
  EXPECT_EQ(Render("{.}"), kList.dump()) << "the whole object";
}

TEST(CustomColumns, ARowPerItemAndNoneWhereMissing) {
  auto rows = CustomColumns(kList["items"], "ID:.id,NODES:.allocations[*].node,TEAM:{.labels.team}");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  const std::vector<std::vector<std::string>> want = {
      {"ID", "NODES", "TEAM"}, {"1", "n1,n2", "vision"}, {"2", "<none>", "<none>"}};
  EXPECT_EQ(*rows, want);
  EXPECT_EQ(CustomColumns(kList["items"], "ID").status().message(),
            "each column is HEADER:PATH (ID:.id,STATE:.state), got \"ID\"");
  EXPECT_EQ(CustomColumns(kList["items"], "ID:id").status().field(), "-o custom-columns");
}

}  // namespace
}  // namespace muster::cli
