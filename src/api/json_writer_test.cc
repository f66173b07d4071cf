#include "api/json_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace muster::api {
namespace {

std::string Dumped(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

TEST(JsonWriter, WritesNestedValuesWithCommasWhereTheyBelong) {
  std::string out;
  JsonWriter w(out);
  w.BeginObject().Key("id").Int(-7).Key("ok").Bool(true).Key("none").Null();
  w.Key("list").BeginArray().BeginObject().EndObject().BeginArray().EndArray().Int(1).String("a").EndArray();
  w.Key("raw").Raw(R"({"x":[1]})").Key("last").Bool(false).EndObject();
  EXPECT_EQ(out, R"({"id":-7,"ok":true,"none":null,"list":[{},[],1,"a"],"raw":{"x":[1]},"last":false})");
}

TEST(JsonWriter, StringsAreEscapedExactlyAsTheJsonLibraryDoes) {
  // Quotes, backslashes, control bytes, multi-byte characters and bytes
  // that are not UTF-8 (replaced by U+FFFD), as keys and as values.
  std::vector<std::string> cases = {
      "",     "plain",         "a\"b",   "back\\slash", "tab\there", "nl\n",     std::string("nul\0x", 5),
      "\x7f", "\u00e9t\u00e9", "\u2028", "\xff",        "ab\xc3",    "\xe2\x82", "\xed\xa0\x80"};
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 12, ' ');
    for (char& c : s) c = static_cast<char>(rng() % 3 == 0 ? rng() % 256 : 'a' + rng() % 26);
    cases.push_back(s);
  }
  for (const std::string& s : cases) {
    std::string out;
    JsonWriter(out).BeginObject().Key(s).String(s).EndObject();
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j[s] = s;
    ASSERT_EQ(out, Dumped(j)) << testing::PrintToString(s);
    std::string bare;
    AppendJsonString(s, bare);
    ASSERT_EQ(bare, Dumped(nlohmann::ordered_json(s)));
  }
}

TEST(JsonWriter, IntegersMatchTheJsonLibrary) {
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{42}, INT64_MIN, INT64_MAX}) {
    std::string out;
    JsonWriter(out).Int(v);
    EXPECT_EQ(out, Dumped(nlohmann::ordered_json(v)));
  }
}

}  // namespace
}  // namespace muster::api
