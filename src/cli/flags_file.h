// ReadFlagsFile: a command's flags from a YAML file (`muster agent -c
// /etc/muster/agent.yaml`), as if given before the command line's.
//
// The file is a mapping of long flag names without their dashes to values:
//   server: https://muster.example.com:8470
//   name: gpu-07
//   feature: [ib, nvlink]     # a flag given more than once: a list
//   spot: true                # a flag that takes no value: true or false
// A flag given on the command line wins over the file's (a list on the
// command line replaces the file's). An unknown key, a value of the wrong
// kind, or a value the flag refuses is an error naming the file and key.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace muster::cli {

// Applies `path` to the options of `app` the command line did not give.
// Call once `app` has parsed its command line (a parse_complete_callback).
Status ReadFlagsFile(const std::string& path, CLI::App& app);

}  // namespace muster::cli
