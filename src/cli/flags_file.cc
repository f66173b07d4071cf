#include "cli/flags_file.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace muster::cli {

Status ReadFlagsFile(const std::string& path, CLI::App& app) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, "cannot open " + path);
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ": not YAML: " + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return InvalidArgument(path + ": must be a mapping of flag names to values");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>("");
    const std::string at = path + ": " + key;
    CLI::Option* opt = key.empty() || key == "config" || key == "help" ? nullptr : app.get_option_no_throw("--" + key);
    if (opt == nullptr)
      return InvalidArgument(at + ": no such flag (`muster " + app.get_name() + " --help` lists them)");
    if (opt->count() > 0) continue;  // the command line's
    std::vector<std::string> values;
    const YAML::Node& v = kv.second;
    if (v.IsScalar()) {
      values.push_back(v.Scalar());
    } else if (v.IsSequence() && opt->get_expected_max() > 1) {
      for (const YAML::Node& item : v) {
        if (!item.IsScalar()) return InvalidArgument(at + ": must be a list of values");
        values.push_back(item.Scalar());
      }
    } else {
      return InvalidArgument(
          at + (opt->get_expected_max() > 1 ? ": must be a value or a list of values" : ": must be one value"));
    }
    try {
      for (const std::string& one : values) opt->add_result(one);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      return InvalidArgument(at + ": " + e.what());
    }
  }
  return Status::Ok();
}

}  // namespace muster::cli
