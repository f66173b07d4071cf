// The `muster` command line: subcommands as a library; cmd/muster/main.cc
// only calls RunMuster().
//
// Exit codes: 0 success, 1 the command ran and failed (or was rejected),
// 2 usage error (unknown flag, missing argument).
#pragma once

#include <iosfwd>

namespace muster::cli {

int RunMuster(int argc, char** argv);

}  // namespace muster::cli
