// Fake GPUs for development and tests: `--fake-gpus 8xH100` gives a node
// eight GPUs named "NVIDIA H100" with stable UUIDs derived from the node
// name, so CUDA_VISIBLE_DEVICES and the scheduler's books look as they do
// on a real node. `--fake-gpus gpus.json` reads them from a file instead:
//   {"gpus": [{"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-...",
//              "memoryBytes": 85899345920, "numaNode": 0, "nvlinks": 12}, ...]}
// (every key but name optional). Nothing here touches a device.
#pragma once

#include <string>

#include "common/status.h"
#include "gpu/gpu.h"

namespace muster::gpu {

// Parses "COUNTxTYPE" ("8xH100", "4xA100"; count 1..64, type of
// [A-Za-z0-9._-]), or reads a file (a value with '/' or ending in .json);
// errors name the flag (and the file's field) and say what was expected.
StatusOr<GpuInventory> FakeGpus(const std::string& what, const std::string& node_name);

}  // namespace muster::gpu
