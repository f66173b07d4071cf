#include "agent/container_support.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace muster::agent {
namespace {

namespace fs = std::filesystem;

// A directory with a stand-in `podman`: a script that answers `version` as
// Podman 4.3.1 does when its default OCI runtime (crun) is missing, unless
// it is told `--runtime runc`; and an empty CDI directory.
class ContainerSupportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/muster-ctr-support-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    podman_ = dir_ + "/podman";
    std::ofstream(podman_) << "#!/bin/sh\n"
                              "case \" $* \" in *' --runtime runc '*) echo 4.3.1; exit 0 ;; esac\n"
                              "echo 'Error: default OCI runtime \"crun\" not found: invalid argument' >&2; exit 125\n";
    ::chmod(podman_.c_str(), 0755);
    cdi_ = dir_ + "/cdi";
    fs::create_directories(cdi_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  gpu::GpuInventory RealGpus() const {
    gpu::GpuInventory inv;
    inv.source = "nvml";
    gpu::GpuDevice g;
    g.uuid = "GPU-fc9e41ea-1253-3736-9b09-b2acc1890181";
    g.minor = 0;
    inv.gpus = {g};
    return inv;
  }

  std::string dir_, podman_, cdi_;
};

TEST_F(ContainerSupportTest, AsksPodmanWithTheRuntimeTheAgentWillUse) {
  // A node with runc but no crun: Podman's default runtime is missing, and
  // only the agent's --container-runtime makes it run (seen on a real GPU
  // node, where the agent had said "Podman does not run").
  const ContainerSupport without = DetectContainers(podman_, "", "", gpu::GpuInventory{}, {cdi_});
  EXPECT_FALSE(without.available);
  EXPECT_NE(without.note.find("default OCI runtime \"crun\" not found"), std::string::npos) << without.note;

  const ContainerSupport with = DetectContainers(podman_, "", "runc", gpu::GpuInventory{}, {cdi_});
  EXPECT_TRUE(with.available) << with.note;
  EXPECT_EQ(with.version, "4.3.1");
  EXPECT_EQ(with.Features(), std::vector<std::string>{"containers"});
}

TEST_F(ContainerSupportTest, RealGpusNeedACdiSpecForThem) {
  // Without a spec the agent runs nvidia-ctk, which writes the system's
  // /var/run/cdi: only where there is none.
  if (std::system("command -v nvidia-ctk >/dev/null 2>&1") != 0) {
    const ContainerSupport none = DetectContainers(podman_, "", "runc", RealGpus(), {cdi_});
    EXPECT_TRUE(none.available);
    EXPECT_FALSE(none.gpus);
    EXPECT_NE(none.note.find("nvidia-ctk"), std::string::npos) << none.note;
  }
  std::ofstream(cdi_ + "/nvidia.yaml") << "cdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ndevices:\n"
                                          "- name: GPU-fc9e41ea-1253-3736-9b09-b2acc1890181\n";
  const ContainerSupport s = DetectContainers(podman_, "", "runc", RealGpus(), {cdi_});
  EXPECT_TRUE(s.gpus && s.cdi && s.cdi_uuid_names) << s.note;
  EXPECT_EQ(ContainerGpuDevices(s, RealGpus(), {0}),
            std::vector<std::string>{"nvidia.com/gpu=GPU-fc9e41ea-1253-3736-9b09-b2acc1890181"});
}

TEST_F(ContainerSupportTest, FakeGpusNeedDeviceFiles) {
  gpu::GpuInventory inv;
  inv.source = "fake";
  inv.gpus.resize(1);
  ContainerSupport s = DetectContainers(podman_, "", "runc", inv, {cdi_});
  EXPECT_FALSE(s.gpus);
  EXPECT_NE(s.note.find("no \"device\" file"), std::string::npos) << s.note;
  inv.gpus[0].device = dir_ + "/fake-gpu0";
  s = DetectContainers(podman_, "", "runc", inv, {cdi_});
  EXPECT_TRUE(s.gpus) << s.note;
}

TEST_F(ContainerSupportTest, NoneTurnsContainersOff) {
  const ContainerSupport s = DetectContainers("none", "", "runc", gpu::GpuInventory{}, {cdi_});
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.note.find("--podman none"), std::string::npos);
}

}  // namespace
}  // namespace muster::agent
