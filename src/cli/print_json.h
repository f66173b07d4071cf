// Printing a JSON value for -o json and -o yaml: JSON indented by two,
// or YAML with every string a YAML reader would take for something else
// ("true", "0x10", "2026-11-27") double-quoted.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace muster::cli {

// `output` is "json" or "yaml".
void Print(const nlohmann::json& j, const std::string& output);

}  // namespace muster::cli
