#include "gpu/gpu.h"

#include <cctype>
#include <sstream>

namespace muster::gpu {

std::string GpuTypeFromName(const std::string& name) {
  std::istringstream in(name);
  std::vector<std::string> words;
  std::string w;
  while (in >> w) {
    if (w == "NVIDIA" || w == "Tesla" || w == "GeForce" || w == "Quadro") continue;
    words.push_back(w);
  }
  if (words.empty()) return {};
  auto has_digit = [](const std::string& s) {
    for (char c : s) {
      if (std::isdigit(static_cast<unsigned char>(c))) return true;
    }
    return false;
  };
  std::string type = words[0];
  if (!has_digit(type) && words.size() > 1) type += words[1];
  const size_t dash = type.find('-');
  if (dash != std::string::npos && dash > 0) type.resize(dash);
  std::string clean;
  for (char c : type) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_') clean += c;
  }
  return clean;
}

std::string GpuInventory::GpuType() const { return gpus.empty() ? std::string() : GpuTypeFromName(gpus[0].name); }

bool IsApplicationXid(int64_t xid) {
  switch (xid) {
    case 13:
    case 31:
    case 43:
    case 45:
    case 68:
    case 109:
      return true;
    default:
      return false;
  }
}

}  // namespace muster::gpu
