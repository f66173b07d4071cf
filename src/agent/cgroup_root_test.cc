// Where an agent puts its task groups (agent/cgroup.h ResolveCgroupRoot):
// a path, or "self" below the group systemd delegates to it, on v1 and v2.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "agent/cgroup.h"

namespace muster::agent {
namespace {

namespace fs = std::filesystem;

struct Files {
  std::string dir = (fs::temp_directory_path() / ("cgroup-root-" + std::to_string(::getpid()))).string();
  Files() { fs::create_directories(dir); }
  ~Files() { fs::remove_all(dir); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  }
};

TEST(CgroupRoot, APathIsUsedAsGivenWithoutItsSlashes) {
  auto root = ResolveCgroupRoot("/batch/muster/");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(*root, "batch/muster");
  for (const char* bad : {"", "/", "a/../b", "a//b", "./a"}) {
    auto refused = ResolveCgroupRoot(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().field(), "cgroup-root") << bad;
  }
}

TEST(CgroupRoot, SelfOnV1IsBelowTheMemoryHierarchysOwnGroup) {
  Files f;
  const std::string mounts = f.Write("mounts",
                                     "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
                                     "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n");
  const std::string self = f.Write("cgroup",
                                   "5:cpu,cpuacct:/system.slice/muster-agent.service\n"
                                   "4:memory:/system.slice/muster-agent.service\n0::/\n");
  auto root = ResolveCgroupRoot("self", self, mounts);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(*root, "system.slice/muster-agent.service/jobs");
}

TEST(CgroupRoot, SelfInTheRootGroupSaysToStartItFromTheUnit) {
  Files f;
  fs::create_directories(f.dir + "/unified");
  f.Write("unified/cgroup.controllers", "cpu memory pids\n");
  const std::string mounts = f.Write("mounts", "cgroup2 " + f.dir + "/unified cgroup2 rw 0 0\n");
  const std::string self = f.Write("cgroup", "0::/\n");
  auto root = ResolveCgroupRoot("self", self, mounts);
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.status().message().find("Delegate=yes"), std::string::npos) << root.status().ToString();
}

// The real thing on this machine's cgroup v2 hierarchy: a child put in a
// group of its own (as systemd starts a unit's process) resolves "self",
// and ends up in <group>/agent, leaving <group> free to hand controllers
// down to <group>/jobs.
TEST(CgroupRoot, SelfOnV2MovesTheAgentIntoAGroupOfItsOwn) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for cgroups";
  std::string unified;
  {
    std::ifstream in("/proc/self/mounts");
    std::string dev, mount, type, rest;
    while (in >> dev >> mount >> type && std::getline(in, rest)) {
      if (type == "cgroup2") unified = mount;
    }
  }
  if (unified.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
  Files f;
  // Only the v2 hierarchy, so v2 is what "self" resolves on, as on a v2 node.
  const std::string mounts = f.Write("mounts", "cgroup2 " + unified + " cgroup2 rw 0 0\n");
  const std::string unit = "muster-self-test-" + std::to_string(::getpid());
  const std::string unit_dir = unified + "/" + unit;
  fs::create_directories(unit_dir);
  const std::string result = f.dir + "/result";
  const pid_t child = ::fork();
  if (child == 0) {
    std::ofstream(unit_dir + "/cgroup.procs") << ::getpid();
    auto root = ResolveCgroupRoot("self", "/proc/self/cgroup", mounts);
    std::ifstream in("/proc/self/cgroup");
    std::stringstream now;
    now << in.rdbuf();
    std::ofstream(result) << (root.ok() ? *root : "error: " + root.status().ToString()) << "\n" << now.str();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  std::ifstream in(result);
  std::string root, line, groups;
  std::getline(in, root);
  while (std::getline(in, line)) groups += line + "\n";
  ::rmdir((unit_dir + "/agent").c_str());
  ::rmdir(unit_dir.c_str());
  EXPECT_EQ(root, unit + "/jobs");
  EXPECT_NE(groups.find("0::/" + unit + "/agent\n"), std::string::npos) << groups;
}

}  // namespace
}  // namespace muster::agent
