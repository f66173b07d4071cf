// Where a job's output goes when it names a file (the spec's stdout and
// stderr, Slurm's --output and --error): a path with Slurm's replacement
// symbols, expanded for each replica.
//
//   %j  the job's id            %x  the job's name
//   %a  its array index (0 outside arrays)
//   %A  its array's first job id (%j outside arrays)
//   %t  the replica (task) index   %u  the user   %N  the node
//   %n  the node's number in the job (0: its first node)
//   %%  a '%'
//
//   "/shared/logs/%x-%j.%t.out" -> "/shared/logs/train-42.0.out"
//
// A relative path is relative to the job's working directory. Slurm's field
// widths (%4j) and other letters are refused, saying which symbols exist.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::api {

// InvalidArgument naming `field` when `pattern` holds a symbol not above.
Status CheckOutputPattern(std::string_view pattern, const std::string& field);

struct OutputNames {
  int64_t job = 0;
  int64_t array_first = 0;  // 0: not an array task
  int32_t array_index = -1;
  int32_t replica = 0;
  int32_t node_number = 0;
  std::string name, user, node;
};

// The pattern with its symbols replaced (it must pass CheckOutputPattern).
std::string ExpandOutputPattern(std::string_view pattern, const OutputNames& n);

}  // namespace muster::api
