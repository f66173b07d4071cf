// The v2 device program on this machine's cgroup2 hierarchy (the unified
// one of a hybrid machine, or the only one): a process in the group cannot
// open a denied device, whatever its path, and can open the others. Device
// nodes of NVIDIA's major are made here (no GPU or driver is needed:
// opening one without a driver fails with ENXIO, past the cgroup check;
// a denied one fails before, with EPERM).
#include "agent/device_filter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace muster::agent {
namespace {

std::string Cgroup2Mount() {
  std::ifstream in("/proc/self/mounts");
  std::string dev, mount, type, rest;
  while (in >> dev >> mount >> type && std::getline(in, rest)) {
    if (type == "cgroup2") return mount;
  }
  return "";
}

TEST(DeviceFilter, V1LinesDenyEachDevice) {
  EXPECT_EQ(DevicesDenyLines({{195, 0}, {195, 7}}), (std::vector<std::string>{"c 195:0 rwm", "c 195:7 rwm"}));
}

TEST(DeviceFilter, V2ProgramDeniesExactlyTheListedDevices) {
  const std::string root = Cgroup2Mount();
  if (::geteuid() != 0 || root.empty()) GTEST_SKIP() << "needs root and a cgroup2 hierarchy";
  const std::string dir = ::testing::TempDir() + "/devfilter_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  for (int minor : {3, 4, 5}) {
    const std::string node = dir + "/nvidia" + std::to_string(minor);
    ::unlink(node.c_str());
    ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(kNvidiaMajor, minor)), 0) << std::strerror(errno);
  }
  const std::string group = root + "/muster-devfilter-test-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(group.c_str(), 0755), 0) << group << ": " << std::strerror(errno);
  const Status attached = AttachDeviceFilter(group, {{kNvidiaMajor, 3}, {kNvidiaMajor, 5}});
  if (!attached.ok() && attached.message().find("Operation not permitted") != std::string::npos) {
    ::rmdir(group.c_str());
    GTEST_SKIP() << attached.message();
  }
  ASSERT_TRUE(attached.ok()) << attached.ToString();
  // A child joins the group and reports each open's errno.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    std::ofstream(group + "/cgroup.procs") << ::getpid();
    int errs[3];
    for (int i = 0; i < 3; ++i) {
      const int fd = ::open((dir + "/nvidia" + std::to_string(3 + i)).c_str(), O_RDWR);
      errs[i] = fd >= 0 ? 0 : errno;
      if (fd >= 0) ::close(fd);
    }
    (void)!::write(fds[1], errs, sizeof errs);
    ::_exit(0);
  }
  int errs[3] = {-1, -1, -1};
  ASSERT_EQ(::read(fds[0], errs, sizeof errs), static_cast<ssize_t>(sizeof errs));
  ::waitpid(child, nullptr, 0);
  ::rmdir(group.c_str());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(errs[0], EPERM) << "195:3 is denied";
  EXPECT_NE(errs[1], EPERM) << "195:4 is not: the open reaches the (absent) driver";
  EXPECT_EQ(errs[2], EPERM) << "195:5 is denied";
}

}  // namespace
}  // namespace muster::agent
