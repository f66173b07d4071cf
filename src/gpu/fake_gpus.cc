#include "gpu/fake_gpus.h"

#include <cctype>
#include <cstdio>
#include <functional>

namespace muster::gpu {

StatusOr<GpuInventory> FakeGpus(const std::string& what, const std::string& node_name) {
  const size_t x = what.find('x');
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--fake-gpus: " + why + ", got \"" + what.substr(0, 64) + "\" (expected COUNTxTYPE, like 8xH100)",
                           "fake-gpus");
  };
  if (x == std::string::npos || x == 0 || x + 1 >= what.size()) return bad("missing count or type");
  int count = 0;
  for (size_t i = 0; i < x; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(what[i]))) return bad("the count must be a number");
    count = count * 10 + (what[i] - '0');
    if (count > 64) return bad("the count must be 1..64");
  }
  if (count < 1) return bad("the count must be 1..64");
  const std::string type = what.substr(x + 1);
  if (type.size() > 64) return bad("the type is longer than 64 characters");
  for (char c : type) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return bad("the type may use letters, digits, '.', '_' and '-'");
    }
  }
  GpuInventory inv;
  inv.source = "fake";
  inv.note = std::to_string(count) + " fake " + type + " GPUs (--fake-gpus)";
  const size_t h = std::hash<std::string>{}(node_name);
  for (int i = 0; i < count; ++i) {
    GpuDevice d;
    d.index = i;
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-fa4e%04x-%04x-4000-8000-%012x", static_cast<unsigned>(h & 0xffff),
                  static_cast<unsigned>((h >> 16) & 0xffff), i);
    d.uuid = uuid;
    d.name = "NVIDIA " + type;
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + i);
    d.pci_bus_id = bus;
    d.memory_bytes = 80LL << 30;
    d.numa_node = i < count / 2 ? 0 : 1;
    inv.gpus.push_back(d);
  }
  return inv;
}

}  // namespace muster::gpu
