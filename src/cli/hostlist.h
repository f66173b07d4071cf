// Slurm's host lists: "n[001-004,007],gpu-a1" stands for n001, n002,
// n003, n004, n007 and gpu-a1. A bracket holds numbers and ranges whose
// zero padding is kept; an item may hold several brackets (rack[1-2]-n[1-2]
// is every combination, in order). Compressing groups names that differ
// only in a trailing number of the same width, in the order given.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace muster::cli {

// The names `list` stands for, in order. InvalidArgument for an unclosed
// bracket, a range that runs backwards, or more than `max_hosts` names.
StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& list, size_t max_hosts = 1'000'000);

// `hosts` as a host list ("n[001-004,007],gpu-a1").
std::string CompressHostlist(const std::vector<std::string>& hosts);

}  // namespace muster::cli
