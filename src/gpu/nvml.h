// NVML, loaded at run time: GPU discovery and health events with no
// build-time NVIDIA dependency.
//
// Load() dlopens "libnvidia-ml.so.1" (or a given path) and resolves the
// entry points it needs by their versioned names (nvmlInit_v2,
// nvmlDeviceGetCount_v2, ...): the header's unversioned names are macros a
// dlopen client cannot use. Missing optional entry points (NVLink, topology,
// NUMA, events) mean "not supported", never an error; a missing required one
// (init, count, handle, UUID, name, memory) fails Load() saying which.
//
// Discover() enumerates the GPUs (UUID, name, PCI bus id, memory, NUMA node,
// active NVLinks and whether they lead to an NVSwitch) and the topology
// matrix. WaitEvent() blocks up to `timeout` for one XID or ECC event on any
// GPU (registered on first use); call it from a dedicated thread.
//
// CI runs all of this against a fake libnvidia-ml.so.1 built from
// test/fake_nvml (GPU count, model, XIDs injected through a file), and the
// same binary against the real library on a GPU machine.
//
// Thread-safety: NVML is thread-safe; Discover() and WaitEvent() may run on
// different threads.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "common/time.h"
#include "gpu/gpu.h"

namespace muster::gpu {

class Nvml {
 public:
  // Loads and initializes NVML. `path` empty: "libnvidia-ml.so.1" from the
  // loader's search path. FailedPrecondition carries dlerror()'s words or
  // NVML's error string.
  static StatusOr<std::unique_ptr<Nvml>> Load(const std::string& path = "");
  ~Nvml();  // nvmlShutdown, dlclose

  StatusOr<GpuInventory> Discover();
  // Each GPU's utilization over NVML's last sample period and its memory
  // in use (unknown where the driver does not say).
  StatusOr<std::vector<GpuSample>> Sample();
  // One health event, or nullopt after `timeout` without one. Errors when
  // events are not supported.
  StatusOr<std::optional<GpuHealthEvent>> WaitEvent(Duration timeout, int64_t now_ms);

  struct Api;  // the resolved entry points (nvml.cc)

 private:
  Nvml() = default;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  void* event_set_ = nullptr;
  bool events_registered_ = false;
};

}  // namespace muster::gpu
