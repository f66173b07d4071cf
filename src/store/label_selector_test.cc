#include "store/label_selector.h"

#include <gtest/gtest.h>

namespace muster::store {
namespace {

using Op = LabelRequirement::Op;

TEST(LabelSelector, ReadsKubectlsForms) {
  auto r = ParseLabelSelector(" team = vision, tier==batch,env!=prod,gpu,!spot ", "q");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<LabelRequirement> want = {{"team", Op::kEqual, "vision"},
                                              {"tier", Op::kEqual, "batch"},
                                              {"env", Op::kNotEqual, "prod"},
                                              {"gpu", Op::kExists, ""},
                                              {"spot", Op::kNotExists, ""}};
  EXPECT_EQ(*r, want);
  EXPECT_TRUE(ParseLabelSelector("", "q")->empty());
  EXPECT_EQ(*ParseLabelSelector("team=", "q"), (std::vector<LabelRequirement>{{"team", Op::kEqual, ""}}));
}

TEST(LabelSelector, RefusesWhatItCannotRead) {
  for (const char* bad : {"=x", "team=a=b", "a,,b", "!", "a b=c", "team!=x!"}) {
    auto r = ParseLabelSelector(bad, "query.labelSelector");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().field(), "query.labelSelector");
    EXPECT_NE(r.status().message().find("such as team=vision"), std::string::npos) << r.status().ToString();
  }
  std::string many;
  for (int i = 0; i < 17; ++i) many += (i ? ",k" : "k") + std::to_string(i);
  EXPECT_EQ(ParseLabelSelector(many, "q").status().message(), "at most 16 requirements");
}

}  // namespace
}  // namespace muster::store
