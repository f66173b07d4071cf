#include "api/spec_tree.h"

#include "common/message_text.h"

#include <algorithm>
#include <cstdio>

namespace muster::api {
namespace {}  // namespace

void FinishNode(TreeNode& node) {
  constexpr size_t kCap = size_t{1} << 62;  // saturate well below overflow
  int height = 0;
  size_t weight = 1 + node.text.size();
  const auto add = [&](const TreePtr& child) {
    height = std::max(height, child->height);
    weight = std::min(kCap, weight + child->weight);
  };
  for (const TreePtr& item : node.items) add(item);
  for (const auto& [key, value] : node.fields) {
    weight = std::min(kCap, weight + key.size());
    add(value);
  }
  node.height = node.is_scalar() ? 0 : height + 1;
  node.weight = weight;
}

Status CheckDocumentSize(std::string_view text) {
  if (text.size() <= kMaxDocumentBytes) return Status::Ok();
  return InvalidArgument("document is " + std::to_string(text.size()) + " bytes; the limit is 4 MiB (" +
                             std::to_string(kMaxDocumentBytes) + " bytes)",
                         "spec");
}

std::string Describe(const TreeNode& node) {
  switch (node.kind) {
    case TreeNode::Kind::kNull:
      return "null";
    case TreeNode::Kind::kBool:
      return node.boolean ? "true" : "false";
    case TreeNode::Kind::kInt:
    case TreeNode::Kind::kDouble:
      return SanitizeForMessage(node.text, 64);
    case TreeNode::Kind::kString:
      return QuoteForMessage(node.text);
    case TreeNode::Kind::kList:
      if (node.items.empty()) return "an empty list";
      return "a list of " + std::to_string(node.items.size()) + (node.items.size() == 1 ? " item" : " items");
    case TreeNode::Kind::kMap:
      if (node.fields.empty()) return "an empty object";
      return "an object with " + std::to_string(node.fields.size()) + (node.fields.size() == 1 ? " field" : " fields");
  }
  return "?";
}

std::string IndexPath(const std::string& parent, size_t index) { return parent + "[" + std::to_string(index) + "]"; }

bool IsValidUtf8(std::string_view text) {
  uint32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t len = DecodeUtf8(text, i, &cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

}  // namespace muster::api
