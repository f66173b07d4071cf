// Node: a machine with GPUs of one type, CPUs, memory and topology labels.
//
// Topology is three levels, from near to far: the node itself (GPUs inside a
// node share NVLink), the leaf switch (nodes under one top-of-rack/leaf
// switch), and the spine (leaves joined by one spine). A node with no labels
// is its own leaf under a default spine. Names are interned by ClusterState
// into dense integer ids so the scheduler's indexes are arrays.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/resources.h"

namespace muster::core {

using NodeIndex = int32_t;

struct Topology {
  std::string nvlink_domain;  // informational; the node is the NVLink domain by default
  std::string leaf;           // leaf switch name; empty = the node is alone
  std::string spine;          // spine name; empty = the default spine
  std::string zone;           // informational
};

struct NodeSpec {
  std::string name;
  std::string gpu_type;  // e.g. "H100"; empty for a node without GPUs
  Resources capacity;
  Topology topology;
  // What the node can do beyond its resources ("containers",
  // "gpu-containers", ...). A job that requires features is placed only on
  // nodes that have them all.
  std::vector<std::string> features;
};

// Whether a node with `features` has what a job's `required` names: a
// feature, or a choice of them joined by '|' ("a100|h100": either).
inline bool NodeHasFeature(const std::vector<std::string>& features, std::string_view required) {
  for (size_t start = 0;;) {
    const size_t bar = required.find('|', start);
    const std::string_view one = required.substr(start, bar == std::string_view::npos ? bar : bar - start);
    for (const std::string& f : features) {
      if (f == one) return true;
    }
    if (bar == std::string_view::npos) return false;
    start = bar + 1;
  }
}

// A node feature's name (and a pool's): 1 to 64 letters, digits and ._-.
inline bool IsFeatureName(std::string_view name) {
  return !name.empty() && name.size() <= 64 &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
             std::string_view::npos;
}

// Pools: a node in the spot pool (capacity the cloud may reclaim at short
// notice) has the feature "spot"; every other node has "on-demand", which
// jobs not allowed on spot capacity require (api::ToCoreSpec).
inline constexpr std::string_view kSpotFeature = "spot";
inline constexpr std::string_view kOnDemandFeature = "on-demand";
// Whether `features` (a node's) put it in the spot pool.
inline bool InSpotPool(const std::vector<std::string>& features) {
  for (const std::string& f : features) {
    if (f == kSpotFeature) return true;
  }
  return false;
}
// `features` with "on-demand" added unless it holds "spot" (or already it).
inline std::vector<std::string> WithPoolFeature(std::vector<std::string> features) {
  for (const std::string& f : features) {
    if (f == kSpotFeature || f == kOnDemandFeature) return features;
  }
  features.emplace_back(kOnDemandFeature);
  return features;
}

// Node features as a set of bits, interned by ClusterState (at most
// kMaxNodeFeatures distinct names). A choice "a|b" that jobs require is a
// bit of its own, which every node with a or b has.
using FeatureMask = uint64_t;
inline constexpr int kMaxNodeFeatures = 64;
inline bool HasFeatures(FeatureMask node, FeatureMask required) { return (node & required) == required; }

// The scheduler's view of one node: static facts as dense ids plus the
// current free capacity. Owned by ClusterState.
struct Node {
  NodeSpec spec;
  int32_t gpu_type = 0;      // dense id, see ClusterState::GpuTypeName
  int32_t leaf = 0;          // dense id
  int32_t spine = 0;         // dense id
  FeatureMask features = 0;  // spec.features as bits
  Resources free;            // capacity minus every running allocation
  bool schedulable = true;   // false when cordoned, draining, unreachable or lost
};

}  // namespace muster::core
