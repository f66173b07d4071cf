#include "api/spec_tree.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace muster::api {
namespace {

using Kind = TreeNode::Kind;

const TreeNode& Field(const TreePtr& map, const std::string& key) {
  for (const auto& [k, v] : map->fields) {
    if (k == key) return *v;
  }
  ADD_FAILURE() << "no field " << key;
  static const TreeNode kNone;
  return kNone;
}

TEST(SpecTreeTest, YamlPlainScalarsAreTypedQuotedOnesAreStrings) {
  StatusOr<TreePtr> t = LoadYamlTree(
      "a: 8\nb: \"8\"\nc: '8'\nd: yes\ne: true\nf: 1.5\ng: ~\nh:\ni: 1e12\n"
      "j: 99999999999999999999\nk: on\nl: 0x10\nm: 1:30\nn: !!str 8\no: -7\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const TreePtr& m = *t;
  EXPECT_EQ(Field(m, "a").kind, Kind::kInt);
  EXPECT_EQ(Field(m, "a").integer, 8);
  EXPECT_TRUE(Field(m, "a").plain);
  EXPECT_EQ(Field(m, "b").kind, Kind::kString);
  EXPECT_FALSE(Field(m, "b").plain);
  EXPECT_EQ(Field(m, "c").kind, Kind::kString);
  EXPECT_EQ(Field(m, "d").kind, Kind::kString);
  EXPECT_EQ(Field(m, "e").kind, Kind::kBool);
  EXPECT_TRUE(Field(m, "e").boolean);
  EXPECT_EQ(Field(m, "f").kind, Kind::kDouble);
  EXPECT_EQ(Field(m, "f").text, "1.5");
  EXPECT_EQ(Field(m, "g").kind, Kind::kNull);
  EXPECT_EQ(Field(m, "h").kind, Kind::kNull);
  EXPECT_EQ(Field(m, "i").kind, Kind::kDouble);
  EXPECT_EQ(Field(m, "j").kind, Kind::kDouble);
  EXPECT_EQ(Field(m, "k").kind, Kind::kString);
  EXPECT_EQ(Field(m, "l").kind, Kind::kString);
  EXPECT_EQ(Field(m, "m").kind, Kind::kString);
  EXPECT_EQ(Field(m, "n").kind, Kind::kString);
  EXPECT_FALSE(Field(m, "n").plain);
  EXPECT_EQ(Field(m, "o").integer, -7);
}

TEST(SpecTreeTest, JsonNumbersKeepTheirText) {
  StatusOr<TreePtr> t = LoadJsonTree(R"({"a": 8, "b": 1e12, "c": 99999999999999999999, "d": -0.5, "e": "8"})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Field(*t, "a").kind, Kind::kInt);
  EXPECT_EQ(Field(*t, "b").kind, Kind::kDouble);
  EXPECT_EQ(Field(*t, "b").text, "1e12");
  EXPECT_EQ(Field(*t, "c").kind, Kind::kDouble);
  EXPECT_EQ(Field(*t, "c").text, "99999999999999999999");
  EXPECT_EQ(Field(*t, "d").text, "-0.5");
  EXPECT_EQ(Field(*t, "e").kind, Kind::kString);
  EXPECT_FALSE(Field(*t, "a").plain);
}

TEST(SpecTreeTest, DepthLimitIs32) {
  const auto nest = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  EXPECT_TRUE(LoadJsonTree(nest(32)).ok());
  EXPECT_FALSE(LoadJsonTree(nest(33)).ok());
  EXPECT_TRUE(LoadYamlTree(nest(32)).ok());
  EXPECT_FALSE(LoadYamlTree(nest(33)).ok());
}

TEST(SpecTreeTest, AliasesAreSharedNotCopied) {
  StatusOr<TreePtr> t = LoadYamlTree("base: &b {x: 1}\ncopy: *b\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->fields[0].second.get(), (*t)->fields[1].second.get());
}

TEST(SpecTreeTest, AliasBombFailsFast) {
  std::string bomb = "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string p = "*a" + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p + "," + p + "," + p + "," + p + "," + p +
            "," + p + "," + p + "," + p + "," + p + "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  StatusOr<TreePtr> t = LoadYamlTree(bomb);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("aliases expand the document beyond 4 MiB"), std::string::npos)
      << t.status().ToString();
  EXPECT_LT(elapsed, std::chrono::seconds(2));
}

TEST(SpecTreeTest, RecursiveAliasIsRefused) { EXPECT_FALSE(LoadYamlTree("a: &x [1, *x]\n").ok()); }

TEST(SpecTreeTest, QuoteEscapesAndTruncates) {
  EXPECT_EQ(QuoteForMessage("eight"), "\"eight\"");
  EXPECT_EQ(QuoteForMessage(std::string("a\0b\n\x1b[31m\"\\", 11)), "\"a\\u0000b\\n\\u001b[31m\\\"\\\\\"");
  EXPECT_EQ(QuoteForMessage("\xff\xfe"), "\"\\xff\\xfe\"");
  EXPECT_EQ(QuoteForMessage("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 kept
  EXPECT_EQ(QuoteForMessage("a\xe2\x80\xae"
                            "b"),
            "\"a\\u202eb\"");  // bidi override
  EXPECT_EQ(QuoteForMessage(std::string(100, 'x'), 8), "\"xxxxxxxx...\" (100 bytes)");
  EXPECT_EQ(SanitizeForMessage("line\r\nnext"), "line\\r\\nnext");
}

TEST(SpecTreeTest, PathsQuoteKeysThatAreNotIdentifiers) {
  EXPECT_EQ(ChildPath("spec", "resources"), "spec.resources");
  EXPECT_EQ(ChildPath("spec.env", "1BAD"), "spec.env[\"1BAD\"]");
  EXPECT_EQ(ChildPath("spec.labels", "app.kubernetes.io/name"), "spec.labels[\"app.kubernetes.io/name\"]");
  EXPECT_EQ(ChildPath("spec", "a\nb"), "spec[\"a\\nb\"]");
  EXPECT_EQ(IndexPath("spec.command", 2), "spec.command[2]");
}

TEST(SpecTreeTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // cut short
}

}  // namespace
}  // namespace muster::api
