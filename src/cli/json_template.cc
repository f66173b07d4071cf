#include "cli/json_template.h"

#include <charconv>
#include <memory>

namespace muster::cli {
namespace {

using nlohmann::json;

// One step of a path.
struct Step {
  enum Kind { kField, kIndex, kAll } kind = kField;
  std::string name;
  int64_t index = 0;
};

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

StatusOr<std::vector<Step>> ParsePath(std::string_view p, const char* what) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument(why + " in path \"" + std::string(p.substr(0, 128)) + "\"", what);
  };
  std::vector<Step> steps;
  size_t i = 0;
  if (p == "." || p == "@") return steps;
  if (!p.empty() && p[0] == '@') ++i;  // kubectl's current object
  while (i < p.size()) {
    if (p[i] == '.') {
      ++i;
      if (i < p.size() && p[i] == '*') {
        steps.push_back({Step::kAll, "", 0});
        ++i;
        continue;
      }
      const size_t start = i;
      while (i < p.size() && NameChar(p[i])) ++i;
      if (i == start) return bad("a field name must follow .");
      steps.push_back({Step::kField, std::string(p.substr(start, i - start)), 0});
    } else if (p[i] == '[') {
      const size_t close = p.find(']', i);
      if (close == std::string_view::npos) return bad("[ without ]");
      std::string_view inside = p.substr(i + 1, close - i - 1);
      i = close + 1;
      if (inside == "*") {
        steps.push_back({Step::kAll, "", 0});
      } else if (inside.size() >= 2 && (inside.front() == '\'' || inside.front() == '"') &&
                 inside.back() == inside.front()) {
        steps.push_back({Step::kField, std::string(inside.substr(1, inside.size() - 2)), 0});
      } else {
        int64_t n = 0;
        auto [end, ec] = std::from_chars(inside.data(), inside.data() + inside.size(), n);
        if (inside.empty() || ec != std::errc() || end != inside.data() + inside.size()) {
          return bad("[" + std::string(inside.substr(0, 32)) + "] is neither [N], [*] nor ['name']");
        }
        steps.push_back({Step::kIndex, "", n});
      }
    } else {
      return bad("expected . or [ at \"" + std::string(p.substr(i, 16)) + "\"");
    }
  }
  return steps;
}

std::vector<const json*> Eval(const json& from, const std::vector<Step>& steps) {
  std::vector<const json*> now = {&from}, next;
  for (const Step& s : steps) {
    next.clear();
    for (const json* v : now) {
      switch (s.kind) {
        case Step::kField:
          if (v->is_object() && v->contains(s.name)) next.push_back(&(*v)[s.name]);
          break;
        case Step::kIndex:
          if (v->is_array()) {
            const int64_t n = static_cast<int64_t>(v->size());
            const int64_t at = s.index < 0 ? n + s.index : s.index;
            if (at >= 0 && at < n) next.push_back(&(*v)[static_cast<size_t>(at)]);
          }
          break;
        case Step::kAll:
          if (v->is_array() || v->is_object()) {
            for (const json& e : *v) next.push_back(&e);
          }
          break;
      }
    }
    now.swap(next);
  }
  return now;
}

std::string Text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

// A parsed template: text, a path, or a range over a path with a body.
struct Node {
  enum Kind { kText, kPath, kRange } kind = kText;
  std::string text;
  std::vector<Step> path;
  std::vector<Node> body;
};

StatusOr<std::string> Literal(std::string_view quoted) {
  std::string out;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    if (quoted[i] != '\\') {
      out += quoted[i];
      continue;
    }
    const char c = ++i + 1 < quoted.size() ? quoted[i] : '\0';
    if (c == 'n')
      out += '\n';
    else if (c == 't')
      out += '\t';
    else if (c == '"' || c == '\\')
      out += c;
    else
      return InvalidArgument("unknown escape \\" + std::string(1, c) + " in " + std::string(quoted), "-o jsonpath");
  }
  return out;
}

// Parses from `t` at `i` until {end} (when `in_range`) or the end.
StatusOr<std::vector<Node>> Parse(std::string_view t, size_t& i, bool in_range) {
  std::vector<Node> out;
  std::string text;
  auto flush = [&] {
    if (!text.empty()) out.push_back({Node::kText, std::move(text), {}, {}});
    text.clear();
  };
  while (i < t.size()) {
    if (t[i] != '{') {
      text += t[i++];
      continue;
    }
    // The expression's end: the first } outside a quoted literal.
    size_t j = i + 1;
    bool quoted = false;
    for (; j < t.size() && (quoted || t[j] != '}'); ++j) {
      if (t[j] == '\\' && quoted)
        ++j;
      else if (t[j] == '"')
        quoted = !quoted;
    }
    if (j >= t.size()) return InvalidArgument("a { without its }", "-o jsonpath");
    std::string_view e = t.substr(i + 1, j - i - 1);
    while (!e.empty() && e.front() == ' ') e.remove_prefix(1);
    while (!e.empty() && e.back() == ' ') e.remove_suffix(1);
    i = j + 1;
    flush();
    if (e == "end") {
      if (!in_range) return InvalidArgument("{end} without {range}", "-o jsonpath");
      return out;
    }
    if (e.rfind("range ", 0) == 0) {
      Node r{Node::kRange, "", {}, {}};
      ASSIGN_OR_RETURN(r.path, ParsePath(e.substr(6), "-o jsonpath"));
      ASSIGN_OR_RETURN(r.body, Parse(t, i, true));
      out.push_back(std::move(r));
    } else if (!e.empty() && e.front() == '"') {
      if (e.size() < 2 || e.back() != '"')
        return InvalidArgument("an unclosed \" in {" + std::string(e) + "}", "-o jsonpath");
      ASSIGN_OR_RETURN(std::string lit, Literal(e));
      out.push_back({Node::kText, std::move(lit), {}, {}});
    } else {
      Node n{Node::kPath, "", {}, {}};
      ASSIGN_OR_RETURN(n.path, ParsePath(e, "-o jsonpath"));
      out.push_back(std::move(n));
    }
  }
  flush();
  if (in_range) return InvalidArgument("{range} without {end}", "-o jsonpath");
  return out;
}

void Render(const std::vector<Node>& nodes, const json& current, std::string& out) {
  for (const Node& n : nodes) {
    switch (n.kind) {
      case Node::kText:
        out += n.text;
        break;
      case Node::kPath: {
        bool first = true;
        for (const json* v : Eval(current, n.path)) {
          out += (first ? "" : " ") + Text(*v);
          first = false;
        }
        break;
      }
      case Node::kRange:
        for (const json* v : Eval(current, n.path)) Render(n.body, *v, out);
        break;
    }
  }
}

}  // namespace

StatusOr<std::string> RenderJsonPath(const json& root, std::string_view tmpl) {
  size_t i = 0;
  ASSIGN_OR_RETURN(std::vector<Node> nodes, Parse(tmpl, i, false));
  std::string out;
  Render(nodes, root, out);
  return out;
}

StatusOr<std::vector<std::vector<std::string>>> CustomColumns(const json& items, std::string_view spec) {
  std::vector<std::string> headers;
  std::vector<std::vector<Step>> paths;
  while (true) {
    const size_t comma = spec.find(',');
    std::string_view column = spec.substr(0, comma);
    const size_t colon = column.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return InvalidArgument(
          "each column is HEADER:PATH (ID:.id,STATE:.state), got \"" + std::string(column.substr(0, 64)) + "\"",
          "-o custom-columns");
    }
    std::string_view path = column.substr(colon + 1);
    if (path.size() >= 2 && path.front() == '{' && path.back() == '}') path = path.substr(1, path.size() - 2);
    headers.emplace_back(column.substr(0, colon));
    ASSIGN_OR_RETURN(std::vector<Step> steps, ParsePath(path, "-o custom-columns"));
    paths.push_back(std::move(steps));
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  std::vector<std::vector<std::string>> rows = {headers};
  for (const json& item : items) {
    std::vector<std::string> row;
    for (const auto& p : paths) {
      std::string cell;
      for (const json* v : Eval(item, p)) cell += (cell.empty() ? "" : ",") + Text(*v);
      row.push_back(cell.empty() ? "<none>" : cell);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace muster::cli
