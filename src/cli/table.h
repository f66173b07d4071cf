// PrintTable: rows as aligned columns, two spaces apart, the last column
// unpadded (what `muster get` and the token and audit commands print).
#pragma once

#include <iostream>
#include <string>
#include <vector>

namespace muster::cli {

void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out = std::cout);

}  // namespace muster::cli
