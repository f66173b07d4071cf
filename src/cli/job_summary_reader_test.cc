#include "cli/job_summary_reader.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace muster::cli {
namespace {

const char* kPage =
    R"({"items":[)"
    R"({"id":7,"name":"train","user":"ana","queue":"research","priority":"high","state":"RUNNING","reason":"",)"
    R"("submitTime":"2026-11-26T10:00:00.000Z","startTime":"2026-11-26T10:00:01.000Z","gpus":8,"replicas":2,"nodes":["n1","n2"]},)"
    R"({"id":8,"name":"caf\u00e9 \"x\"","user":"bo","queue":"default","priority":"normal","state":"PENDING",)"
    R"("reason":"Priority","submitTime":"2026-11-26T10:00:02.000Z","gpus":0,"replicas":1,"nodes":[]})"
    R"(],"continue":"8"})";

TEST(ReadJobSummaryPage, ReadsEveryItemsFields) {
  std::vector<JobSummaryItem> items;
  auto n = ReadJobSummaryPage(kPage, INT64_MAX, [&](const JobSummaryItem& j) { items.push_back(j); });
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].id, "7");
  EXPECT_EQ(items[0].name, "train");
  EXPECT_EQ(items[0].user, "ana");
  EXPECT_EQ(items[0].queue, "research");
  EXPECT_EQ(items[0].priority, "high");
  EXPECT_EQ(items[0].state, "RUNNING");
  EXPECT_EQ(items[0].submit_time, "2026-11-26T10:00:00.000Z");
  EXPECT_EQ(items[0].gpus, 8);
  EXPECT_EQ(items[0].replicas, 2);
  EXPECT_EQ(items[0].nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(items[1].name, "caf\xc3\xa9 \"x\"");
  EXPECT_EQ(items[1].reason, "Priority");
  EXPECT_TRUE(items[1].nodes.empty());
}

TEST(ReadJobSummaryPage, StopsAtTheLimitAndRefusesWhatIsNotJson) {
  int calls = 0;
  auto one = ReadJobSummaryPage(kPage, 1, [&](const JobSummaryItem&) { ++calls; });
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, 1);
  EXPECT_EQ(calls, 1);
  auto none = ReadJobSummaryPage(R"({"items":[],"continue":""})", INT64_MAX, [&](const JobSummaryItem&) { ++calls; });
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  auto bad = ReadJobSummaryPage(R"({"items":[{"id":1,)", INT64_MAX, [&](const JobSummaryItem&) { ++calls; });
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not JSON"), std::string::npos);
  EXPECT_EQ(calls, 1);
}

// What the reader should give for a page, worked out from the JSON
// library's tree with the same rules: fields of the expected type only.
std::vector<JobSummaryItem> Expected(const nlohmann::json& page) {
  std::vector<JobSummaryItem> out;
  for (auto it = page.begin(); it != page.end(); ++it) {
    if (it.key() != "items" || !it->is_array()) continue;
    for (const nlohmann::json& e : *it) {
      if (!e.is_object()) continue;
      JobSummaryItem j;
      for (auto m = e.begin(); m != e.end(); ++m) {
        const std::string& k = m.key();
        const nlohmann::json& v = *m;
        if (v.is_string()) {
          for (auto [name, field] : {std::pair{"name", &j.name},
                                     {"user", &j.user},
                                     {"queue", &j.queue},
                                     {"priority", &j.priority},
                                     {"state", &j.state},
                                     {"reason", &j.reason},
                                     {"submitTime", &j.submit_time}}) {
            if (k == name) *field = v.get<std::string>();
          }
        } else if (v.is_number_integer()) {
          const int64_t n = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
          if (k == "id") j.id = std::to_string(n);
          if (k == "gpus") j.gpus = n;
          if (k == "replicas") j.replicas = n;
        } else if (v.is_array() && k == "nodes") {
          for (const nlohmann::json& n : v) {
            if (n.is_string()) j.nodes.push_back(n.get<std::string>());
          }
        }
      }
      out.push_back(std::move(j));
    }
  }
  return out;
}

bool Same(const JobSummaryItem& a, const JobSummaryItem& b) {
  return a.id == b.id && a.name == b.name && a.user == b.user && a.queue == b.queue && a.priority == b.priority &&
         a.state == b.state && a.reason == b.reason && a.submit_time == b.submit_time && a.gpus == b.gpus &&
         a.replicas == b.replicas && a.nodes == b.nodes;
}

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int more = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (more < 0 || i + more >= s.size() + (more == 0)) return false;
    for (int k = 0; k < more; ++k) {
      if ((static_cast<unsigned char>(s[++i]) & 0xC0) != 0x80) return false;
    }
  }
  return true;
}

// Random pages: the fields the server sends, with values of other types,
// unknown keys holding nested values, strings with escapes and characters
// beyond the BMP; written compact or indented, ASCII-only or not.
TEST(ReadJobSummaryPage, AgreesWithTheJsonLibraryOnRandomPages) {
  std::mt19937 rng(7);
  const auto text = [&]() {
    static const std::vector<std::string> pieces = {
        "a",      "train",      "\"q\"", "back\\slash",         "tab\t", "\n", "caf\u00e9",
        "\u2028", "\U0001F600", "/",     std::string(1, '\x01')};
    std::string s;
    for (int i = rng() % 4; i > 0; --i) s += pieces[rng() % pieces.size()];
    return s;
  };
  const auto value = [&](int depth, auto&& self) -> nlohmann::json {
    switch (rng() % (depth > 2 ? 5 : 7)) {
      case 0:
        return text();
      case 1:
        return static_cast<int64_t>(rng()) - (1 << 30);
      case 2:
        return rng() % 2 == 0;
      case 3:
        return nullptr;
      case 4:
        return 1.5 * (rng() % 100);
      case 5: {
        nlohmann::json a = nlohmann::json::array();
        for (int i = rng() % 3; i > 0; --i) a.push_back(self(depth + 1, self));
        return a;
      }
      default: {
        nlohmann::json o = nlohmann::json::object();
        for (int i = rng() % 3; i > 0; --i) o[text()] = self(depth + 1, self);
        return o;
      }
    }
  };
  const std::vector<std::string> keys = {"id",         "name",      "user", "queue",    "priority", "state", "reason",
                                         "submitTime", "startTime", "gpus", "replicas", "nodes",    "other"};
  int compared = 0;
  for (int round = 0; round < 3000; ++round) {
    nlohmann::json page = nlohmann::json::object();
    nlohmann::json items = nlohmann::json::array();
    for (int i = rng() % 4; i > 0; --i) {
      nlohmann::json item = nlohmann::json::object();
      for (const std::string& k : keys) {
        if (rng() % 4 == 0) continue;
        const int kind = rng() % 4;
        if (kind == 0) {
          item[k] = value(2, value);
        } else if (k == "nodes") {
          item[k] = nlohmann::json::array({text(), text()});
        } else if (k == "id" || k == "gpus" || k == "replicas") {
          item[k] = rng() % 1000;
        } else {
          item[k] = text();
        }
      }
      items.push_back(rng() % 10 == 0 ? value(2, value) : item);
    }
    page["items"] = items;
    page["continue"] = text();
    const std::string json = page.dump(rng() % 2 == 0 ? -1 : 2, ' ', /*ensure_ascii=*/rng() % 2 == 0);
    std::vector<JobSummaryItem> got;
    auto n = ReadJobSummaryPage(json, INT64_MAX, [&](const JobSummaryItem& j) { got.push_back(j); });
    ASSERT_TRUE(n.ok()) << n.status().ToString() << "\n" << json;
    const std::vector<JobSummaryItem> want = Expected(page);
    ASSERT_EQ(got.size(), want.size()) << json;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(Same(got[i], want[i])) << json;
    ++compared;
    // Damaged: cut short, or a byte changed. Whatever the library refuses
    // (in an object, and not for its UTF-8) is refused here too, and what
    // it reads is read the same.
    for (int d = 0; d < 4; ++d) {
      std::string bad = json;
      if (d == 0) {
        bad.resize(rng() % json.size());
      } else {
        bad[rng() % bad.size()] = "{}[]\":,0-e\\ x\x01"[rng() % 14];
      }
      nlohmann::json tree;
      std::string refused;  // why the library refuses it
      try {
        tree = nlohmann::json::parse(bad);
      } catch (const nlohmann::json::exception& e) {
        refused = e.what();
      }
      std::vector<JobSummaryItem> read;
      auto r = ReadJobSummaryPage(bad, INT64_MAX, [&](const JobSummaryItem& j) { read.push_back(j); });
      if (!refused.empty()) {
        // Not for its UTF-8, nor for a number beyond a double's range (the
        // reader skips numbers it does not need).
        if (ValidUtf8(bad) && refused.find("number overflow") == std::string::npos) {
          EXPECT_FALSE(r.ok()) << refused << "\n" << bad;
        }
      } else if (tree.is_object()) {
        ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << bad;
        const std::vector<JobSummaryItem> want_bad = Expected(tree);
        ASSERT_EQ(read.size(), want_bad.size()) << bad;
        for (size_t i = 0; i < read.size(); ++i) ASSERT_TRUE(Same(read[i], want_bad[i])) << bad;
      }
    }
  }
  EXPECT_EQ(compared, 3000);
}

TEST(ReadJobSummaryPage, RefusesWhatStrictJsonRefuses) {
  for (const char* bad : {"", "{", "[]", R"({"items":[{"id":01}]})", R"({"items":[{"name":"a
b"}]})",
                          R"({"items":[{"name":"\ud800"}]})", R"({"items":[{"name":"\udc00x"}]})", R"({"items":[]} x)",
                          R"({"items":[{"id":1,}]})", R"({"items":[{"id":tru}]})", R"({"items":[{"id":-}]})",
                          R"({"items":[{"name":"\x"}]})"}) {
    auto r = ReadJobSummaryPage(bad, INT64_MAX, [](const JobSummaryItem&) {});
    EXPECT_FALSE(r.ok()) << bad;
  }
  std::string deep = R"({"items":[{"other":)" + std::string(300, '[') + std::string(300, ']') + "}]}";
  EXPECT_FALSE(ReadJobSummaryPage(deep, INT64_MAX, [](const JobSummaryItem&) {}).ok());
}

}  // namespace
}  // namespace muster::cli
