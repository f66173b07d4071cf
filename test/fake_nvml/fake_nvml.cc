// A fake libnvidia-ml.so.1 for tests on machines without a GPU. It exports
// the NVML entry points the agent uses, with the real names and ABI, so the
// agent's real NVML code path (src/gpu/nvml.cc) runs against it.
//
// Knobs (environment, read at nvmlInit_v2):
//   FAKE_NVML_GPUS=8                      GPU count (0..16)
//   FAKE_NVML_MODEL="NVIDIA H100 80GB HBM3"
//   FAKE_NVML_XID_FILE=/path              when this file exists and holds
//       "GPU_INDEX XID", the next nvmlEventSetWait_v2 returns that XID event
//       and deletes the file (how a test injects a fault mid-run)
// Topology: NVLink x18 to an NVSwitch per GPU; GPUs in the same half share a
// CPU (level 40, NODE), across halves 50 (SYSTEM).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

}  // extern "C"

namespace {

struct FakeGpu {
  int index;
};
FakeGpu g_gpus[16];
unsigned g_count = 0;
std::string g_model = "NVIDIA H100 80GB HBM3";
std::string g_xid_file;
int g_inits = 0;
int g_event_set = 0;

constexpr nvmlReturn_t kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kInsufficientSize = 7, kTimeout = 10;

int IndexOf(nvmlDevice_t d) {
  for (unsigned i = 0; i < g_count; ++i) {
    if (d == reinterpret_cast<nvmlDevice_t>(&g_gpus[i])) return static_cast<int>(i);
  }
  return -1;
}

nvmlReturn_t CopyString(const std::string& s, char* out, unsigned length) {
  if (!out) return kInvalidArgument;
  if (s.size() + 1 > length) return kInsufficientSize;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return kSuccess;
}

std::string Uuid(int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-00000000-fake-4e41-8000-%012d", i);
  return buf;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void) {
  const char* n = std::getenv("FAKE_NVML_GPUS");
  g_count = n ? static_cast<unsigned>(std::atoi(n)) : 8;
  if (g_count > 16) g_count = 16;
  for (unsigned i = 0; i < g_count; ++i) g_gpus[i].index = static_cast<int>(i);
  if (const char* m = std::getenv("FAKE_NVML_MODEL")) g_model = m;
  if (const char* f = std::getenv("FAKE_NVML_XID_FILE")) g_xid_file = f;
  ++g_inits;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void) {
  if (g_inits == 0) return kUninitialized;
  --g_inits;
  return kSuccess;
}
__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess:
      return "Success";
    case kInvalidArgument:
      return "Invalid Argument";
    case kTimeout:
      return "Timeout";
    default:
      return "Unknown Error";
  }
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* v, unsigned length) {
  return CopyString("999.99.99-fake", v, length);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  if (g_inits == 0) return kUninitialized;
  *count = g_count;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if (g_inits == 0) return kUninitialized;
  if (i >= g_count || !d) return kInvalidArgument;
  *d = reinterpret_cast<nvmlDevice_t>(&g_gpus[i]);
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* out, unsigned length) {
  const int i = IndexOf(d);
  return i < 0 ? kInvalidArgument : CopyString(Uuid(i), out, length);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* out, unsigned length) {
  return IndexOf(d) < 0 ? kInvalidArgument : CopyString(g_model, out, length);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  if (IndexOf(d) < 0 || !m) return kInvalidArgument;
  m->total = 85899345920ULL;    // 80 GiB
  m->used = m->total / 10 * 3;  // as if a job held some
  m->free = m->total - m->used;
  return kSuccess;
}
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
// Plausible and moving: each GPU between 40 and 90%, changing by the second.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d,
                                                                                  nvmlUtilization_t* u) {
  const int i = IndexOf(d);
  if (i < 0 || !u) return kInvalidArgument;
  const long seconds = static_cast<long>(std::time(nullptr));
  u->gpu = 40 + static_cast<unsigned>((seconds + 7 * i) % 51);
  u->memory = u->gpu / 2;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  const int i = IndexOf(d);
  if (i < 0 || !p) return kInvalidArgument;
  std::memset(p, 0, sizeof *p);
  p->bus = 0x18 + static_cast<unsigned>(i);
  std::snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
  std::snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t d, unsigned* node) {
  const int i = IndexOf(d);
  if (i < 0) return kInvalidArgument;
  *node = static_cast<unsigned>(i) < g_count / 2 ? 0 : 1;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned* minor) {
  const int i = IndexOf(d);
  if (i < 0 || !minor) return kInvalidArgument;
  *minor = static_cast<unsigned>(i);
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link,
                                                                             int* active) {
  if (IndexOf(d) < 0 || link >= 18) return kInvalidArgument;
  *active = 1;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned link,
                                                                                        int* type) {
  if (IndexOf(d) < 0 || link >= 18) return kInvalidArgument;
  *type = 2;  // NVSwitch
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
                                                                                        int* level) {
  const int i = IndexOf(a), j = IndexOf(b);
  if (i < 0 || j < 0) return kInvalidArgument;
  const unsigned half = g_count / 2;
  *level = (static_cast<unsigned>(i) < half) == (static_cast<unsigned>(j) < half) ? 40 : 50;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = reinterpret_cast<nvmlEventSet_t>(&g_event_set);
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d,
                                                                                     unsigned long long* types) {
  *types = 0x1 | 0x2 | 0x8;
  return IndexOf(d) < 0 ? kInvalidArgument : kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long,
                                                                             nvmlEventSet_t) {
  return IndexOf(d) < 0 ? kInvalidArgument : kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t, nvmlEventData_t* data,
                                                                        unsigned timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  do {
    if (!g_xid_file.empty()) {
      if (FILE* f = std::fopen(g_xid_file.c_str(), "r")) {
        int gpu = 0;
        unsigned long long xid = 0;
        const int got = std::fscanf(f, "%d %llu", &gpu, &xid);
        std::fclose(f);
        std::remove(g_xid_file.c_str());
        if (got == 2 && gpu >= 0 && static_cast<unsigned>(gpu) < g_count) {
          std::memset(data, 0, sizeof *data);
          data->device = reinterpret_cast<nvmlDevice_t>(&g_gpus[gpu]);
          data->eventType = 0x8;
          data->eventData = xid;
          data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
          return kSuccess;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  return kTimeout;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t) { return kSuccess; }

}  // extern "C"
