// LoadYamlTree: YAML text -> TreeNode, through yaml-cpp's event parser.
//
// Why events and not YAML::Load: the tree is built directly with the depth
// limit enforced as collections open (YAML::Load would build the whole node
// graph first); we see whether each scalar was quoted (tag "!") or plain
// (tag "?"); and aliases become shared pointers to the anchored node, never
// copies, with their would-be expanded size counted against a budget.
//
// Plain scalars are resolved with YAML 1.2's core schema, narrowed: booleans
// are exactly true/false, integers are decimal, so "yes", "on", "0x10" and
// "1:30" stay strings. The schema decides the rest (spec_tree.h).
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <charconv>
#include <exception>
#include <map>
#include <sstream>
#include <string>

#include "api/spec_tree.h"
#include "api/spec_tree_builder.h"

namespace muster::api {
namespace {

constexpr const char* kStrTag = "tag:yaml.org,2002:str";
constexpr const char* kSeqTag = "tag:yaml.org,2002:seq";
constexpr const char* kMapTag = "tag:yaml.org,2002:map";

// Thrown from the handler to stop the parser; caught in LoadYamlTree.
struct Abort {
  YAML::Mark mark;
  std::string message;
};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string_view StripSign(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return s;
}

// [-+]?[0-9]+
bool IsYamlInt(std::string_view s) { return AllDigits(StripSign(s)); }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, [-+]?.inf, .nan
bool IsYamlFloat(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  s = StripSign(s);
  if (s == ".inf" || s == ".Inf" || s == ".INF") return true;
  const size_t e = s.find_first_of("eE");
  if (e != std::string_view::npos) {
    if (!AllDigits(StripSign(s.substr(e + 1)))) return false;
    s = s.substr(0, e);
  }
  const size_t dot = s.find('.');
  if (dot == std::string_view::npos) return AllDigits(s);
  const std::string_view whole = s.substr(0, dot), frac = s.substr(dot + 1);
  if (whole.empty()) return AllDigits(frac);
  return AllDigits(whole) && (frac.empty() || AllDigits(frac));
}

std::shared_ptr<TreeNode> ResolvePlain(const std::string& value) {
  auto n = std::make_shared<TreeNode>();
  n->plain = true;
  n->text = value;
  if (value == "true" || value == "false") {
    n->kind = TreeNode::Kind::kBool;
    n->boolean = value == "true";
  } else if (IsYamlInt(value)) {
    std::string_view digits = value;
    if (digits[0] == '+') digits.remove_prefix(1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n->integer);
    n->kind = ec == std::errc() ? TreeNode::Kind::kInt : TreeNode::Kind::kDouble;
  } else if (IsYamlFloat(value)) {
    n->kind = TreeNode::Kind::kDouble;
  } else {
    n->kind = TreeNode::Kind::kString;
  }
  return n;
}

class YamlTreeHandler final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) throw Abort{mark, "expected one YAML document, found a second"};
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (builder_.ExpectingKey()) throw Abort{mark, "object keys must be strings, got null"};
    auto n = std::make_shared<TreeNode>();
    n->plain = true;
    Remember(anchor, n);
    Add(mark, std::move(n));
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw Abort{mark, "an alias refers to the node that contains it"};
    const TreePtr& node = it->second;
    alias_weight_ += node->weight;
    if (alias_weight_ > kMaxDocumentBytes) {
      throw Abort{mark, "aliases expand the document beyond 4 MiB"};
    }
    if (builder_.ExpectingKey()) {
      if (!node->is_scalar() || node->kind == TreeNode::Kind::kNull) {
        throw Abort{mark, "object keys must be strings"};
      }
      builder_.SetKey(node->text);
      return;
    }
    Add(mark, node);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    std::shared_ptr<TreeNode> n;
    if (tag == "?") {
      n = ResolvePlain(value);
    } else if (tag == "!" || tag == kStrTag) {
      n = std::make_shared<TreeNode>();
      n->kind = TreeNode::Kind::kString;
      n->text = value;
    } else {
      throw Abort{mark, "unsupported YAML tag " + QuoteForMessage(tag)};
    }
    FinishNode(*n);
    Remember(anchor, n);
    if (builder_.ExpectingKey()) {
      builder_.SetKey(value);
      return;
    }
    Add(mark, std::move(n));
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, tag, kSeqTag, TreeNode::Kind::kList, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, tag, kMapTag, TreeNode::Kind::kMap, anchor);
  }
  void OnMapEnd() override { Close(); }

  TreePtr root() const { return builder_.root(); }

 private:
  void Open(const YAML::Mark& mark, const std::string& tag, const char* own_tag, TreeNode::Kind kind,
            YAML::anchor_t anchor) {
    if (tag != "?" && tag != own_tag) throw Abort{mark, "unsupported YAML tag " + QuoteForMessage(tag)};
    if (builder_.ExpectingKey()) throw Abort{mark, "object keys must be strings"};
    const std::string error = builder_.Open(kind);
    if (!error.empty()) throw Abort{mark, error};
    open_anchors_.push_back(anchor);
  }
  void Close() {
    TreePtr node = builder_.Close();
    Remember(open_anchors_.back(), node);
    open_anchors_.pop_back();
  }
  void Add(const YAML::Mark& mark, TreePtr node) {
    const std::string error = builder_.Add(std::move(node));
    if (!error.empty()) throw Abort{mark, error};
  }
  void Remember(YAML::anchor_t anchor, TreePtr node) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = std::move(node);
  }

  TreeBuilder builder_;
  std::map<YAML::anchor_t, TreePtr> anchors_;  // finished anchored nodes
  std::vector<YAML::anchor_t> open_anchors_;   // anchors of the open collections
  size_t alias_weight_ = 0;
  int documents_ = 0;
};

Status YamlError(const YAML::Mark& mark, const std::string& message) {
  std::string where;
  if (!mark.is_null()) {
    where = " at line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
  }
  return InvalidArgument("invalid YAML" + where + ": " + SanitizeForMessage(message), "spec");
}

}  // namespace

StatusOr<TreePtr> LoadYamlTree(std::string_view text) {
  RETURN_IF_ERROR(CheckDocumentSize(text));
  YamlTreeHandler handler;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    // The handler aborts on a second document, so this loop runs at most twice.
    while (parser.HandleNextDocument(handler)) {
    }
  } catch (const Abort& a) {
    return YamlError(a.mark, a.message);
  } catch (const YAML::Exception& e) {
    return YamlError(e.mark, e.msg);
  } catch (const std::exception& e) {
    return YamlError(YAML::Mark::null_mark(), e.what());
  }
  if (handler.root() == nullptr) {
    return InvalidArgument("must be an object with the job's fields, got an empty document", "spec");
  }
  return handler.root();
}

}  // namespace muster::api
