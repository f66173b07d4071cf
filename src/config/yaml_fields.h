// Schema-driven reading of YAML configuration: each helper converts one
// field to its expected type or returns InvalidArgument naming the field's
// full path ("server.scheduler.maxReservations: must be an integer >= 0,
// got \"many\""). yaml-cpp's own conversions are not used, so "on" never
// becomes true and "08" never becomes 8 by accident.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace muster::config {

// Rejects keys of `map` not in `known`, suggesting the closest known key.
Status CheckKeys(const YAML::Node& map, const std::vector<std::string>& known, const std::string& path);
StatusOr<int64_t> Int(const YAML::Node& v, const std::string& path, int64_t min, int64_t max = INT64_MAX);
StatusOr<std::string> Str(const YAML::Node& v, const std::string& path);
// A decimal number from 0 to 1 ("0.3", "1").
StatusOr<double> Fraction(const YAML::Node& v, const std::string& path);
// A plain decimal number from `min` to `max` (a price: 3.20).
StatusOr<double> Number(const YAML::Node& v, const std::string& path, double min, double max);
StatusOr<bool> Bool(const YAML::Node& v, const std::string& path);
StatusOr<Duration> Dur(const YAML::Node& v, const std::string& path);
StatusOr<int64_t> CpuMilli(const YAML::Node& v, const std::string& path);
StatusOr<int64_t> MemoryBytes(const YAML::Node& v, const std::string& path);
// Parses `text` as YAML; syntax errors name `source` and the line.
StatusOr<YAML::Node> LoadYaml(const std::string& text, const std::string& source);

}  // namespace muster::config
