// What an agent knows about its node's GPUs, wherever it learned it: NVML
// (gpu/nvml.h), a fake inventory for development and tests
// (gpu/fake_gpus.h), or nothing.
//
// GPUs are identified by UUID ("GPU-..."), never by index: NVML's index is
// PCI bus order, CUDA's default order differs, so jobs get UUIDs in
// CUDA_VISIBLE_DEVICES. The index here is the position the scheduler uses
// (device ids 0..N-1 of the node).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace muster::gpu {

struct GpuDevice {
  int32_t index = 0;
  std::string uuid;
  std::string name;        // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;  // "00000000:18:00.0"
  int64_t memory_bytes = 0;
  int32_t numa_node = -1;  // -1: unknown
  int32_t nvlinks = 0;     // active NVLink links
  int32_t minor = -1;      // its device file's minor number (/dev/nvidiaN); -1: unknown
  std::string device;      // a fake GPU's stand-in device file (containers get it); "" for real ones
  bool nvswitch = false;   // links go to an NVSwitch: all GPUs on the board are all-to-all
  bool healthy = true;
  std::string health;  // why not healthy: "XID 79"
};

// What one GPU is doing now: NVML's sample, or a fake's.
struct GpuSample {
  int32_t index = 0;
  double utilization = -1;         // 0..1 of the last sample period; -1: unknown
  int64_t memory_used_bytes = -1;  // -1: unknown
};

// An XID or ECC event of one GPU.
struct GpuHealthEvent {
  std::string uuid;
  int64_t xid = 0;    // 0 for ECC events
  std::string kind;   // "xid", "ecc-double-bit", "ecc-single-bit", "lost"
  bool fatal = true;  // hardware-fatal (the GPU should not get work)
  int64_t time_ms = 0;
};

struct GpuInventory {
  std::string source;  // "nvml", "fake" or "none"
  std::string note;    // "NVML 12.550.54.15", or why NVML is unavailable
  std::string driver_version;
  std::vector<GpuDevice> gpus;
  // Topology common-ancestor levels between GPU pairs, NVML's scale
  // (0 same board, 10/20 PCIe switch, 30 host bridge, 40 same CPU, 50 across
  // CPUs); empty when unknown. levels[i][j] for GPU indices i, j.
  std::vector<std::vector<int32_t>> topology;

  // The scheduler's GPU type for these GPUs: the model of GPU 0 reduced to
  // its family ("NVIDIA H100 80GB HBM3" -> "H100"); empty without GPUs.
  std::string GpuType() const;
};

// "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA A100-SXM4-80GB" -> "A100",
// "NVIDIA GeForce RTX 4090" -> "RTX4090", "Tesla V100-PCIE-16GB" -> "V100".
std::string GpuTypeFromName(const std::string& name);

// XIDs that NVIDIA documents as application errors (a bad kernel, not bad
// hardware): they are reported but do not take the GPU out of service.
bool IsApplicationXid(int64_t xid);

}  // namespace muster::gpu
