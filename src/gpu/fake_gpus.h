// Fake GPUs for development and tests: `--fake-gpus 8xH100` gives a node
// eight GPUs named "NVIDIA H100" with stable UUIDs derived from the node
// name, so CUDA_VISIBLE_DEVICES and the scheduler's books look as they do
// on a real node. Nothing here touches a device.
#pragma once

#include <string>

#include "common/status.h"
#include "gpu/gpu.h"

namespace muster::gpu {

// Parses "COUNTxTYPE" ("8xH100", "4xA100"; count 1..64, type of
// [A-Za-z0-9._-]); errors name the flag and say what was expected.
StatusOr<GpuInventory> FakeGpus(const std::string& what, const std::string& node_name);

}  // namespace muster::gpu
