#include "scheduler/feature_views.h"

namespace muster::scheduler {

void FeatureViews::Build(std::span<const core::Node> nodes, int32_t num_types, int32_t num_leaves,
                         std::span<const int32_t> leaf_spine, bool use_capacity) {
  all_.Build(nodes, num_types, num_leaves, leaf_spine, use_capacity);
  views_.clear();
}

void FeatureViews::SetAvail(NodeIndex n, const Resources& avail) {
  all_.SetAvail(n, avail);
  for (auto& [required, view] : views_) {
    if (view && view->indexed(n)) view->SetAvail(n, avail);
  }
}

void FeatureViews::Drop(NodeIndex n) {
  if (!all_.indexed(n)) return;
  all_.Drop(n);
  for (auto& [required, view] : views_) {
    if (view && view->indexed(n)) view->Drop(n);
  }
}

const FreeIndex& FeatureViews::For(core::FeatureMask required, std::span<const core::Node> nodes) {
  if (required == 0) return all_;
  auto [it, inserted] = views_.try_emplace(required);
  if (inserted) {
    std::vector<NodeIndex> lacking;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const auto n = static_cast<NodeIndex>(i);
      if (all_.indexed(n) && !core::HasFeatures(nodes[i].features, required)) lacking.push_back(n);
    }
    if (!lacking.empty()) {
      it->second.emplace(all_);
      for (NodeIndex n : lacking) it->second->Drop(n);
    }
  }
  return it->second ? *it->second : all_;
}

}  // namespace muster::scheduler
