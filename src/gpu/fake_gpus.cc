#include "gpu/fake_gpus.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

namespace muster::gpu {

namespace {

StatusOr<GpuInventory> FakeGpusFromFile(const std::string& path, const std::string& node_name) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--fake-gpus: cannot read " + path, "fake-gpus");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  auto bad = [&](const std::string& field, const std::string& why) {
    return InvalidArgument("--fake-gpus: " + path + ": " + field + ": " + why, "fake-gpus");
  };
  if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array()) return bad("gpus", "must be an array of GPUs");
  if (j["gpus"].empty() || j["gpus"].size() > 64) return bad("gpus", "must list 1 to 64 GPUs");
  GpuInventory inv;
  inv.source = "fake";
  inv.note = std::to_string(j["gpus"].size()) + " fake GPUs from " + path;
  const size_t h = std::hash<std::string>{}(node_name);
  for (size_t i = 0; i < j["gpus"].size(); ++i) {
    const nlohmann::json& g = j["gpus"][i];
    const std::string at = "gpus[" + std::to_string(i) + "]";
    if (!g.is_object() || !g.contains("name") || !g["name"].is_string() || g["name"].get<std::string>().empty()) {
      return bad(at + ".name", "must be the GPU's model name");
    }
    GpuDevice d;
    d.index = static_cast<int32_t>(i);
    d.minor = g.contains("minor") && g["minor"].is_number_integer() ? g["minor"].get<int32_t>() : d.index;
    if (g.contains("device")) {
      if (!g["device"].is_string() || g["device"].get<std::string>().rfind('/', 0) != 0) {
        return bad(at + ".device", "must be the absolute path of a device file standing in for the GPU");
      }
      d.device = g["device"];
    }
    d.name = g["name"];
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-fa4e%04x-%04x-4000-8000-%012zx", static_cast<unsigned>(h & 0xffff),
                  static_cast<unsigned>((h >> 16) & 0xffff), i);
    d.uuid = g.contains("uuid") && g["uuid"].is_string() ? g["uuid"].get<std::string>() : uuid;
    if (g.contains("memoryBytes")) {
      if (!g["memoryBytes"].is_number_integer() || g["memoryBytes"].get<int64_t>() < 0) {
        return bad(at + ".memoryBytes", "must be a non-negative integer");
      }
      d.memory_bytes = g["memoryBytes"];
    }
    if (g.contains("numaNode") && g["numaNode"].is_number_integer()) d.numa_node = g["numaNode"];
    if (g.contains("nvlinks") && g["nvlinks"].is_number_integer()) d.nvlinks = g["nvlinks"];
    for (const GpuDevice& other : inv.gpus) {
      if (other.uuid == d.uuid) return bad(at + ".uuid", "\"" + d.uuid + "\" is used twice");
    }
    inv.gpus.push_back(std::move(d));
  }
  return inv;
}

}  // namespace

StatusOr<GpuInventory> FakeGpus(const std::string& what, const std::string& node_name) {
  if (what.find('/') != std::string::npos || (what.size() > 5 && what.compare(what.size() - 5, 5, ".json") == 0)) {
    return FakeGpusFromFile(what, node_name);
  }
  const size_t x = what.find('x');
  auto bad = [&](const std::string& why) {
    return InvalidArgument(
        "--fake-gpus: " + why + ", got \"" + what.substr(0, 64) + "\" (expected COUNTxTYPE, like 8xH100)", "fake-gpus");
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
    d.minor = i;
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

std::vector<GpuSample> FakeSamples(const GpuInventory& inventory, const std::vector<bool>& busy, int64_t now_ms) {
  std::vector<GpuSample> out;
  for (const GpuDevice& g : inventory.gpus) {
    GpuSample s;
    s.index = g.index;
    const bool working = g.index >= 0 && static_cast<size_t>(g.index) < busy.size() && busy[g.index];
    // A slow wave per GPU, so that series move as a real job's do.
    const double phase = std::sin(static_cast<double>(now_ms) / 20'000.0 + g.index);
    s.utilization = working ? 0.75 + 0.20 * phase : 0.0;
    const double memory = working ? 0.55 + 0.15 * phase : 0.01;
    s.memory_used_bytes = static_cast<int64_t>(static_cast<double>(g.memory_bytes) * memory);
    out.push_back(s);
  }
  return out;
}

}  // namespace muster::gpu
