#include "gpu/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

// NVML's types, declared here so nothing of NVIDIA's is needed to build.
// Layouts match nvml.h (NVML 12 and 13); like nvml.h's, they are C's, at
// global scope: the function types of the library's symbols are these.
extern "C" {
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;  // percent
};
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId, computeInstanceId;
};
}  // extern "C"

namespace muster::gpu {

namespace nvml_abi {

constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kErrorTimeout = 10;
constexpr nvmlReturn_t kErrorGpuIsLost = 15;
constexpr unsigned long long kEventSingleBitEcc = 0x1;
constexpr unsigned long long kEventDoubleBitEcc = 0x2;
constexpr unsigned long long kEventXid = 0x8;
constexpr int kNvlinkDeviceTypeSwitch = 2;
constexpr unsigned kMaxProbeLinks = 64;  // 18 in NVML 12, 36 in 13: probe until INVALID_ARGUMENT

}  // namespace nvml_abi
using namespace nvml_abi;  // NOLINT(google-build-using-namespace): this file's own declarations

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*numa)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*minor)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*nvlink_remote_type)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*common_ancestor)(nvmlDevice_t, nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*supported_events)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;

  std::string Error(nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return (s ? std::string(s) : std::string("NVML error")) + " (" + std::to_string(r) + ")";
  }
};

StatusOr<std::unique_ptr<Nvml>> Nvml::Load(const std::string& path) {
  const std::string lib = path.empty() ? "libnvidia-ml.so.1" : path;
  void* h = ::dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    const char* err = ::dlerror();
    return FailedPrecondition("NVML unavailable: " + std::string(err ? err : lib + " cannot be loaded"));
  }
  std::unique_ptr<Nvml> n(new Nvml());
  n->handle_ = h;
  n->api_ = std::make_unique<Api>();
  Api& a = *n->api_;
  std::string missing;
  auto sym = [&](auto& fn, std::initializer_list<const char*> names, bool required) {
    for (const char* s : names) {
      if (void* p = ::dlsym(h, s)) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
        return;
      }
    }
    if (required) missing += (missing.empty() ? "" : ", ") + std::string(*names.begin());
  };
  sym(a.init, {"nvmlInit_v2", "nvmlInit"}, true);
  sym(a.shutdown, {"nvmlShutdown"}, true);
  sym(a.error_string, {"nvmlErrorString"}, false);
  sym(a.driver_version, {"nvmlSystemGetDriverVersion"}, false);
  sym(a.count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, true);
  sym(a.by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, true);
  sym(a.uuid, {"nvmlDeviceGetUUID"}, true);
  sym(a.name, {"nvmlDeviceGetName"}, true);
  sym(a.memory, {"nvmlDeviceGetMemoryInfo"}, true);
  sym(a.utilization, {"nvmlDeviceGetUtilizationRates"}, false);
  sym(a.pci, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}, false);
  sym(a.numa, {"nvmlDeviceGetNumaNodeId"}, false);
  sym(a.minor, {"nvmlDeviceGetMinorNumber"}, false);
  sym(a.nvlink_state, {"nvmlDeviceGetNvLinkState"}, false);
  sym(a.nvlink_remote_type, {"nvmlDeviceGetNvLinkRemoteDeviceType"}, false);
  sym(a.common_ancestor, {"nvmlDeviceGetTopologyCommonAncestor"}, false);
  sym(a.event_set_create, {"nvmlEventSetCreate"}, false);
  sym(a.supported_events, {"nvmlDeviceGetSupportedEventTypes"}, false);
  sym(a.register_events, {"nvmlDeviceRegisterEvents"}, false);
  sym(a.event_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}, false);
  sym(a.event_set_free, {"nvmlEventSetFree"}, false);
  if (!missing.empty()) {
    ::dlclose(h);
    n->handle_ = nullptr;
    return FailedPrecondition("NVML unavailable: " + lib + " lacks " + missing);
  }
  if (nvmlReturn_t r = a.init(); r != kSuccess) {
    const std::string err = a.Error(r);
    ::dlclose(h);
    n->handle_ = nullptr;
    return FailedPrecondition("NVML unavailable: nvmlInit failed: " + err);
  }
  return n;
}

Nvml::~Nvml() {
  if (!handle_) return;
  if (event_set_ && api_->event_set_free) api_->event_set_free(static_cast<nvmlEventSet_t>(event_set_));
  api_->shutdown();
  ::dlclose(handle_);
}

StatusOr<std::vector<GpuSample>> Nvml::Sample() {
  const Api& a = *api_;
  unsigned count = 0;
  if (nvmlReturn_t r = a.count(&count); r != kSuccess) return Internal("nvmlDeviceGetCount: " + a.Error(r));
  std::vector<GpuSample> out;
  for (unsigned i = 0; i < count; ++i) {
    GpuSample s;
    s.index = static_cast<int32_t>(i);
    nvmlDevice_t d = nullptr;
    if (a.by_index(i, &d) == kSuccess) {
      nvmlUtilization_t u{};
      if (a.utilization && a.utilization(d, &u) == kSuccess) s.utilization = std::min(u.gpu, 100u) / 100.0;
      nvmlMemory_t mem{};
      if (a.memory(d, &mem) == kSuccess) s.memory_used_bytes = static_cast<int64_t>(mem.used);
    }
    out.push_back(s);
  }
  return out;
}

StatusOr<GpuInventory> Nvml::Discover() {
  const Api& a = *api_;
  GpuInventory inv;
  inv.source = "nvml";
  char version[96] = {};
  if (a.driver_version && a.driver_version(version, sizeof version) == kSuccess) inv.driver_version = version;
  inv.note = "NVML, driver " + (inv.driver_version.empty() ? std::string("unknown") : inv.driver_version);
  unsigned count = 0;
  if (nvmlReturn_t r = a.count(&count); r != kSuccess) return Internal("nvmlDeviceGetCount: " + a.Error(r));
  std::vector<nvmlDevice_t> handles;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    if (nvmlReturn_t r = a.by_index(i, &d); r != kSuccess) {
      return Internal("nvmlDeviceGetHandleByIndex(" + std::to_string(i) + "): " + a.Error(r));
    }
    handles.push_back(d);
    GpuDevice g;
    g.index = static_cast<int32_t>(i);
    char buf[96] = {};
    if (nvmlReturn_t r = a.uuid(d, buf, sizeof buf); r != kSuccess) {
      return Internal("nvmlDeviceGetUUID(" + std::to_string(i) + "): " + a.Error(r));
    }
    g.uuid = buf;
    std::memset(buf, 0, sizeof buf);
    if (a.name(d, buf, sizeof buf) == kSuccess) g.name = buf;
    nvmlMemory_t mem{};
    if (a.memory(d, &mem) == kSuccess) g.memory_bytes = static_cast<int64_t>(mem.total);
    nvmlPciInfo_t pci{};
    if (a.pci && a.pci(d, &pci) == kSuccess) g.pci_bus_id = pci.busId;
    unsigned numa = 0;
    if (a.numa && a.numa(d, &numa) == kSuccess) g.numa_node = static_cast<int32_t>(numa);
    unsigned minor = 0;
    if (a.minor && a.minor(d, &minor) == kSuccess) g.minor = static_cast<int32_t>(minor);
    if (a.nvlink_state) {
      for (unsigned link = 0; link < kMaxProbeLinks; ++link) {
        int active = 0;
        const nvmlReturn_t r = a.nvlink_state(d, link, &active);
        if (r == 2 /* INVALID_ARGUMENT: past the last link */) break;
        if (r != kSuccess || !active) continue;
        ++g.nvlinks;
        int type = 0;
        if (a.nvlink_remote_type && a.nvlink_remote_type(d, link, &type) == kSuccess &&
            type == kNvlinkDeviceTypeSwitch) {
          g.nvswitch = true;
        }
      }
    }
    inv.gpus.push_back(std::move(g));
  }
  if (a.common_ancestor && count > 1) {
    inv.topology.assign(count, std::vector<int32_t>(count, 0));
    for (unsigned i = 0; i < count; ++i) {
      for (unsigned j = 0; j < count; ++j) {
        int level = 0;
        if (i != j && a.common_ancestor(handles[i], handles[j], &level) == kSuccess) inv.topology[i][j] = level;
      }
    }
  }
  return inv;
}

StatusOr<std::optional<GpuHealthEvent>> Nvml::WaitEvent(Duration timeout, int64_t now_ms) {
  const Api& a = *api_;
  if (!a.event_set_create || !a.register_events || !a.event_wait) {
    return FailedPrecondition("this NVML has no event API");
  }
  if (!events_registered_) {
    nvmlEventSet_t set = nullptr;
    if (nvmlReturn_t r = a.event_set_create(&set); r != kSuccess) return Internal("nvmlEventSetCreate: " + a.Error(r));
    event_set_ = set;
    unsigned count = 0;
    if (a.count(&count) == kSuccess) {
      for (unsigned i = 0; i < count; ++i) {
        nvmlDevice_t d = nullptr;
        if (a.by_index(i, &d) != kSuccess) continue;
        unsigned long long supported = kEventXid | kEventDoubleBitEcc | kEventSingleBitEcc;
        if (a.supported_events) a.supported_events(d, &supported);
        // NOT_SUPPORTED: a GPU too old for health events; it simply sends none.
        a.register_events(d, supported & (kEventXid | kEventDoubleBitEcc | kEventSingleBitEcc), set);
      }
    }
    events_registered_ = true;
  }
  nvmlEventData_t data{};
  const nvmlReturn_t r = a.event_wait(static_cast<nvmlEventSet_t>(event_set_), &data,
                                      static_cast<unsigned>(std::max<int64_t>(0, timeout.millis())));
  if (r == kErrorTimeout) return std::optional<GpuHealthEvent>();
  GpuHealthEvent e;
  e.time_ms = now_ms;
  if (r == kErrorGpuIsLost) {
    e.kind = "lost";
    e.xid = 79;
    return std::optional<GpuHealthEvent>(e);
  }
  if (r != kSuccess) return Internal("nvmlEventSetWait: " + a.Error(r));
  char buf[96] = {};
  if (data.device && a.uuid(data.device, buf, sizeof buf) == kSuccess) e.uuid = buf;
  if (data.eventType & kEventXid) {
    e.kind = "xid";
    e.xid = static_cast<int64_t>(data.eventData);
    e.fatal = !IsApplicationXid(e.xid);
  } else if (data.eventType & kEventDoubleBitEcc) {
    e.kind = "ecc-double-bit";
  } else {
    e.kind = "ecc-single-bit";
    e.fatal = false;
  }
  return std::optional<GpuHealthEvent>(e);
}

}  // namespace muster::gpu
