// LoadJsonTree: JSON text -> TreeNode, through nlohmann_json's SAX interface.
//
// SAX rather than json::parse because the tree is built directly (no DOM to
// convert), the depth limit stops a hostile document at level 33 (the SAX
// parser itself keeps no recursion), and number tokens arrive with the text
// they were written as.
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "api/spec_tree.h"
#include "api/spec_tree_builder.h"

namespace muster::api {
namespace {

using Json = nlohmann::json;

class JsonTreeSax final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return Scalar(TreeNode::Kind::kNull, ""); }
  bool boolean(bool v) override {
    auto n = Make(TreeNode::Kind::kBool, v ? "true" : "false");
    n->boolean = v;
    return Add(std::move(n));
  }
  bool number_integer(number_integer_t v) override {
    auto n = Make(TreeNode::Kind::kInt, std::to_string(v));
    n->integer = v;
    return Add(std::move(n));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<number_unsigned_t>(std::numeric_limits<int64_t>::max())) {
      return Scalar(TreeNode::Kind::kDouble, std::to_string(v));
    }
    return number_integer(static_cast<number_integer_t>(v));
  }
  bool number_float(number_float_t, const string_t& text) override { return Scalar(TreeNode::Kind::kDouble, text); }
  bool string(string_t& v) override { return Scalar(TreeNode::Kind::kString, std::move(v)); }
  bool binary(binary_t&) override { return Fail("binary values are not supported"); }
  bool start_object(std::size_t) override { return Check(builder_.Open(TreeNode::Kind::kMap)); }
  bool key(string_t& k) override {
    builder_.SetKey(std::move(k));
    return true;
  }
  bool end_object() override {
    builder_.Close();
    return true;
  }
  bool start_array(std::size_t) override { return Check(builder_.Open(TreeNode::Kind::kList)); }
  bool end_array() override {
    builder_.Close();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 9: ...".
    std::string what = ex.what();
    const size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    return Fail("invalid JSON: " + what);
  }

  const std::string& error() const { return error_; }
  TreePtr root() const { return builder_.root(); }

 private:
  static std::shared_ptr<TreeNode> Make(TreeNode::Kind kind, std::string text) {
    auto n = std::make_shared<TreeNode>();
    n->kind = kind;
    n->text = std::move(text);
    return n;
  }
  bool Scalar(TreeNode::Kind kind, std::string text) { return Add(Make(kind, std::move(text))); }
  bool Add(std::shared_ptr<TreeNode> n) {
    FinishNode(*n);
    return Check(builder_.Add(std::move(n)));
  }
  bool Check(const std::string& error) { return error.empty() || Fail(error); }
  bool Fail(const std::string& message) {
    if (error_.empty()) error_ = message;
    return false;
  }

  TreeBuilder builder_;
  std::string error_;
};

}  // namespace

StatusOr<TreePtr> LoadJsonTree(std::string_view text) {
  RETURN_IF_ERROR(CheckDocumentSize(text));
  JsonTreeSax sax;
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &sax, nlohmann::json::input_format_t::json,
                         /*strict=*/true);
  } catch (const std::exception& e) {
    return InvalidArgument("invalid JSON: " + SanitizeForMessage(e.what()), "spec");
  }
  if (!ok || sax.root() == nullptr) {
    const std::string& error = sax.error().empty() ? "invalid JSON" : sax.error();
    return InvalidArgument(SanitizeForMessage(error), "spec");
  }
  return sax.root();
}

}  // namespace muster::api
