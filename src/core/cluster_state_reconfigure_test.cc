// ClusterState::Reconfigure: a reloaded configuration under what runs.
#include <gtest/gtest.h>

#include <utility>

#include "core/cluster_state.h"

namespace muster::core {
namespace {

// A reload: quotas and class weights change under what runs; the classes
// there are stay in place.
TEST(ClusterStateReconfigure, QuotasAndWeightsChangeClassesStayInPlace) {
  ClusterConfig config;
  config.queues = {{"research", {}, {{"*", 4}}, ""}};
  ClusterState state(config);
  EXPECT_EQ(ClusterSnapshot(state.Snapshot(Time::Zero())).QuotaOf(state.QueueId("research"))->limit_total, 4);
  ClusterConfig next = config;
  next.queues = {{"research", {}, {{"*", 8}}, ""}, {"batch", {}, {{"*", 2}}, ""}};
  next.priority_classes[1].weight = 12'345;
  next.priority_classes.push_back({"urgent", 50'000, false, true});
  ASSERT_TRUE(state.Reconfigure(next).ok());
  const ClusterSnapshot s = state.Snapshot(Time::Zero());
  EXPECT_EQ(s.QuotaOf(state.QueueId("research"))->limit_total, 8);
  EXPECT_EQ(s.QuotaOf(state.QueueId("batch"))->limit_total, 2);
  EXPECT_EQ(state.config().priority_classes[1].weight, 12'345);
  EXPECT_EQ(state.config().priority_classes.size(), 5u);
  ClusterConfig reordered = next;
  std::swap(reordered.priority_classes[0], reordered.priority_classes[1]);
  const Status refused = state.Reconfigure(reordered);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("class \"low\" must stay"), std::string::npos) << refused.message();
  EXPECT_EQ(state.config().priority_classes[0].name, "low");  // nothing changed
}

}  // namespace
}  // namespace muster::core
