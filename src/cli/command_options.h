// Command-line options as getopt_long reads them, for Slurm's query commands
// (squeue, scancel, sacct, sinfo): `-x VALUE`, `-xVALUE`, grouped flags
// (`-hl`), `--name=VALUE`, `--name VALUE`, any unambiguous prefix of a
// long name, and words that are not options kept in order (after `--`,
// all of them).
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::cli {

struct CommandOption {
  char short_name = 0;  // 0: none
  std::string_view long_name;
  bool takes_value = false;
};

struct CommandLine {
  // By long name: each value given, in order ("" for a flag).
  std::map<std::string, std::vector<std::string>> options;
  std::vector<std::string> words;

  bool Has(const std::string& name) const { return options.count(name) > 0; }
  // The last value given, or `fallback`.
  std::string Last(const std::string& name, const std::string& fallback = "") const;
  // Every value given, each split at commas.
  std::vector<std::string> List(const std::string& name) const;
};

// InvalidArgument naming the option for an unknown or ambiguous one, or a
// missing or unwanted value.
StatusOr<CommandLine> ReadCommandLine(const std::vector<std::string>& args, std::span<const CommandOption> table);

}  // namespace muster::cli
