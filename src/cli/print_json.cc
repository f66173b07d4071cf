#include "cli/print_json.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <iostream>

namespace muster::cli {
namespace {

using nlohmann::json;

// True when a YAML reader would not take `s`, written plain, for this
// string: empty, a YAML 1.1 or 1.2 boolean or null word (yes, off, ~), or
// anything that starts like a number, date or time (42, 0x10, .5, -1,
// 2026-11-27, 1:30). Those are written double-quoted; over-quoting is
// harmless, under-quoting turns "true" into true and "0x10" into 16.
bool NeedsQuotes(const std::string& s) {
  static const char* const kWords[] = {"y", "yes", "n", "no", "true", "false", "on", "off", "null", "~"};
  if (s.empty()) return true;
  std::string lower = s;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* w : kWords) {
    if (lower == w) return true;
  }
  const char first = s[0];
  return std::isdigit(static_cast<unsigned char>(first)) || first == '-' || first == '+' || first == '.';
}

void EmitYaml(YAML::Emitter& e, const json& j) {
  if (j.is_object()) {
    e << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      e << YAML::Key;
      if (NeedsQuotes(it.key())) e << YAML::DoubleQuoted;
      e << it.key() << YAML::Value;
      EmitYaml(e, it.value());
    }
    e << YAML::EndMap;
  } else if (j.is_array()) {
    e << YAML::BeginSeq;
    for (const auto& v : j) EmitYaml(e, v);
    e << YAML::EndSeq;
  } else if (j.is_string()) {
    const std::string& v = j.get_ref<const std::string&>();
    if (NeedsQuotes(v)) e << YAML::DoubleQuoted;
    e << v;
  } else if (j.is_null()) {
    e << YAML::Null;
  } else {
    e << j.dump();  // numbers and booleans, plain
  }
}

}  // namespace

void Print(const json& j, const std::string& output) {
  if (output == "json") {
    std::cout << j.dump(2) << "\n";
  } else {
    YAML::Emitter e;
    EmitYaml(e, j);
    std::cout << e.c_str() << "\n";
  }
}

}  // namespace muster::cli
