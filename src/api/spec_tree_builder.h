// TreeBuilder: assembles a TreeNode tree from parser events (internal to the
// JSON and YAML loaders).
//
// Both parsers report a document as a stream of events: start a list or an
// object, a key, a scalar, end. TreeBuilder keeps the stack of open
// containers, attaches each finished node to its parent and enforces
// kMaxDepth and kMaxNodes as nodes arrive, so a hostile document is refused
// at depth 33 or value 100,001 without ever being built whole. Errors are returned as messages (the
// loaders add the "spec" field and the position).
//
// Thread-safety: one builder per parse.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/spec_tree.h"

namespace muster::api {

class TreeBuilder {
 public:
  // Opens a list or an object inside the current container (or as the root).
  // Returns an error message, or empty on success.
  std::string Open(TreeNode::Kind kind) {
    if (static_cast<int>(stack_.size()) + 1 > kMaxDepth) return DepthError();
    if (++nodes_ > kMaxNodes) return CountError();
    auto node = std::make_shared<TreeNode>();
    node->kind = kind;
    stack_.push_back({std::move(node), std::nullopt});
    return {};
  }

  // Closes the innermost container and attaches it to its parent; returns it
  // (YAML remembers anchored nodes). Precondition: a container is open.
  TreePtr Close() {
    std::shared_ptr<TreeNode> node = std::move(stack_.back().node);
    stack_.pop_back();
    FinishNode(*node);
    Attach(node);
    return node;
  }

  // Adds a finished node (a scalar, or a shared node for a YAML alias).
  // Returns an error message, or empty on success.
  std::string Add(TreePtr node) {
    if (static_cast<int>(stack_.size()) + node->height > kMaxDepth) return DepthError();
    if (++nodes_ > kMaxNodes) return CountError();
    Attach(std::move(node));
    return {};
  }

  // True when the innermost container is an object waiting for a key.
  bool ExpectingKey() const {
    return !stack_.empty() && stack_.back().node->kind == TreeNode::Kind::kMap && !stack_.back().key.has_value();
  }
  // Sets the key of the next value. Precondition: ExpectingKey().
  void SetKey(std::string key) { stack_.back().key = std::move(key); }

  bool has_root() const { return root_ != nullptr; }
  TreePtr root() const { return root_; }

 private:
  struct Frame {
    std::shared_ptr<TreeNode> node;
    std::optional<std::string> key;  // objects: the key of the value to come
  };

  static std::string DepthError() { return "document is nested deeper than " + std::to_string(kMaxDepth) + " levels"; }

  static std::string CountError() { return "document has more than " + std::to_string(kMaxNodes) + " values"; }

  void Attach(TreePtr node) {
    if (stack_.empty()) {
      root_ = std::move(node);
      return;
    }
    Frame& top = stack_.back();
    if (top.node->kind == TreeNode::Kind::kList) {
      top.node->items.push_back(std::move(node));
    } else {
      top.node->fields.emplace_back(std::move(top.key).value_or(std::string()), std::move(node));
      top.key.reset();
    }
  }

  std::vector<Frame> stack_;
  TreePtr root_;
  size_t nodes_ = 0;
};

}  // namespace muster::api
