#include "server/pool_prices.h"

#include "common/message_text.h"
#include "config/yaml_fields.h"
#include "core/node.h"

namespace muster::server {

namespace {

// A mapping of GPU type ("*": the others) to a price per GPU-hour.
StatusOr<std::map<std::string, double>> ReadTypePrices(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) return InvalidArgument("must be a mapping of GPU type to price per GPU-hour", path);
  std::map<std::string, double> out;
  for (const auto& kv : node) {
    const std::string type = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (type.empty()) return InvalidArgument("a GPU type must be a name", path);
    ASSIGN_OR_RETURN(out[type], config::Number(kv.second, path + "." + QuoteForMessage(type, 64), 0, 1e6));
  }
  return out;
}

}  // namespace

std::string PoolPrices::PoolOf(const std::vector<std::string>& features) const {
  for (const std::string& f : features) {
    if (pools.count(f)) return f;
  }
  return core::InSpotPool(features) ? std::string(core::kSpotFeature) : std::string(core::kOnDemandFeature);
}

double PoolPrices::PerGpuHour(const std::string& pool, const std::string& gpu_type) const {
  if (auto p = pools.find(pool); p != pools.end()) {
    if (auto it = p->second.find(gpu_type); it != p->second.end()) return it->second;
    if (auto any = p->second.find("*"); any != p->second.end()) return any->second;
  }
  if (auto it = by_type.find(gpu_type); it != by_type.end()) return it->second;
  if (auto any = by_type.find("*"); any != by_type.end()) return any->second;
  return 0;
}

StatusOr<PoolPrices> ReadPoolPrices(const YAML::Node& prices, const YAML::Node& pools) {
  PoolPrices out;
  if (prices) {
    ASSIGN_OR_RETURN(out.by_type, ReadTypePrices(prices, "server.prices"));
  }
  if (!pools) return out;
  if (!pools.IsMap()) return InvalidArgument("must be a mapping of pool name to {prices}", "server.pools");
  for (const auto& kv : pools) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (!core::IsFeatureName(name)) {
      return InvalidArgument(
          "a pool name is 1 to 64 letters, digits and ._- (a node feature), got " + QuoteForMessage(name, 64),
          "server.pools");
    }
    const std::string path = "server.pools." + name;
    const YAML::Node& pool = kv.second;
    if (!pool.IsMap()) return InvalidArgument("must be a mapping {prices}", path);
    RETURN_IF_ERROR(config::CheckKeys(pool, {"prices"}, path));
    std::map<std::string, double>& mine = out.pools[name];
    if (pool["prices"]) {
      ASSIGN_OR_RETURN(mine, ReadTypePrices(pool["prices"], path + ".prices"));
    }
  }
  return out;
}

}  // namespace muster::server
