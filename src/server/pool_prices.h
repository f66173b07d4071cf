// PoolPrices: what a GPU-hour costs, by pool and GPU type, and which pool
// a node is in.
//
//   prices: {H100: 3.20, A100: 1.60, "*": 1.00}   # any node without a pool price
//   pools:
//     spot:      {prices: {H100: 1.10, "*": 0.40}}
//     on-demand: {prices: {H100: 3.20}}
//     reserved-east: {prices: {"*": 2.00}}        # nodes with feature reserved-east
//
// A pool named in `pools` holds every node with the node feature of its
// name (`muster agent --pool NAME`, a node list's `pool: NAME`); a node
// with none of them is in "spot" when it has that feature, else in
// "on-demand" (core/node.h). Where a node has several, the first of its
// features that names a pool decides.
//
// The price of a GPU-hour of type T in pool P: P's price of T, else P's
// "*", else `prices` of T, else `prices` "*", else 0.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace muster::server {

struct PoolPrices {
  std::map<std::string, double> by_type;                       // `prices`
  std::map<std::string, std::map<std::string, double>> pools;  // `pools`: name -> type -> price

  // The pool of a node with these features.
  std::string PoolOf(const std::vector<std::string>& features) const;
  // Per GPU-hour of `gpu_type` in `pool` ("" or an unknown pool: `prices`).
  double PerGpuHour(const std::string& pool, const std::string& gpu_type) const;
};

// Reads the server file's `prices` and `pools` (either may be absent);
// errors name the field, as "server.pools.spot.prices.H100".
StatusOr<PoolPrices> ReadPoolPrices(const YAML::Node& prices, const YAML::Node& pools);

}  // namespace muster::server
