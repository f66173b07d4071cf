#include "server/array_dependencies.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

using core::Dependency;
using core::DependencyType;

// Array 10 has tasks 10..12 at indexes 0, 1, 5; array 20 has 20..21 at 0, 1.
std::vector<ArrayTaskRef> TasksOf(int64_t id) {
  if (id == 10) return {{10, 0}, {11, 1}, {12, 5}};
  if (id == 20) return {{20, 0}, {21, 1}};
  return {};
}

TEST(ArrayDependencies, AnArraysIdWaitsForEveryTaskAndOtherIdsStayAsTheyAre) {
  auto r = ResolveArrayDependencies({{DependencyType::kAfterOk, 10}, {DependencyType::kAfterAny, 7}}, false,
                                    std::nullopt, TasksOf);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<Dependency> want = {{DependencyType::kAfterOk, 10},
                                        {DependencyType::kAfterOk, 11},
                                        {DependencyType::kAfterOk, 12},
                                        {DependencyType::kAfterAny, 7}};
  EXPECT_EQ(*r, want);
  // A task named by its own id (not the array's) is that task alone.
  r = ResolveArrayDependencies({{DependencyType::kAfter, 11, Duration::Seconds(600)}}, false, std::nullopt, TasksOf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<Dependency>{{DependencyType::kAfter, 11, Duration::Seconds(600)}}));
}

TEST(ArrayDependencies, AftercorrPairsTasksByIndex) {
  auto pair = [](int32_t index) {
    return ResolveArrayDependencies({{DependencyType::kAfterCorr, 10}}, false, index, TasksOf);
  };
  ASSERT_TRUE(pair(1).ok());
  EXPECT_EQ(*pair(1), (std::vector<Dependency>{{DependencyType::kAfterOk, 11}}));
  EXPECT_EQ(*pair(5), (std::vector<Dependency>{{DependencyType::kAfterOk, 12}}));
  EXPECT_TRUE(pair(3)->empty());  // no partner: nothing to wait for
  // On a job that is no array: afterok on it.
  auto single = ResolveArrayDependencies({{DependencyType::kAfterCorr, 7}}, false, 2, TasksOf);
  EXPECT_EQ(*single, (std::vector<Dependency>{{DependencyType::kAfterOk, 7}}));
}

TEST(ArrayDependencies, RefusesWhatCannotBeSaid) {
  auto r = ResolveArrayDependencies({{DependencyType::kAfterCorr, 10}}, false, std::nullopt, TasksOf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "dependencies");
  EXPECT_NE(r.status().message().find("this job is no array"), std::string::npos) << r.status().ToString();
  r = ResolveArrayDependencies({{DependencyType::kAfterOk, 10}, {DependencyType::kAfterOk, 7}}, true, std::nullopt,
                               TasksOf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("job 10 is an array of 3 tasks"), std::string::npos) << r.status().ToString();
  // With ? a single task, or a one-task array, is fine.
  r = ResolveArrayDependencies({{DependencyType::kAfterOk, 11}, {DependencyType::kAfterOk, 7}}, true, std::nullopt,
                               TasksOf);
  EXPECT_TRUE(r.ok());
}

}  // namespace
}  // namespace muster::server
