#include "server/config_reload.h"

#include <gtest/gtest.h>

namespace muster::server {
namespace {

TEST(PlanReload, ListsWhatAReloadAppliesAndWhatTakesARestart) {
  const std::string old_text =
      "listen: 127.0.0.1:8470\n"
      "queues:\n"
      "  - {name: research, limit: 32}\n"
      "  - {name: prod, guarantee: 8}\n"
      "prices: {H100: 3.2}\n";
  const std::string new_text =
      "listen: 0.0.0.0:8470\n"
      "queues:\n"
      "  - {name: research, limit: 16}\n"
      "  - {name: batch}\n"
      "prices:\n"
      "  H100: 3.2\n"  // the same value, written otherwise: no change
      "slurm: {qos: {high: high}}\n"
      "pools: {spot: {prices: {H100: 1.1}}}\n";
  auto plan = PlanReload(old_text, new_text);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->applied,
            (std::vector<std::string>{"pools: ~ -> {spot: {prices: {H100: 1.1}}}", "queues.batch: added {name: batch}",
                                      "queues.prod: removed (its jobs have no quota now)",
                                      "queues.research: {name: research, limit: 32} -> {name: research, limit: 16}",
                                      "slurm: ~ -> {qos: {high: high}}"}));
  EXPECT_EQ(plan->restart, std::vector<std::string>{"listen"});
  // In force: the old listen, the new queues and mappings.
  auto again = PlanReload(plan->in_force, new_text);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->applied.empty());
  EXPECT_EQ(again->restart, std::vector<std::string>{"listen"});
  auto same = PlanReload(old_text, old_text);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->applied.empty() && same->restart.empty());
}

TEST(PlanReload, AFileThatIsNoYamlIsAnError) { EXPECT_FALSE(PlanReload("queues: []\n", "queues: [\n").ok()); }

}  // namespace
}  // namespace muster::server
