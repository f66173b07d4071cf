// NVML discovery and health events through the real dlopen code path,
// against the fake libnvidia-ml.so.1 built from test/fake_nvml; fake GPUs.
#include "gpu/nvml.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <gtest/gtest.h>

#include "gpu/fake_gpus.h"

namespace muster::gpu {
namespace {

TEST(Nvml, WithoutTheLibraryItSaysSo) {
  auto n = Nvml::Load("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("NVML unavailable"), std::string::npos) << n.status().message();
}

TEST(Nvml, DiscoversTheFakeLibrarysGpus) {
  setenv("FAKE_NVML_GPUS", "4", 1);
  setenv("FAKE_NVML_MODEL", "NVIDIA A100-SXM4-80GB", 1);
  auto n = Nvml::Load(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  auto inv = (*n)->Discover();
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  EXPECT_EQ(inv->source, "nvml");
  EXPECT_EQ(inv->driver_version, "999.99.99-fake");
  ASSERT_EQ(inv->gpus.size(), 4u);
  EXPECT_EQ(inv->GpuType(), "A100");
  for (int i = 0; i < 4; ++i) {
    const GpuDevice& g = inv->gpus[i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.uuid.rfind("GPU-", 0), 0u) << g.uuid;
    EXPECT_EQ(g.memory_bytes, 80LL << 30);
    EXPECT_EQ(g.nvlinks, 18);
    EXPECT_TRUE(g.nvswitch);
    EXPECT_EQ(g.numa_node, i < 2 ? 0 : 1);
  }
  EXPECT_NE(inv->gpus[0].uuid, inv->gpus[1].uuid);
  EXPECT_EQ(inv->gpus[1].pci_bus_id, "00000000:19:00.0");
  ASSERT_EQ(inv->topology.size(), 4u);
  EXPECT_EQ(inv->topology[0][1], 40);
  EXPECT_EQ(inv->topology[0][3], 50);
  // Samples: utilization and memory in use, as the fake library makes them.
  auto samples = (*n)->Sample();
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 4u);
  for (const GpuSample& s : *samples) {
    EXPECT_GE(s.utilization, 0.4);
    EXPECT_LE(s.utilization, 0.9);
    EXPECT_EQ(s.memory_used_bytes, (80LL << 30) / 10 * 3);
  }
}

TEST(FakeGpus, SamplesArePlausible) {
  auto inv = FakeGpus("4xH100", "n1");
  ASSERT_TRUE(inv.ok());
  for (int64_t t : {0, 7'000, 60'000, 3'600'000}) {
    const std::vector<GpuSample> s = FakeSamples(*inv, {true, false, true}, t);
    ASSERT_EQ(s.size(), 4u);
    for (int i : {0, 2}) {
      EXPECT_GE(s[i].utilization, 0.55);
      EXPECT_LE(s[i].utilization, 0.95);
      EXPECT_GT(s[i].memory_used_bytes, inv->gpus[i].memory_bytes * 2 / 5 - 1);
    }
    for (int i : {1, 3}) EXPECT_EQ(s[i].utilization, 0);
  }
}

TEST(Nvml, AnInjectedXidArrivesAsAHealthEvent) {
  const std::string file = ::testing::TempDir() + "/xid_" + std::to_string(getpid());
  setenv("FAKE_NVML_GPUS", "8", 1);
  setenv("FAKE_NVML_XID_FILE", file.c_str(), 1);
  auto n = Nvml::Load(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  auto inv = (*n)->Discover();
  ASSERT_TRUE(inv.ok());
  auto none = (*n)->WaitEvent(Duration::Millis(50), 1);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  std::ofstream(file) << "3 79\n";
  auto ev = (*n)->WaitEvent(Duration::Seconds(5), 1234);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  ASSERT_TRUE(ev->has_value());
  EXPECT_EQ((*ev)->uuid, inv->gpus[3].uuid);
  EXPECT_EQ((*ev)->xid, 79);
  EXPECT_EQ((*ev)->kind, "xid");
  EXPECT_TRUE((*ev)->fatal);
  EXPECT_EQ((*ev)->time_ms, 1234);
  unsetenv("FAKE_NVML_XID_FILE");
}

TEST(GpuType, ReducesModelNamesToFamilies) {
  EXPECT_EQ(GpuTypeFromName("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(GpuTypeFromName("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(GpuTypeFromName("NVIDIA GeForce RTX 4090"), "RTX4090");
  EXPECT_EQ(GpuTypeFromName("Tesla V100-PCIE-16GB"), "V100");
  EXPECT_EQ(GpuTypeFromName("NVIDIA H200"), "H200");
  EXPECT_EQ(GpuTypeFromName(""), "");
}

TEST(FakeGpus, ParsesCountAndType) {
  auto inv = FakeGpus("8xH100", "node-1");
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->gpus.size(), 8u);
  EXPECT_EQ(inv->GpuType(), "H100");
  EXPECT_NE(inv->gpus[0].uuid, inv->gpus[7].uuid);
  EXPECT_NE(FakeGpus("8xH100", "node-2")->gpus[0].uuid, inv->gpus[0].uuid);
  EXPECT_EQ(FakeGpus("8xH100", "node-1")->gpus[5].uuid, inv->gpus[5].uuid);  // stable
  for (const char* bad : {"", "x", "8x", "xH100", "0xH100", "65xH100", "eightxH100", "8xH 100"}) {
    auto r = FakeGpus(bad, "n");
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("--fake-gpus"), std::string::npos);
    }
  }
}

TEST(FakeGpus, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "/gpus_" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << R"({"gpus": [{"name": "NVIDIA A100-SXM4-80GB", "memoryBytes": 85899345920, "nvlinks": 12},
                                     {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-given"}]})";
  auto inv = FakeGpus(path, "n");
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->GpuType(), "A100");
  EXPECT_EQ(inv->gpus[0].memory_bytes, 85899345920);
  EXPECT_EQ(inv->gpus[0].nvlinks, 12);
  EXPECT_EQ(inv->gpus[1].uuid, "GPU-given");
  std::ofstream(path) << R"({"gpus": [{"memoryBytes": 1}]})";
  auto bad = FakeGpus(path, "n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gpus[0].name"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(FakeGpus("/nonexistent/gpus.json", "n").ok());
}

}  // namespace
}  // namespace muster::gpu
