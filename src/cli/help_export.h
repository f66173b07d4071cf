// The command's own help, exported: man pages and a bash completion script,
// both made from the same CLI11 command tree that parses the command line,
// so they cannot drift from what `muster ... --help` says.
//
//   muster man --dir DIR       writes muster.1 and muster-COMMAND.1 for
//                              every command (the Debian package ships them)
//   muster completion bash     prints the completion script (source it, or
//                              install it as bash-completion's "muster")
//
// The pages are roff (man(7) macros): NAME, SYNOPSIS, DESCRIPTION, the
// command's OPTIONS, then one subsection per nested command with its own
// options. The completion completes command words at each level, the flags
// of the command typed so far, and files for what follows a flag that
// takes a value.
#pragma once

#include <string>

#include "common/status.h"

namespace CLI {
class App;
}

namespace muster::cli {

// The pages of `app` (the root "muster" and each visible command) written
// into `dir`, which must exist. Returns how many were written.
StatusOr<int> WriteManPages(const CLI::App& app, const std::string& dir, const std::string& version);

// One man page: the root's when `command` is null, else that command's.
std::string ManPage(const CLI::App& root, const CLI::App* command, const std::string& version);

// A bash script defining the completion of `muster` (complete -F).
std::string BashCompletion(const CLI::App& app);

}  // namespace muster::cli
