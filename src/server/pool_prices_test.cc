#include "server/pool_prices.h"

#include <gtest/gtest.h>

#include "config/yaml_fields.h"

namespace muster::server {
namespace {

StatusOr<PoolPrices> PricesFrom(const std::string& yaml) {
  auto root = config::LoadYaml(yaml, "test");
  if (!root.ok()) return root.status();
  return ReadPoolPrices((*root)["prices"], (*root)["pools"]);
}

TEST(PoolPrices, APoolsPriceComesBeforeThePriceByType) {
  auto p = PricesFrom(
      "prices: {H100: 3.2, \"*\": 1.0}\n"
      "pools:\n"
      "  spot: {prices: {H100: 1.1}}\n"
      "  reserved-east: {prices: {\"*\": 2.0}}\n"
      "  lab: {}\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_DOUBLE_EQ(p->PerGpuHour("spot", "H100"), 1.1);
  EXPECT_DOUBLE_EQ(p->PerGpuHour("spot", "A100"), 1.0);  // no spot price for it: `prices` "*"
  EXPECT_DOUBLE_EQ(p->PerGpuHour("reserved-east", "H100"), 2.0);
  EXPECT_DOUBLE_EQ(p->PerGpuHour("lab", "H100"), 3.2);  // a pool without prices
  EXPECT_DOUBLE_EQ(p->PerGpuHour("on-demand", "H100"), 3.2);
  EXPECT_DOUBLE_EQ(p->PerGpuHour("", "L4"), 1.0);
  EXPECT_DOUBLE_EQ(PoolPrices{}.PerGpuHour("spot", "H100"), 0);
}

TEST(PoolPrices, ANodeIsInTheFirstPoolItsFeaturesName) {
  auto p = PricesFrom("pools: {reserved-east: {prices: {\"*\": 2}}, lab: {}}\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->PoolOf({"a100", "reserved-east", "on-demand"}), "reserved-east");
  EXPECT_EQ(p->PoolOf({"spot", "lab", "reserved-east"}), "lab");  // a named pool before spot
  EXPECT_EQ(p->PoolOf({"spot"}), "spot");
  EXPECT_EQ(p->PoolOf({"a100", "on-demand"}), "on-demand");
  EXPECT_EQ(p->PoolOf({}), "on-demand");
}

TEST(PoolPrices, BadInputNamesTheField) {
  struct Case {
    std::string yaml, field, words;
  };
  const Case cases[] = {
      {"prices: [1, 2]\n", "server.prices", "mapping of GPU type"},
      {"prices: {H100: -1}\n", "server.prices.\"H100\"", ""},
      {"pools: [spot]\n", "server.pools", "mapping of pool name"},
      {"pools: {\"bad name\": {}}\n", "server.pools", "1 to 64 letters"},
      {"pools: {spot: 3}\n", "server.pools.spot", "mapping {prices}"},
      {"pools: {spot: {price: 3}}\n", "server.pools.spot.price", "did you mean \"prices\""},
      {"pools: {spot: {prices: {H100: lots}}}\n", "server.pools.spot.prices.\"H100\"", ""},
  };
  for (const Case& c : cases) {
    auto p = PricesFrom(c.yaml);
    ASSERT_FALSE(p.ok()) << c.yaml;
    EXPECT_EQ(p.status().field(), c.field) << c.yaml << ": " << p.status().ToString();
    EXPECT_NE(p.status().message().find(c.words), std::string::npos) << c.yaml << ": " << p.status().ToString();
  }
}

}  // namespace
}  // namespace muster::server
