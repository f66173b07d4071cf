// Fake GPUs for development and tests: `--fake-gpus 8xH100` gives a node
// eight GPUs named "NVIDIA H100" with stable UUIDs derived from the node
// name, so CUDA_VISIBLE_DEVICES and the scheduler's books look as they do
// on a real node. `--fake-gpus gpus.json` reads them from a file instead:
//   {"gpus": [{"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-...",
//              "memoryBytes": 85899345920, "numaNode": 0, "nvlinks": 12,
//              "minor": 0, "device": "/tmp/fake/nvidia0"}, ...]}
// (every key but name optional; "device": a device file that stands in for
// the GPU in container jobs). Nothing here touches a device.
#pragma once

#include <string>

#include "common/status.h"
#include "gpu/gpu.h"

namespace muster::gpu {

// Parses "COUNTxTYPE" ("8xH100", "4xA100"; count 1..64, type of
// [A-Za-z0-9._-]), or reads a file (a value with '/' or ending in .json);
// errors name the flag (and the file's field) and say what was expected.
StatusOr<GpuInventory> FakeGpus(const std::string& what, const std::string& node_name);

// Plausible samples for fake GPUs: a busy one (in `busy`) works at 55 to
// 95% and holds 40 to 70% of its memory, varying with the time; an idle
// one is at 0% with a little memory (the driver's own).
std::vector<GpuSample> FakeSamples(const GpuInventory& inventory, const std::vector<bool>& busy, int64_t now_ms);

}  // namespace muster::gpu
